#include "api/yaml_loader.h"

#include <cstdlib>
#include <filesystem>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tidegate/v1/config.pb.h"

namespace tidegate::api {
namespace {

using ::testing::HasSubstr;
using v1::Scenario;

// The example of docs/design.md §9, verbatim.
constexpr char kDesignExample[] = R"(clusters:
  - {name: a, capacity: {gpu: 16}}
teams:
  - {name: org}
  - name: research
    parent: org
    weight: 1
    quota: {gpu: {guaranteed: 8, borrow_limit: 8, lend_limit: 4}}
    queueing: best_effort_fifo     # or strict_fifo
    preemption: {within_team: lower_priority, reclaim: any,
                 borrow_within_cohort: {policy: never}}
  - name: serving
    parent: org
    quota: {gpu: {guaranteed: 8}}
    tide: [{days: [mon, tue, wed, thu, fri], from: "08:00", to: "20:00", timezone: UTC,
            quota: {gpu: {guaranteed: 12}}}]
policy: {fair_sharing: false, victim_order: least_lost_work, default_grace_s: 30,
         tide_lead_s: 600, tick_s: 10}
start: "2026-01-05T00:00:00Z"      # the virtual clock's origin (optional)
events:
  - at: 0
    submit: {job: r1, team: research, cluster: a, per_replica: {gpu: 2},
             priority: 0, elastic: {min: 2, max: 6}, grace_s: 30, run_s: 7200}
  - at: 0
    adopt: {job: old, team: serving, cluster: a, replicas: 1, per_replica: {gpu: 2}}
  - {at: 60, checkpoint: r1}
  - {at: 90, finish: r1}
  - {at: 120, set_quota: {team: serving, quota: {gpu: {guaranteed: 4}}}}
  - {at: 150, set_capacity: {cluster: a, capacity: {gpu: 8}}}
expect:
  - {at: 0, job: r1, state: admitted, replicas: 6, borrowing: true}
)";

// Loads `yaml` as a Scenario from "s.yaml" and returns the error message, or
// "" on success.
std::string LoadError(const std::string& yaml) {
  Scenario scenario;
  absl::Status status = LoadYamlString(yaml, "s.yaml", &scenario);
  if (!status.ok()) {
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  }
  return std::string(status.message());
}

Scenario LoadOk(const std::string& yaml) {
  Scenario scenario;
  absl::Status status = LoadYamlString(yaml, "s.yaml", &scenario);
  EXPECT_TRUE(status.ok()) << status;
  return scenario;
}

TEST(YamlLoaderTest, DesignExampleLoadsFieldByField) {
  const Scenario s = LoadOk(kDesignExample);

  ASSERT_EQ(s.clusters_size(), 1);
  EXPECT_EQ(s.clusters(0).capacity().at("gpu"), 16);
  ASSERT_EQ(s.teams_size(), 3);
  EXPECT_EQ(s.teams(0).name(), "org");
  EXPECT_FALSE(s.teams(0).has_weight());

  const v1::Team& research = s.teams(1);
  EXPECT_EQ(research.parent(), "org");
  EXPECT_TRUE(research.has_weight());
  EXPECT_EQ(research.weight(), 1.0);
  const v1::ResourceQuota& gpu = research.quota().at("gpu");
  EXPECT_EQ(gpu.guaranteed(), 8);
  EXPECT_TRUE(gpu.has_borrow_limit());
  EXPECT_EQ(gpu.borrow_limit(), 8);
  EXPECT_EQ(gpu.lend_limit(), 4);
  EXPECT_EQ(research.queueing(), v1::QUEUEING_BEST_EFFORT_FIFO);
  EXPECT_EQ(research.preemption().within_team(), v1::WITHIN_TEAM_LOWER_PRIORITY);
  EXPECT_EQ(research.preemption().reclaim(), v1::RECLAIM_ANY);
  EXPECT_EQ(research.preemption().borrow_within_cohort().policy(),
            v1::BORROW_WITHIN_COHORT_POLICY_NEVER);

  const v1::Team& serving = s.teams(2);
  EXPECT_FALSE(serving.quota().at("gpu").has_borrow_limit());  // unlimited
  ASSERT_EQ(serving.tide_size(), 1);
  const v1::TideRule& tide = serving.tide(0);
  ASSERT_EQ(tide.days_size(), 5);
  EXPECT_EQ(tide.days(0), v1::WEEKDAY_MON);
  EXPECT_EQ(tide.days(4), v1::WEEKDAY_FRI);
  EXPECT_EQ(tide.from(), "08:00");
  EXPECT_EQ(tide.to(), "20:00");
  EXPECT_EQ(tide.timezone(), "UTC");
  EXPECT_EQ(tide.quota().at("gpu").guaranteed(), 12);

  EXPECT_FALSE(s.policy().fair_sharing());
  EXPECT_EQ(s.policy().victim_order(), v1::VICTIM_ORDER_LEAST_LOST_WORK);
  EXPECT_EQ(s.policy().default_grace_s(), 30);
  EXPECT_EQ(s.policy().tide_lead_s(), 600);
  EXPECT_EQ(s.policy().tick_s(), 10);
  EXPECT_FALSE(s.policy().has_requeue_backoff_s());
  EXPECT_EQ(s.start(), "2026-01-05T00:00:00Z");

  ASSERT_EQ(s.events_size(), 6);
  const v1::JobSpec& r1 = s.events(0).submit();
  EXPECT_EQ(s.events(0).kind_case(), v1::ScenarioEvent::kSubmit);
  EXPECT_EQ(r1.job(), "r1");
  EXPECT_EQ(r1.per_replica().at("gpu"), 2);
  EXPECT_EQ(r1.elastic().min(), 2);
  EXPECT_EQ(r1.elastic().max(), 6);
  EXPECT_FALSE(r1.has_replicas());
  EXPECT_EQ(r1.run_s(), 7200);
  EXPECT_EQ(s.events(1).kind_case(), v1::ScenarioEvent::kAdopt);
  EXPECT_EQ(s.events(1).adopt().job(), "old");
  EXPECT_EQ(s.events(1).adopt().replicas(), 1);
  EXPECT_EQ(s.events(2).at(), 60);
  EXPECT_EQ(s.events(2).kind_case(), v1::ScenarioEvent::kCheckpoint);
  EXPECT_EQ(s.events(2).checkpoint(), "r1");
  EXPECT_EQ(s.events(3).finish(), "r1");
  EXPECT_EQ(s.events(4).set_quota().quota().at("gpu").guaranteed(), 4);
  EXPECT_EQ(s.events(5).set_capacity().capacity().at("gpu"), 8);

  ASSERT_EQ(s.expect_size(), 1);
  EXPECT_EQ(s.expect(0).state(), v1::JOB_STATE_ADMITTED);
  EXPECT_EQ(s.expect(0).replicas(), 6);
  EXPECT_TRUE(s.expect(0).has_borrowing());
  EXPECT_TRUE(s.expect(0).borrowing());
}

TEST(YamlLoaderTest, EnumAcceptsFullNameInAnyCase) {
  const Scenario s = LoadOk(
      "teams:\n"
      "  - {preemption: {reclaim: RECLAIM_LOWER_PRIORITY, within_team: within_team_never}}\n"
      "policy: {fair_sharing_strategies: [less_than_initial_share]}\n");
  EXPECT_EQ(s.teams(0).preemption().reclaim(), v1::RECLAIM_LOWER_PRIORITY);
  EXPECT_EQ(s.teams(0).preemption().within_team(), v1::WITHIN_TEAM_NEVER);
  EXPECT_EQ(s.policy().fair_sharing_strategies(0),
            v1::FAIR_SHARING_STRATEGY_LESS_THAN_INITIAL_SHARE);
}

TEST(YamlLoaderTest, EnumErrorListsTheAcceptedNames) {
  EXPECT_EQ(LoadError("teams:\n"
                      "  - name: a\n"
                      "    preemption:\n"
                      "      reclaim: sometimes\n"),
            "s.yaml:4: teams[0].preemption.reclaim: 'sometimes' is not one of never, "
            "lower_priority, any");
}

TEST(YamlLoaderTest, EnumRejectsUnspecifiedAndShortNameInCapitals) {
  EXPECT_EQ(LoadError("expect: [{state: unspecified}]"),
            "s.yaml:1: expect[0].state: 'unspecified' is not one of queued, admitted, "
            "draining, ended, rejected");
  EXPECT_THAT(LoadError("expect: [{state: JOB_STATE_UNSPECIFIED}]"),
              HasSubstr("'JOB_STATE_UNSPECIFIED' is not one of"));
  EXPECT_THAT(LoadError("expect: [{state: Admitted}]"), HasSubstr("'Admitted' is not one of"));
}

TEST(YamlLoaderTest, IntegerOverflowIsOutOfRange) {
  EXPECT_EQ(LoadError("until: 99999999999999999999"),
            "s.yaml:1: until: '99999999999999999999' is out of range for int64");
  EXPECT_EQ(LoadError("events: [{submit: {priority: 2147483648}}]"),
            "s.yaml:1: events[0].submit.priority: '2147483648' is out of range for int32");
}

TEST(YamlLoaderTest, IntegersAreStrictDecimal) {
  EXPECT_EQ(LoadError("until: 1.5"), "s.yaml:1: until: '1.5' is not an integer");
  EXPECT_EQ(LoadError("until: 1e3"), "s.yaml:1: until: '1e3' is not an integer");
  EXPECT_EQ(LoadError("until: 0x10"), "s.yaml:1: until: '0x10' is not an integer");
  EXPECT_EQ(LoadError("until: +-1"), "s.yaml:1: until: '+-1' is not an integer");
  EXPECT_EQ(LoadError("until: ''"), "s.yaml:1: until: '' is not an integer");
}

TEST(YamlLoaderTest, IntegersKeepSignAndFullInt64Range) {
  const Scenario s = LoadOk(
      "events:\n"
      "  - submit: {replicas: 4611686018427387904, per_replica: {gpu: -2}, priority: +7}\n"
      "until: -9223372036854775808\n");
  EXPECT_EQ(s.events(0).submit().replicas(), 4611686018427387904);
  EXPECT_EQ(s.events(0).submit().per_replica().at("gpu"), -2);  // validation rejects it, not us
  EXPECT_EQ(s.events(0).submit().priority(), 7);
  EXPECT_EQ(s.until(), INT64_MIN);
}

TEST(YamlLoaderTest, DoublesParseStrictly) {
  EXPECT_EQ(LoadOk("teams: [{weight: 1.01}]").teams(0).weight(), 1.01);
  EXPECT_EQ(LoadOk("teams: [{weight: 0}]").teams(0).weight(), 0.0);
  EXPECT_TRUE(LoadOk("teams: [{weight: 0}]").teams(0).has_weight());
  EXPECT_EQ(LoadOk("teams: [{weight: +2.5e-1}]").teams(0).weight(), 0.25);
  EXPECT_EQ(LoadError("teams: [{weight: 1.0.1}]"),
            "s.yaml:1: teams[0].weight: '1.0.1' is not a number");
  EXPECT_EQ(LoadError("teams: [{weight: nan}]"),
            "s.yaml:1: teams[0].weight: 'nan' is not a number");
  EXPECT_EQ(LoadError("teams: [{weight: 1e999}]"),
            "s.yaml:1: teams[0].weight: '1e999' is out of range for double");
}

TEST(YamlLoaderTest, BoolsAreOnlyTrueOrFalse) {
  EXPECT_FALSE(LoadOk("events: [{submit: {gang: false}}]").events(0).submit().gang());
  EXPECT_TRUE(LoadOk("events: [{submit: {gang: false}}]").events(0).submit().has_gang());
  EXPECT_EQ(LoadError("events: [{submit: {gang: yes}}]"),
            "s.yaml:1: events[0].submit.gang: 'yes' is not true or false");
}

TEST(YamlLoaderTest, StringsKeepTheScalarAsWritten) {
  const Scenario s = LoadOk("events: [{submit: {job: 1000, team: yes, labels: {tier: 007}}}]");
  EXPECT_EQ(s.events(0).submit().job(), "1000");
  EXPECT_EQ(s.events(0).submit().team(), "yes");
  EXPECT_EQ(s.events(0).submit().labels().at("tier"), "007");
}

TEST(YamlLoaderTest, UnknownFieldListsTheKnownFields) {
  EXPECT_EQ(LoadError("teams:\n"
                      "  - name: a\n"
                      "  - name: b\n"
                      "  - name: c\n"
                      "    parent: a\n"
                      "    weight: 2\n"
                      "    qouta: {gpu: {guaranteed: 1}}\n"),
            "s.yaml:7: teams[2]: unknown field 'qouta' (known: name, parent, weight, quota, "
            "queueing, preemption, tide)");
  EXPECT_THAT(LoadError("teamz: []"), HasSubstr("s.yaml:1: unknown field 'teamz' (known: name,"));
}

TEST(YamlLoaderTest, DuplicateKeyIsAnError) {
  EXPECT_EQ(LoadError("name: a\nstart: x\nname: b\n"), "s.yaml:3: duplicate key 'name'");
  EXPECT_EQ(LoadError("clusters:\n  - capacity:\n      gpu: 1\n      gpu: 2\n"),
            "s.yaml:4: clusters[0].capacity: duplicate key 'gpu'");
}

TEST(YamlLoaderTest, TwoMembersOfAOneofAreAnError) {
  EXPECT_EQ(LoadError("events:\n  - {at: 5, checkpoint: r1, finish: r1}\n"),
            "s.yaml:2: events[0]: 'checkpoint' and 'finish' cannot both be set (one of 'kind')");
}

TEST(YamlLoaderTest, WrongShapeIsAnError) {
  EXPECT_EQ(LoadError("policy:\n  - tick_s: 10\n"),
            "s.yaml:2: policy: expected a map, got a sequence");
  EXPECT_EQ(LoadError("teams: research"), "s.yaml:1: teams: expected a sequence, got 'research'");
  EXPECT_EQ(LoadError("clusters: [{capacity: [gpu]}]"),
            "s.yaml:1: clusters[0].capacity: expected a map, got a sequence");
  EXPECT_EQ(LoadError("name: [a]"), "s.yaml:1: name: expected a string, got a sequence");
  EXPECT_EQ(LoadError("until: {a: 1}"), "s.yaml:1: until: expected an integer, got a map");
  EXPECT_EQ(LoadError("clusters: [{capacity: {gpu: {n: 1}}}]"),
            "s.yaml:1: clusters[0].capacity.gpu: expected an integer, got a map");
}

TEST(YamlLoaderTest, NullScalarIsAnErrorAtItsKey) {
  EXPECT_EQ(LoadError("name: a\nuntil:\nstart: x\n"),
            "s.yaml:2: until: expected an integer, got nothing");
  EXPECT_EQ(LoadError("teams:\n  - {name: }\n"),
            "s.yaml:2: teams[0].name: expected a string, got nothing");
}

TEST(YamlLoaderTest, NullOrEmptyMessageIsPresentAndEmpty) {
  const Scenario s = LoadOk("policy:\nteams:\n  - name: a\n    quota: {gpu: {}}\n"
                            "    preemption: {}\n");
  EXPECT_TRUE(s.has_policy());
  EXPECT_TRUE(s.teams(0).has_preemption());
  EXPECT_EQ(s.teams(0).quota().count("gpu"), 1u);
  EXPECT_FALSE(s.teams(0).quota().at("gpu").has_guaranteed());
}

TEST(YamlLoaderTest, EmptySequenceYieldsEmptyRepeated) {
  SourceMap where;
  Scenario s;
  ASSERT_TRUE(LoadYamlString("expect:\n  - {at: 5, by: a1, preempted: []}\n", "s.yaml", &s, &where)
                  .ok());
  EXPECT_EQ(s.expect(0).preempted_size(), 0);
  EXPECT_EQ(s.expect(0).by(), "a1");
  EXPECT_TRUE(where.Has("expect[0].preempted"));  // written, though empty
  EXPECT_EQ(where.LineOf("expect[0].preempted"), 2);
  EXPECT_FALSE(where.Has("expect[0].job"));
}

TEST(YamlLoaderTest, MapKeysMayHoldSlashesDashesAndDots) {
  const Scenario s = LoadOk(
      "clusters:\n"
      "  - capacity: {default/cpu: 64, mig-1g.10gb: 7, on-demand/cpu: 3}\n"
      "teams:\n"
      "  - quota: {mig-1g.10gb: {guaranteed: 2}}\n");
  EXPECT_EQ(s.clusters(0).capacity().at("default/cpu"), 64);
  EXPECT_EQ(s.clusters(0).capacity().at("mig-1g.10gb"), 7);
  EXPECT_EQ(s.clusters(0).capacity().at("on-demand/cpu"), 3);
  EXPECT_EQ(s.teams(0).quota().at("mig-1g.10gb").guaranteed(), 2);
}

TEST(YamlLoaderTest, ErrorsNameTheLineOfTheBadValue) {
  EXPECT_EQ(LoadError("clusters:\n"
                      "  - {name: a, capacity: {gpu: 16}}\n"
                      "teams:\n"
                      "  - name: a\n"
                      "  - name: b\n"
                      "    quota:\n"
                      "      gpu:\n"
                      "        guaranteed: 8\n"
                      "      cpu:\n"
                      "        borrow_limit: 2\n"
                      "        guaranteed: abc\n"),
            "s.yaml:11: teams[1].quota.cpu.guaranteed: 'abc' is not an integer");
  EXPECT_EQ(LoadError("events:\n  - at: 0\n  - at: 1\n  - at: 2\n    submit:\n"
                      "      per_replica: {gpu: x}\n"),
            "s.yaml:6: events[2].submit.per_replica.gpu: 'x' is not an integer");
}

TEST(YamlLoaderTest, SourceMapGivesLinesAndFallsBackToThePrefix) {
  SourceMap where;
  Scenario s;
  ASSERT_TRUE(LoadYamlString(kDesignExample, "design.yaml", &s, &where).ok());
  EXPECT_EQ(where.filename(), "design.yaml");
  EXPECT_EQ(where.LineOf("clusters"), 1);
  EXPECT_EQ(where.LineOf("clusters[0].capacity.gpu"), 2);
  EXPECT_EQ(where.LineOf("teams[1]"), 5);
  EXPECT_EQ(where.LineOf("teams[1].quota.gpu.lend_limit"), 8);
  EXPECT_EQ(where.LineOf("teams[1].preemption.borrow_within_cohort.policy"), 11);
  EXPECT_EQ(where.LineOf("teams[2].tide[0].days[3]"), 15);
  EXPECT_EQ(where.LineOf("events[3].finish"), 27);
  // Not written: the nearest written ancestor.
  EXPECT_EQ(where.LineOf("teams[2].quota.gpu.borrow_limit"), 14);
  EXPECT_EQ(where.LineOf("teams[0].quota"), 4);
  EXPECT_EQ(where.LineOf("until"), 0);
  EXPECT_EQ(where.Locate("teams[1].quota.gpu.lend_limit"),
            "design.yaml:8: teams[1].quota.gpu.lend_limit");
  EXPECT_EQ(where.Locate("until"), "design.yaml: until");
}

TEST(YamlLoaderTest, TopLevelMustBeOneMap) {
  EXPECT_EQ(LoadError("- a\n- b\n"), "s.yaml:1: expected a map of fields, got a sequence");
  EXPECT_EQ(LoadError("just text"), "s.yaml:1: expected a map of fields, got 'just text'");
  EXPECT_EQ(LoadError(""), "s.yaml: no YAML document; expected a map of fields");
  EXPECT_EQ(LoadError("# only a comment\n"), "s.yaml: no YAML document; expected a map of fields");
  EXPECT_EQ(LoadError("name: a\n---\nname: b\n"),
            "s.yaml:3: expected one YAML document, found 2");
}

TEST(YamlLoaderTest, YamlSyntaxErrorGivesFileAndLine) {
  const std::string error = LoadError("name: a\nteams:\n  - {name: b\n  - name: c\n");
  EXPECT_THAT(error, HasSubstr("s.yaml:"));
  EXPECT_THAT(error, HasSubstr("invalid YAML"));
  EXPECT_EQ(LoadError("name: a\n  bad: indent\n"),
            "s.yaml:2: invalid YAML: illegal map value");
}

TEST(YamlLoaderTest, FailedLoadLeavesMessageAndSourceMapCleared) {
  Scenario s;
  SourceMap where;
  ASSERT_TRUE(LoadYamlString("name: before\nuntil: 5\n", "s.yaml", &s, &where).ok());
  EXPECT_EQ(where.LineOf("until"), 2);

  absl::Status status = LoadYamlString("name: after\nuntil: soon\n", "t.yaml", &s, &where);
  EXPECT_EQ(status.message(), "t.yaml:2: until: 'soon' is not an integer");
  EXPECT_EQ(s.ByteSizeLong(), 0u);
  EXPECT_EQ(where.LineOf("name"), 0);
}

TEST(YamlLoaderTest, LoadingAgainReplacesThePreviousContents) {
  Scenario s;
  ASSERT_TRUE(LoadYamlString("teams: [{name: a}, {name: b}]", "s.yaml", &s).ok());
  ASSERT_TRUE(LoadYamlString("teams: [{name: c}]", "s.yaml", &s).ok());
  ASSERT_EQ(s.teams_size(), 1);
  EXPECT_EQ(s.teams(0).name(), "c");
}

TEST(YamlLoaderTest, UnreadableFileIsNotFoundNamingThePath) {
  Scenario s;
  absl::Status status = LoadYamlFile("/nonexistent/tidegate.yaml", &s);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr("/nonexistent/tidegate.yaml"));
  EXPECT_EQ(LoadYamlFile("/", &s).code(), absl::StatusCode::kNotFound);  // a directory
}

