#include "api/text/config_diff.h"

#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace tidegate::text {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

v1::Config Parse(const std::string& text) {
  v1::Config config;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &config)) << text;
  return config;
}

const char kBefore[] = R"pb(
  clusters { name: "a" kind: CLUSTER_KIND_SIMULATED capacity { key: "gpu" value: 64 } }
  teams { name: "research" quota { key: "gpu" value { guaranteed: 16 } } }
  teams {
    name: "serving"
    quota { key: "gpu" value { guaranteed: 8 borrow_limit: 0 } }
  }
  teams { name: "training" preemption { reclaim: RECLAIM_ANY } }
  teams { name: "old" }
  policy { tick_s: 10 }
)pb";

TEST(ConfigDiffTest, OneLinePerChangedValueInTheConfigFilesWords) {
  const v1::Config after = Parse(R"pb(
    clusters { name: "a" kind: CLUSTER_KIND_SIMULATED capacity { key: "gpu" value: 80 } }
    teams { name: "research" quota { key: "gpu" value { guaranteed: 8 } } }
    teams { name: "serving" quota { key: "gpu" value { guaranteed: 8 } } }
    teams { name: "training" preemption { reclaim: RECLAIM_NEVER } }
    teams {
      name: "inference"
      parent: "serving"
      quota { key: "gpu" value { guaranteed: 8 } }
    }
    policy { tick_s: 5 }
  )pb");
  EXPECT_THAT(ConfigDiff(Parse(kBefore), after),
              ElementsAre("cluster a capacity gpu 64 -> 80",
                          "research gpu guaranteed 16 -> 8",
                          "serving gpu borrow_limit 0 -> unset",
                          "training preemption reclaim any -> never",
                          "+ team inference (gpu guaranteed 8; parent \"serving\")",
                          "- team old",
                          "policy tick_s 10 -> 5"));
}

TEST(ConfigDiffTest, TeamsAndClustersAreMatchedByNameSoAReorderedFileHasNoChanges) {
  v1::Config reordered = Parse(kBefore);
  reordered.mutable_teams()->SwapElements(0, 3);
  reordered.mutable_teams()->SwapElements(1, 2);
  EXPECT_THAT(ConfigDiff(Parse(kBefore), reordered), IsEmpty());
}

}  // namespace
}  // namespace tidegate::text
