#include "cli/config_command.h"

#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tidegate::cli {
namespace {

const char kConfig[] = R"(clusters:
  - name: a
    capacity: {gpu: 64}
teams:
  - name: ml
    quota: {gpu: {guaranteed: 40}}
  - name: research
    parent: ml
    quota: {gpu: {guaranteed: 50}}
policy:
  tick_s: 10
)";

class LocateConfigErrorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(api::LoadYamlString(kConfig, "t.yaml", &config_, &where_).ok());
  }
  v1::Config config_;
  api::SourceMap where_;
};

TEST_F(LocateConfigErrorTest, ATeamNamedInTheMessagePointsAtItsEntry) {
  EXPECT_EQ(LocateConfigError("team 'research': children's guarantees exceed", config_, where_),
            "t.yaml:7: team 'research': children's guarantees exceed");
}

TEST_F(LocateConfigErrorTest, AFieldPathPointsAtItsLineOrItsParent) {
  EXPECT_EQ(LocateConfigError("policy.tick_s: -1 must be >= 0", config_, where_),
            "t.yaml:11: policy.tick_s: -1 must be >= 0");
  EXPECT_EQ(LocateConfigError("policy.tide_lead_s: bad", config_, where_),
            "t.yaml:10: policy.tide_lead_s: bad");
  EXPECT_EQ(LocateConfigError("clusters: duplicate cluster name 'a'", config_, where_),
            "t.yaml:1: clusters: duplicate cluster name 'a'");
}

TEST_F(LocateConfigErrorTest, OtherwiseOnlyTheFile) {
  EXPECT_EQ(LocateConfigError("team 'nope': parent 'x' is not a team", config_, where_),
            "t.yaml: team 'nope': parent 'x' is not a team");
  EXPECT_EQ(LocateConfigError("config names 9 resources; at most 8", config_, where_),
            "t.yaml: config names 9 resources; at most 8");
}

TEST(PrintApplyResultTest, DiffThenSummaryWarningsOnStderr) {
  v1::ApplyConfigResponse r;
  r.add_diff("teams.research.quota.gpu.guaranteed: 16 -> 20");
  r.add_diff("teams.serving: removed");
  r.add_warnings("serving has 2 running jobs");
  r.set_applied(true);
  std::ostringstream out, err;
  PrintApplyResult(r, false, out, err);
  EXPECT_EQ(out.str(),
            "teams.research.quota.gpu.guaranteed: 16 -> 20\n"
            "teams.serving: removed\n"
            "applied 2 changes\n");
  EXPECT_EQ(err.str(), "tidegate: warning: serving has 2 running jobs\n");

  r.set_applied(false);
  out.str("");
  PrintApplyResult(r, true, out, err);
  EXPECT_THAT(out.str(), ::testing::EndsWith("dry run: 2 changes, nothing applied\n"));

  out.str("");
  PrintApplyResult(v1::ApplyConfigResponse(), false, out, err);
  EXPECT_EQ(out.str(), "no changes\n");
}

}  // namespace
}  // namespace tidegate::cli