// The project's own scenario files (tests/scenarios, docs/design.md §9) all load.
// An anchor bomb ("billion laughs") in valid positions: 200 teams that alias
// one team, whose 200 tide rules alias one rule of 200 days: 8 million nodes
// once expanded, from a file of a few KB.
TEST(YamlLoaderTest, AnchorBombIsRefusedBeforeItExpands) {
  std::string days = "[mon";
  for (int i = 1; i < 200; ++i) days += ", mon";
  days += "]";
  std::string rules = "&r {days: " + days + ", from: \"08:00\", to: \"20:00\", timezone: UTC}";
  for (int i = 1; i < 200; ++i) rules += ", *r";
  std::string teams = "&t {name: a, tide: [" + rules + "]}";
  for (int i = 1; i < 200; ++i) teams += ", *t";
  const std::string text = "teams: [" + teams + "]\n";
  ASSERT_LT(text.size(), 8000u);
  v1::Config config;
  SourceMap where;
  const absl::Status status = LoadYamlString(text, "bomb.yaml", &config, &where);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("bomb.yaml:1: teams["));
  EXPECT_THAT(status.message(), HasSubstr("expands to more than " + std::to_string(ExpandedNodeBound(text.size()))));
  EXPECT_EQ(config.teams_size(), 0);
}

