// Config validation and the derived quantities of docs/policy.md §1 and §5.
#include "broker/core/config.h"

#include <string>

#include "absl/status/status.h"
#include "broker/core/broker.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "tidegate/internal/v1/journal.pb.h"

namespace tidegate::core {
namespace {

using ::testing::HasSubstr;

v1::Config Parse(const std::string& text) {
  v1::Config c;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &c)) << text;
  return c;
}

const std::string kOneCluster = R"pb(clusters { name: "k1" capacity { key: "gpu" value: 100 } })pb";

absl::Status CompileStatus(const std::string& text) { return CompileConfig(Parse(text)).status(); }

const NodeConfig& Node(const CompiledConfig& c, const std::string& name) {
  return c.nodes[c.node_index.at(name)];
}

// ---------------------------------------------------------------- errors

TEST(ConfigTest, UnknownParentIsAnErrorNamingTeamAndParent) {
  const absl::Status s = CompileStatus(kOneCluster + R"pb(
    teams { name: "a" parent: "nope" })pb");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("team 'a'"));
  EXPECT_THAT(s.message(), HasSubstr("parent 'nope' is not a team"));
}

TEST(ConfigTest, ParentCycleIsAnError) {
  const absl::Status s = CompileStatus(kOneCluster + R"pb(
    teams { name: "a" parent: "b" }
    teams { name: "b" parent: "c" }
    teams { name: "c" parent: "a" })pb");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("cycle"));
  EXPECT_THAT(s.message(), HasSubstr("team 'a'"));
}

TEST(ConfigTest, SelfParentIsACycle) {
  const absl::Status s = CompileStatus(kOneCluster + R"pb(teams { name: "a" parent: "a" })pb");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("cycle"));
}

TEST(ConfigTest, DuplicateTeamNameIsAnError) {
  const absl::Status s = CompileStatus(kOneCluster + R"pb(
    teams { name: "a" }
    teams { name: "a" })pb");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("duplicate team name 'a'"));
}

TEST(ConfigTest, DuplicateClusterNameIsAnError) {
  const absl::Status s = CompileStatus(kOneCluster + kOneCluster);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("duplicate cluster name 'k1'"));
}

TEST(ConfigTest, ChildrenGuaranteesAboveAnExplicitParentAreAnErrorNamingTheParent) {
  // org says 10, its children ask 6 + 6 = 12.
  const absl::Status s = CompileStatus(kOneCluster + R"pb(
    teams { name: "org" quota { key: "gpu" value { guaranteed: 10 } } }
    teams { name: "a" parent: "org" quota { key: "gpu" value { guaranteed: 6 } } }
    teams { name: "b" parent: "org" quota { key: "gpu" value { guaranteed: 6 } } })pb");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("team 'org'"));
  EXPECT_THAT(s.message(), HasSubstr("(12)"));
  EXPECT_THAT(s.message(), HasSubstr("10"));
}

TEST(ConfigTest, ChildrenGuaranteesEqualToTheParentAreFine) {
  EXPECT_TRUE(CompileStatus(kOneCluster + R"pb(
    teams { name: "org" quota { key: "gpu" value { guaranteed: 12 } } }
    teams { name: "a" parent: "org" quota { key: "gpu" value { guaranteed: 6 } } }
    teams { name: "b" parent: "org" quota { key: "gpu" value { guaranteed: 6 } } })pb")
                  .ok());
}

TEST(ConfigTest, NegativeGuaranteeIsAnErrorNamingTeamResourceAndValue) {
  const absl::Status s = CompileStatus(kOneCluster + R"pb(
    teams { name: "a" quota { key: "gpu" value { guaranteed: -1 } } })pb");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("team 'a' quota.gpu.guaranteed"));
  EXPECT_THAT(s.message(), HasSubstr("-1"));
}

