// The command line's contract, driven in-process: exit codes and streams.
#include "cli/app.h"

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "cli/exit_codes.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tidegate::cli {
namespace {

using ::testing::HasSubstr;

struct Ran {
  int code;
  std::string out;
  std::string err;
};

Ran Tidegate(std::vector<std::string> args) {
  args.insert(args.begin(), "tidegate");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  Io io{&out, &err, false};
  const int code = RunTidegate(static_cast<int>(argv.size()), argv.data(), io);
  return Ran{code, out.str(), err.str()};
}

std::string Fixture(const std::string& name) {
  const char* src = std::getenv("TIDEGATE_SOURCE_DIR");
  return std::string(src ? src : ".") + "/tests/sim/" + name;
}

TEST(AppTest, VersionExitsZero) {
  Ran r = Tidegate({"--version"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_THAT(r.out, HasSubstr("tidegate "));
}

TEST(AppTest, HelpDocumentsExitCodes) {
  Ran r = Tidegate({"--help"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_THAT(r.out, HasSubstr("Exit codes:"));
  EXPECT_THAT(r.out, HasSubstr("simulate"));
}

TEST(AppTest, NoSubcommandIsBadInput) {
  EXPECT_EQ(Tidegate({}).code, kExitBadInput);
}

TEST(AppTest, UnknownFlagIsBadInput) {
  Ran r = Tidegate({"simulate", "--nope", Fixture("small-trace.yaml")});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("--nope"));
}

TEST(AppTest, MalformedScenarioIsBadInputWithFileAndLine) {
  Ran r = Tidegate({"simulate", Fixture("malformed.yaml")});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, ::testing::ContainsRegex("malformed\\.yaml:[0-9]+:"));
  EXPECT_EQ(r.out, "");
}

TEST(AppTest, CheckReportsFailuresOnStderrAndExitsOne) {
  Ran r = Tidegate({"simulate", "--check", Fixture("failing-expectation.yaml")});
  EXPECT_EQ(r.code, kExitCheckFailed);
  EXPECT_THAT(r.err, HasSubstr("at 10: r2: expected state admitted, got queued"));
  EXPECT_THAT(r.err, HasSubstr("expectations: 1 passed, 1 failed"));
  EXPECT_THAT(r.out, HasSubstr(R"({"type":"summary")"));  // stdout stays JSON lines.
}

TEST(AppTest, PassingCheckExitsZero) {
  Ran r = Tidegate({"simulate", "--check", Fixture("run-and-grace.yaml")});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.err, HasSubstr("expectations: 10 passed, 0 failed"));
}

TEST(AppTest, ProgressGoesToStderrWhenAskedFor) {
  Ran r = Tidegate({"simulate", "--progress", Fixture("run-and-grace.yaml")});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_THAT(r.err, HasSubstr("100% of simulated time"));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("simulated time")));
}

}  // namespace
}  // namespace tidegate::cli