TEST(YamlLoaderTest, AliasesThatExpandWithinTheBoundLoad) {
  // 2,000 teams sharing one quota through an alias.
  std::string text = "teams:\n  - {name: t0, quota: &q {gpu: {guaranteed: 1, borrow_limit: 2}}}\n";
  for (int i = 1; i < 2000; ++i) text += "  - {name: t" + std::to_string(i) + ", quota: *q}\n";
  v1::Config config;
  ASSERT_TRUE(LoadYamlString(text, "shared.yaml", &config).ok());
  ASSERT_EQ(config.teams_size(), 2000);
  EXPECT_EQ(config.teams(1999).quota().at("gpu").borrow_limit(), 2);
}

TEST(YamlLoaderTest, EveryProjectScenarioLoads) {
  const char* source_dir = std::getenv("TIDEGATE_SOURCE_DIR");  // set by ctest
  const std::filesystem::path root =
      (source_dir != nullptr ? std::filesystem::path(source_dir)
                             : std::filesystem::path(__FILE__).parent_path().parent_path()) /
      "tests" / "scenarios";
  if (!std::filesystem::is_directory(root)) GTEST_SKIP() << "no scenario folder at " << root;

  int loaded = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (entry.path().extension() != ".yaml") continue;
    Scenario scenario;
    SourceMap where;
    absl::Status status = LoadYamlFile(entry.path().string(), &scenario, &where);
    EXPECT_TRUE(status.ok()) << status;
    EXPECT_GT(scenario.teams_size(), 0) << entry.path();
    EXPECT_EQ(where.filename(), entry.path().string());
    ++loaded;
  }
  if (loaded == 0) GTEST_SKIP() << "no .yaml files under " << root;
}

}  // namespace
}  // namespace tidegate::api