TEST(ConfigTest, NegativeBorrowAndLendLimitsAreErrors) {
  EXPECT_THAT(CompileStatus(kOneCluster + R"pb(
                teams { name: "a" quota { key: "gpu" value { borrow_limit: -2 } } })pb")
                  .message(),
              HasSubstr("team 'a' quota.gpu.borrow_limit: -2"));
  EXPECT_THAT(CompileStatus(kOneCluster + R"pb(
                teams { name: "a" quota { key: "gpu" value { lend_limit: -3 } } })pb")
                  .message(),
              HasSubstr("team 'a' quota.gpu.lend_limit: -3"));
}

TEST(ConfigTest, NegativeCapacityIsAnErrorNamingTheCluster) {
  const absl::Status s = CompileStatus(R"pb(clusters { name: "k1" capacity { key: "gpu" value: -5 } })pb");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("cluster 'k1' capacity.gpu"));
  EXPECT_THAT(s.message(), HasSubstr("-5"));
}

TEST(ConfigTest, NegativeWeightIsAnError) {
  const absl::Status s = CompileStatus(kOneCluster + R"pb(teams { name: "a" weight: -0.5 })pb");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("team 'a': weight"));
}

TEST(ConfigTest, NoClusterIsAnError) {
  EXPECT_EQ(CompileStatus(R"pb(teams { name: "a" })pb").code(), absl::StatusCode::kInvalidArgument);
}

TEST(ConfigTest, OnlyTheThreeStrategyListsAreAccepted) {
  auto with = [](const std::string& strategies) {
    return CompileStatus(kOneCluster + "policy { " + strategies + " }");
  };
  EXPECT_TRUE(with("").ok());
  EXPECT_TRUE(with("fair_sharing_strategies: FAIR_SHARING_STRATEGY_LESS_THAN_OR_EQUAL_TO_FINAL_SHARE "
                   "fair_sharing_strategies: FAIR_SHARING_STRATEGY_LESS_THAN_INITIAL_SHARE")
                  .ok());
  EXPECT_TRUE(with("fair_sharing_strategies: FAIR_SHARING_STRATEGY_LESS_THAN_OR_EQUAL_TO_FINAL_SHARE").ok());
  EXPECT_TRUE(with("fair_sharing_strategies: FAIR_SHARING_STRATEGY_LESS_THAN_INITIAL_SHARE").ok());

  // Reversed order, a repeat, and the unspecified value are errors.
  for (const std::string bad :
       {"fair_sharing_strategies: FAIR_SHARING_STRATEGY_LESS_THAN_INITIAL_SHARE "
        "fair_sharing_strategies: FAIR_SHARING_STRATEGY_LESS_THAN_OR_EQUAL_TO_FINAL_SHARE",
        "fair_sharing_strategies: FAIR_SHARING_STRATEGY_LESS_THAN_INITIAL_SHARE "
        "fair_sharing_strategies: FAIR_SHARING_STRATEGY_LESS_THAN_INITIAL_SHARE",
        "fair_sharing_strategies: FAIR_SHARING_STRATEGY_UNSPECIFIED"}) {
    const absl::Status s = with(bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(s.message(), HasSubstr("policy.fair_sharing_strategies")) << bad;
  }
}

TEST(ConfigTest, NegativePolicyDurationIsAnErrorNamingTheField) {
  const absl::Status s = CompileStatus(kOneCluster + "policy { default_grace_s: -1 }");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("policy.default_grace_s: -1"));
}

TEST(ConfigTest, TideRulesAreValidatedAndNameTheRule) {
  EXPECT_TRUE(CompileStatus(kOneCluster + R"pb(
    teams { name: "a" tide { days: WEEKDAY_MON from: "08:00" to: "18:00" timezone: "UTC"
                              quota { key: "gpu" value { guaranteed: 2 } } } })pb").ok());
  const absl::Status s = CompileStatus(kOneCluster + R"pb(
    teams { name: "a" tide { days: WEEKDAY_MON from: "08:00" to: "25:00" quota { key: "gpu" value { guaranteed: 2 } } } })pb");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("team 'a' tide[0].to: '25:00'"));
  // Broker::Create passes the error through.
  EXPECT_EQ(Broker::Create(Parse(kOneCluster + R"pb(teams { name: "a" tide { from: "08:00" } })pb"), 0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------- warnings

TEST(ConfigTest, TopLevelGuaranteesAboveCapacityAreOnlyAWarning) {
  // 70 + 50 = 120 > 100.
  auto broker = Broker::Create(Parse(kOneCluster + R"pb(
    teams { name: "a" quota { key: "gpu" value { guaranteed: 70 } } }
    teams { name: "b" quota { key: "gpu" value { guaranteed: 50 } } })pb"),
                               0);
  ASSERT_TRUE(broker.ok()) << broker.status();
  ASSERT_EQ((*broker)->Warnings().size(), 1u);
  EXPECT_THAT((*broker)->Warnings()[0], HasSubstr("gpu (120) exceed total capacity 100"));
}

TEST(ConfigTest, GuaranteesWithinCapacityGiveNoWarning) {
  auto broker = Broker::Create(Parse(kOneCluster + R"pb(
    teams { name: "a" quota { key: "gpu" value { guaranteed: 50 } } }
    teams { name: "b" quota { key: "gpu" value { guaranteed: 50 } } })pb"),
                               0);
  ASSERT_TRUE(broker.ok()) << broker.status();
  EXPECT_TRUE((*broker)->Warnings().empty());
}

// ---------------------------------------------------------------- derived

// capacity gpu 100 (k1 60 + k2 40)
//   org   g 60 (explicit: a pool of 10 of its own), b 10
//     a   g 30, l 10  -> p 20
//     b   g 20, b 5
//   c     g 40 (top level)
//   lab   no entry    -> g = x + y = 7
//     x   g 3
//     y   g 4
//     z   no entry    -> g 0
const std::string kTree = R"pb(
  clusters { name: "k1" capacity { key: "gpu" value: 60 } }
  clusters { name: "k2" capacity { key: "gpu" value: 40 } }
  teams { name: "org" quota { key: "gpu" value { guaranteed: 60 borrow_limit: 10 } } }
  teams { name: "a" parent: "org" quota { key: "gpu" value { guaranteed: 30 lend_limit: 10 } } }
  teams { name: "b" parent: "org" quota { key: "gpu" value { guaranteed: 20 borrow_limit: 5 } } }
  teams { name: "c" quota { key: "gpu" value { guaranteed: 40 } } }
  teams { name: "lab" }
  teams { name: "x" parent: "lab" quota { key: "gpu" value { guaranteed: 3 } } }
  teams { name: "y" parent: "lab" quota { key: "gpu" value { guaranteed: 4 } } }
  teams { name: "z" parent: "lab" })pb";

TEST(ConfigTest, DerivedGuaranteesPrivatePartsAndLimits) {
  auto c = CompileConfig(Parse(kTree));
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->resources, std::vector<std::string>{"gpu"});
  EXPECT_EQ(c->nodes[kRootNode].guaranteed[0], 100);  // 60 + 40
  EXPECT_EQ(Node(*c, "org").guaranteed[0], 60);
  EXPECT_EQ(Node(*c, "org").borrow_limit[0], 10);
  EXPECT_EQ(Node(*c, "org").lend_limit[0], kInfinite);
  EXPECT_EQ(Node(*c, "org").private_part[0], 0);
  EXPECT_EQ(Node(*c, "a").guaranteed[0], 30);
  EXPECT_EQ(Node(*c, "a").private_part[0], 20);  // 30 - 10
  EXPECT_EQ(Node(*c, "a").borrow_limit[0], kInfinite);
  EXPECT_EQ(Node(*c, "b").private_part[0], 0);   // no lend limit
  EXPECT_EQ(Node(*c, "lab").guaranteed[0], 7);  // inner without entry: 3 + 4 + 0
  EXPECT_EQ(Node(*c, "lab").borrow_limit[0], kInfinite);
  EXPECT_EQ(Node(*c, "z").guaranteed[0], 0);    // leaf without entry
  EXPECT_FALSE(Node(*c, "org").leaf);
  EXPECT_TRUE(Node(*c, "a").leaf);
  EXPECT_EQ(Node(*c, "a").path, (std::vector<int>{kRootNode, c->node_index.at("org"), c->node_index.at("a")}));
}

TEST(ConfigTest, PotentialIsTheMostANodeCouldEverHold) {
  auto c = CompileConfig(Parse(kTree));
  ASSERT_TRUE(c.ok()) << c.status();
  // With every leaf at 0, u(org) = max(0, p(a) = 20) = 20 and u(root) = 20:
  // available(root) = 100 - 20 = 80.
  EXPECT_EQ(c->nodes[kRootNode].potential[0], 80);
  // org: min(g + b - u = 60 + 10 - 20 = 50, slack 0 + 80) = 50.
  EXPECT_EQ(Node(*c, "org").potential[0], 50);
  // a: min(inf, slack 20 + 50) = 70 (a's own private part plus org's room).
  EXPECT_EQ(Node(*c, "a").potential[0], 70);
  // b: min(20 + 5 = 25, 0 + 50) = 25.
  EXPECT_EQ(Node(*c, "b").potential[0], 25);
  // c and lab: 80 (a's private 20 is never lendable).
  EXPECT_EQ(Node(*c, "c").potential[0], 80);
  EXPECT_EQ(Node(*c, "x").potential[0], 80);
}

TEST(ConfigTest, LendableIsThePoolOfTheParent) {
  auto c = CompileConfig(Parse(kTree));
  ASSERT_TRUE(c.ok()) << c.status();
  // P(root) = Q(root) = 100 - (p(org) + p(c) + p(lab)) = 100.
  EXPECT_EQ(Node(*c, "org").lendable[0], 100);
  EXPECT_EQ(Node(*c, "c").lendable[0], 100);
  // Q(org) = 60 - p(a) - p(b) = 40; P(org) = min(40 + 10, 0 + 100) = 50.
  EXPECT_EQ(Node(*c, "a").lendable[0], 50);
  EXPECT_EQ(Node(*c, "b").lendable[0], 50);
  // Q(lab) = 7; P(lab) = min(7 + inf, 0 + 100) = 100.
  EXPECT_EQ(Node(*c, "x").lendable[0], 100);
}

TEST(ConfigTest, ResourcesAreNumberedCapacitiesFirstThenQuotasSortedByName) {
  auto c = CompileConfig(Parse(R"pb(
    clusters { name: "k1" capacity { key: "gpu" value: 8 } capacity { key: "cpu" value: 64 } }
    teams { name: "a" quota { key: "memory" value { guaranteed: 1 } } })pb"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->resources, (std::vector<std::string>{"cpu", "gpu", "memory"}));
  EXPECT_EQ(c->is_gpu, (std::vector<bool>{false, true, false}));
  EXPECT_EQ(c->clusters[0].capacity, (std::vector<Quantity>{64, 8, 0}));
}

TEST(ConfigTest, PolicyDefaults) {
  auto c = CompileConfig(Parse(kOneCluster + R"pb(teams { name: "a" weight: 0.5 })pb"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->policy.fair_sharing);
  EXPECT_TRUE(c->policy.least_lost_work);
  EXPECT_EQ(c->policy.default_grace_s, 30);
  EXPECT_EQ(c->policy.requeue_backoff_s, 60);
  EXPECT_EQ(c->policy.tick_s, 10);
  EXPECT_TRUE(c->policy.strategy_lte_final);
  EXPECT_TRUE(c->policy.strategy_lt_initial);
  const NodeConfig& a = Node(*c, "a");
  EXPECT_EQ(a.policy.within_team, v1::WITHIN_TEAM_NEVER);
  EXPECT_EQ(a.policy.reclaim, v1::RECLAIM_ANY);
  EXPECT_EQ(a.policy.borrow_within_cohort, v1::BORROW_WITHIN_COHORT_POLICY_NEVER);
  EXPECT_EQ(Compare(a.weight, Fraction{1, 2}), 0);  // exactly 1/2
}

TEST(ConfigTest, DecimalWeightsAreExact) {
  auto c = CompileConfig(Parse(kOneCluster + R"pb(teams { name: "a" weight: 1.01 }
                                                  teams { name: "b" weight: 0 })pb"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(Compare(Node(*c, "a").weight, Fraction{101, 100}), 0);
  EXPECT_TRUE(Node(*c, "b").weight.IsZero());
}

// ---------------------------------------------------------------- size bounds

v1::Config FlatTeams(int n) {
  v1::Config c = Parse(kOneCluster);
  for (int i = 0; i < n; ++i) c.add_teams()->set_name("t" + std::to_string(i));
  return c;
}

v1::Config Chain(int depth) {
  v1::Config c = Parse(kOneCluster);
  for (int i = 0; i < depth; ++i) {
    auto* t = c.add_teams();
    t->set_name("d" + std::to_string(i + 1));
    if (i > 0) t->set_parent("d" + std::to_string(i));
  }
  return c;
}

TEST(ConfigTest, TenThousandTeamsCompileAndOneMoreIsAnError) {
  EXPECT_TRUE(CompileConfig(FlatTeams(kMaxTeams)).ok());
  const absl::Status s = CompileConfig(FlatTeams(kMaxTeams + 1)).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("teams: 10001 teams; at most 10000"));
}

TEST(ConfigTest, SixteenLevelsCompileAndASeventeenthIsAnErrorNamingTheTeam) {
  EXPECT_TRUE(CompileConfig(Chain(kMaxTeamDepth)).ok());
  const absl::Status s = CompileConfig(Chain(kMaxTeamDepth + 1)).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("team 'd17': at depth 17 of the tree; at most 16"));
}

TEST(ConfigTest, TooManyTideRulesForOneTeamIsAnErrorNamingTheTeam) {
  v1::Config c = Parse(kOneCluster + R"pb(teams { name: "serving" quota { key: "gpu" value { guaranteed: 4 } } })pb");
  for (int i = 0; i <= kMaxTideRulesPerTeam; ++i) {
    auto* rule = c.mutable_teams(0)->add_tide();
    rule->add_days(v1::WEEKDAY_MON);
    rule->set_from("08:00");
    rule->set_to("20:00");
    rule->set_timezone("UTC");
  }
  const absl::Status s = CompileConfig(c).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("team 'serving': tide: 65 rules; at most 64"));
}

TEST(ConfigTest, TooManyClustersIsAnError) {
  v1::Config c;
  for (int i = 0; i <= kMaxClusters; ++i) {
    auto* cl = c.add_clusters();
    cl->set_name("c" + std::to_string(i));
    (*cl->mutable_capacity())["gpu"] = 1;
  }
  const absl::Status s = CompileConfig(c).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("clusters: 1001 clusters; at most 1000"));
}

// A config that adds a resource renumbers the others (they sort by name):
// what a job borrows moves with its resource, and survives a snapshot.
TEST(ConfigTest, WhatAJobBorrowsKeepsItsResourceWhenAConfigAddsOne) {
  const std::string teams = R"pb(
    teams { name: "a" quota { key: "gpu" value { guaranteed: 4 } } }
    teams { name: "b" quota { key: "gpu" value { guaranteed: 4 } } })pb";
  const std::string gpu_cpu = R"pb(
    clusters { name: "k1" capacity { key: "gpu" value: 8 } capacity { key: "cpu" value: 64 } })pb";
  auto b = Broker::Create(Parse(gpu_cpu + teams), 0).value();
  internal::v1::Command submit;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString("job: 'big' team: 'a' per_replica { key: 'gpu' value: 6 }",
                                                            submit.mutable_submit()));
  b->Apply(submit, 1);
  const NamedQuantities borrowed = {{"gpu", 2}};
  ASSERT_EQ(b->GetJob("big")->borrowed, borrowed);
  internal::v1::Command change;
  *change.mutable_apply_config() = Parse(R"pb(
    clusters { name: "k1" capacity { key: "gpu" value: 8 } capacity { key: "cpu" value: 64 }
               capacity { key: "fpga" value: 2 } })pb" + teams);
  b->Apply(change, 2);
  EXPECT_EQ(b->GetJob("big")->borrowed, borrowed);
  auto restored = Broker::Restore(b->Snapshot());
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ((*restored)->GetJob("big")->borrowed, borrowed);
}

}  // namespace
}  // namespace tidegate::core
