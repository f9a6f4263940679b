// The simulator against the real core, on small scenarios written inline.
#include "broker/sim/simulator.h"

#include <algorithm>

#include "broker/sim/records.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace tidegate::sim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

v1::Scenario Parse(const std::string& text) {
  v1::Scenario scenario;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &scenario)) << text;
  return scenario;
}

// Runs and returns the JSON lines (records, then the summary).
std::vector<std::string> Lines(const v1::Scenario& scenario, SimResult* result = nullptr,
                               const Trace* trace = nullptr) {
  std::vector<std::string> lines;
  SimOptions options;
  options.trace = trace;
  options.on_record = [&](const core::Event& e, core::Time start) {
    lines.push_back(RecordJson(e, start));
  };
  absl::StatusOr<SimResult> r = Simulate(scenario, options);
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return lines;
  lines.push_back(SummaryJson(r->summary));
  if (result != nullptr) *result = *std::move(r);
  return lines;
}

constexpr char kTeamsOnly[] = R"pb(
  clusters { name: "a" capacity { key: "gpu" value: 8 } }
  teams { name: "research" quota { key: "gpu" value { guaranteed: 4 } } }
  teams { name: "serving" quota { key: "gpu" value { guaranteed: 4 } } }
)pb";
const std::string kTwoTeams = std::string(kTeamsOnly) + "policy { default_grace_s: 30 }\n";

TEST(SimulatorTest, VictimLeavesWhenItsGraceEndsEvenWithoutAnEventThen) {
  SimResult result;
  std::vector<std::string> lines = Lines(Parse(std::string(kTwoTeams) + R"pb(
    events { at: 0 submit { job: "r1" team: "research" replicas: 1 per_replica { key: "gpu" value: 8 } } }
    events { at: 100 submit { job: "s1" team: "serving" replicas: 1 per_replica { key: "gpu" value: 4 } } }
    expect { at: 100 by: "s1" preempted: "r1" }
    expect { at: 129 job: "s1" state: JOB_STATE_QUEUED }
    expect { at: 130 job: "s1" state: JOB_STATE_ADMITTED }
    expect { at: 130 job: "r1" state: JOB_STATE_QUEUED }
  )pb"), &result);
  EXPECT_EQ(result.FailedExpectations(), 0) << testing::PrintToString(lines);
  EXPECT_THAT(lines, testing::Contains(HasSubstr(R"({"at":130,"type":"admit","job":"s1")")));
  EXPECT_EQ(result.summary.reclaim_latency_p99_s, 30);
  EXPECT_EQ(result.end_ms - result.start_ms, 130'000);
}

TEST(SimulatorTest, RunSEndsAJobAndFreesItsCapacity) {
  SimResult result;
  std::vector<std::string> lines = Lines(Parse(std::string(kTwoTeams) + R"pb(
    events { at: 0 submit { job: "a" team: "research" replicas: 1 per_replica { key: "gpu" value: 8 } run_s: 60 } }
    events { at: 10 submit { job: "b" team: "research" replicas: 1 per_replica { key: "gpu" value: 8 } } }
    expect { at: 59 job: "b" state: JOB_STATE_QUEUED }
    expect { at: 60 job: "a" state: JOB_STATE_ENDED }
    expect { at: 60 job: "b" state: JOB_STATE_ADMITTED }
  )pb"), &result);
  EXPECT_EQ(result.FailedExpectations(), 0) << testing::PrintToString(lines);
  EXPECT_THAT(lines, testing::Contains(R"({"at":60,"type":"end","job":"a"})"));
  // 8 GPUs for the whole 60 s of the run, out of 8: fully used.
  EXPECT_EQ(result.summary.utilization, 1.0);
  EXPECT_EQ(result.summary.teams[0].wait_p95_s, 50);  // b waited 10..60.
}

TEST(SimulatorTest, PreemptedJobLosesWorkSinceItsCheckpointAndResumesFromIt) {
  SimResult result;
  std::vector<std::string> lines = Lines(Parse(std::string(kTwoTeams) + R"pb(
    events { at: 0 submit { job: "r1" team: "research" replicas: 1 per_replica { key: "gpu" value: 8 } run_s: 500 } }
    events { at: 50 checkpoint: "r1" }
    events { at: 100 submit { job: "s1" team: "serving" replicas: 1 per_replica { key: "gpu" value: 4 } run_s: 200 } }
    expect { at: 330 job: "r1" state: JOB_STATE_ADMITTED }
    expect { at: 779 job: "r1" state: JOB_STATE_ADMITTED }
    expect { at: 780 job: "r1" state: JOB_STATE_ENDED }
  )pb"), &result);
  EXPECT_EQ(result.FailedExpectations(), 0) << testing::PrintToString(lines);
  // 8 GPUs x 50 s lost (progress 50..100 after the checkpoint at 50).
  EXPECT_DOUBLE_EQ(result.summary.teams[0].lost_gpu_hours, 8.0 * 50 / 3600);
  EXPECT_EQ(result.summary.teams[0].preemptions, 1);
}

TEST(SimulatorTest, AllAdoptsOfAnInstantGoFirstAsOneCommand) {
  SimResult result;
  std::vector<std::string> lines = Lines(Parse(std::string(kTwoTeams) + R"pb(
    events { at: 5 submit { job: "new" team: "research" replicas: 1 per_replica { key: "gpu" value: 4 } } }
    events { at: 5 adopt { job: "old1" team: "serving" replicas: 1 per_replica { key: "gpu" value: 4 } } }
    events { at: 5 adopt { job: "old2" team: "research" replicas: 1 per_replica { key: "gpu" value: 4 } } }
  )pb"), &result);
  ASSERT_GE(lines.size(), 3u);
  EXPECT_THAT(lines[0], HasSubstr(R"("job":"old1")"));
  EXPECT_THAT(lines[0], HasSubstr(R"("adopted":true)"));
  EXPECT_THAT(lines[1], HasSubstr(R"("job":"old2")"));
  EXPECT_THAT(lines[2], HasSubstr(R"({"at":5,"type":"queue","job":"new")"));  // the fleet is full.
  EXPECT_EQ(result.summary.jobs.adopted, 2);
  EXPECT_EQ(result.summary.jobs.queued_at_end, 1);
}

TEST(SimulatorTest, StartShiftsCoreTimeButNotPrintedTimes) {
  SimResult result;
  std::vector<std::string> lines = Lines(Parse(std::string(kTwoTeams) + R"pb(
    start: "2026-01-05T00:00:00Z"
    events { at: 7 submit { job: "r1" team: "research" replicas: 1 per_replica { key: "gpu" value: 1 } } }
  )pb"), &result);
  EXPECT_EQ(result.start_ms, 1767571200000);
  EXPECT_THAT(lines[0], HasSubstr(R"({"at":7,"type":"admit")"));
}

TEST(SimulatorTest, CreatedAtIsScenarioSecondsWhateverTheStart) {
  // "late" is submitted first but says it was created after "early": with a
  // non-epoch start, created_at must still be read relative to it.
  SimResult result;
  Lines(Parse(std::string(kTwoTeams) + R"pb(
    start: "2026-01-05T00:00:00Z"
    events { at: 0 submit { job: "hog" team: "research" replicas: 1 per_replica { key: "gpu" value: 8 } run_s: 10 } }
    events { at: 1 submit { job: "late" team: "research" replicas: 1 per_replica { key: "gpu" value: 8 } created_at: 5 } }
    events { at: 2 submit { job: "early" team: "research" replicas: 1 per_replica { key: "gpu" value: 8 } created_at: 1 } }
    expect { at: 10 job: "early" state: JOB_STATE_ADMITTED }
    expect { at: 10 job: "late" state: JOB_STATE_QUEUED }
  )pb"), &result);
  for (const auto& r : result.expectations) EXPECT_TRUE(r.passed) << r.message;
}

TEST(SimulatorTest, UntilCutsTheRunAndLaterExpectationsAreNotReached) {
  SimResult result;
  Lines(Parse(std::string(kTwoTeams) + R"pb(
    until: 50
    events { at: 0 submit { job: "r1" team: "research" replicas: 1 per_replica { key: "gpu" value: 1 } } }
    events { at: 60 finish: "r1" }
    expect { at: 70 job: "r1" state: JOB_STATE_ENDED }
  )pb"), &result);
  EXPECT_EQ(result.end_ms - result.start_ms, 50'000);
  EXPECT_EQ(result.events_after_until, 1);
  ASSERT_EQ(result.expectations.size(), 1u);
  EXPECT_FALSE(result.expectations[0].passed);
  EXPECT_THAT(result.expectations[0].message, HasSubstr("not reached"));
}

TEST(SimulatorTest, ElasticJobGrowsShrinksForTheOwnerAndFinishesItsWork) {
  // r1 grows to 8 GPUs; serving reclaims 4 at 100 s with the ack 10 s later
  // (an expectation's replicas are those of the job's latest record).
  // Work: 100 s at 4/4 of full speed, then 2/4 from the ack at 110 s (the
  // shrink's rate applies from the request, 100 s): run_s 200 leaves 100 s
  // of work at half speed, so r1 ends at 300 s.
  SimResult result;
  std::vector<std::string> lines = Lines(Parse(std::string(kTeamsOnly) + R"pb(
    policy { default_grace_s: 30 sim_ack_delay_s: 10 }
    events { at: 0 submit { job: "r1" team: "research" per_replica { key: "gpu" value: 2 } elastic { min: 1 max: 4 } run_s: 200 } }
    events { at: 100 submit { job: "s1" team: "serving" replicas: 1 per_replica { key: "gpu" value: 4 } } }
    expect { at: 0 job: "r1" state: JOB_STATE_ADMITTED replicas: 4 borrowing: true }
    expect { at: 100 job: "s1" state: JOB_STATE_QUEUED }
    expect { at: 100 job: "r1" state: JOB_STATE_ADMITTED replicas: 2 }
    expect { at: 110 job: "s1" state: JOB_STATE_ADMITTED }
    expect { at: 110 job: "r1" state: JOB_STATE_ADMITTED replicas: 2 borrowing: false }
    expect { at: 299 job: "r1" state: JOB_STATE_ADMITTED }
    expect { at: 300 job: "r1" state: JOB_STATE_ENDED }
  )pb"), &result);
  EXPECT_EQ(result.FailedExpectations(), 0) << testing::PrintToString(lines);
  EXPECT_THAT(lines, testing::Contains(HasSubstr(R"({"at":0,"type":"admit","job":"r1","team":"research","replicas":1)")));
  EXPECT_THAT(lines, testing::Contains(HasSubstr(R"("type":"resize","job":"r1","team":"research","from":1,"to":4)")));
  EXPECT_THAT(lines, testing::Contains(HasSubstr(R"("type":"resize","job":"r1","team":"research","by":"s1","from":4,"to":2)")));
  // No preempt record: a shrink is not an eviction, and loses no work.
  EXPECT_THAT(lines, testing::Not(testing::Contains(HasSubstr(R"("type":"preempt")"))));
  EXPECT_EQ(result.summary.lost_gpu_hours, 0);
  // Growth: 3 replicas x 2 GPUs above min for 100 s, then 1 x 2 for 200 s.
  EXPECT_NEAR(result.summary.grown_gpu_hours, (6.0 * 100 + 2.0 * 200) / 3600, 1e-9);
}

TEST(SimulatorTest, UnackedShrinkIsEnforcedAtItsDeadline) {
  // Acks come 45 s after a request: in time for a grow (resize_timeout_s 60),
  // too late for a shrink (grace 30), which is enforced at 230 s.
  SimResult result;
  std::vector<std::string> lines = Lines(Parse(std::string(kTeamsOnly) + R"pb(
    policy { default_grace_s: 30 sim_ack_delay_s: 45 }
    events { at: 0 submit { job: "r1" team: "research" per_replica { key: "gpu" value: 2 } elastic { min: 1 max: 4 } } }
    events { at: 200 submit { job: "s1" team: "serving" replicas: 1 per_replica { key: "gpu" value: 4 } } }
    expect { at: 229 job: "s1" state: JOB_STATE_QUEUED }
    expect { at: 230 job: "s1" state: JOB_STATE_ADMITTED }
    expect { at: 230 job: "r1" state: JOB_STATE_ADMITTED replicas: 2 }
  )pb"), &result);
  EXPECT_EQ(result.FailedExpectations(), 0) << testing::PrintToString(lines);
  EXPECT_THAT(lines, testing::Contains(HasSubstr(R"({"at":230,"type":"resize","job":"r1","team":"research","from":4,"to":2,"borrowed":{"gpu":0},"reason":"deadline"})")));
}

// Every change of a job's size is exactly one record: the request, then a
// `deadline` record only when the deadline, not an ack, ends it.
int Count(const std::vector<std::string>& lines, const std::string& part) {
  return static_cast<int>(std::count_if(lines.begin(), lines.end(),
                                        [&](const std::string& l) { return l.find(part) != std::string::npos; }));
}

TEST(SimulatorTest, AnAckAtTheDeadlineInstantIsInTime) {
  // The shrink asked at 200 s is due at 230 s, and the framework acks at
  // 230 s: no `deadline` record repeating the request's `from`.
  SimResult result;
  std::vector<std::string> lines = Lines(Parse(std::string(kTeamsOnly) + R"pb(
    policy { default_grace_s: 30 sim_ack_delay_s: 30 }
    events { at: 0 submit { job: "r1" team: "research" per_replica { key: "gpu" value: 2 } elastic { min: 1 max: 4 } } }
    events { at: 200 submit { job: "s1" team: "serving" replicas: 1 per_replica { key: "gpu" value: 4 } } }
    expect { at: 229 job: "s1" state: JOB_STATE_QUEUED }
    expect { at: 230 job: "s1" state: JOB_STATE_ADMITTED }
    expect { at: 230 job: "r1" state: JOB_STATE_ADMITTED replicas: 2 }
  )pb"), &result);
  EXPECT_EQ(result.FailedExpectations(), 0) << testing::PrintToString(lines);
  EXPECT_EQ(Count(lines, R"("type":"resize","job":"r1")"), 2) << testing::PrintToString(lines);  // grow, shrink.
  EXPECT_EQ(Count(lines, R"("reason":"deadline")"), 0) << testing::PrintToString(lines);
}

TEST(SimulatorTest, AGraceZeroShrinkEnforcedAtItsDeadlineWritesItsRecord) {
  // grace 0: the shrink is due the instant it is asked; the ack comes 45 s
  // later, so the deadline enforces it, with its record, like any other.
  SimResult result;
  std::vector<std::string> lines = Lines(Parse(std::string(kTeamsOnly) + R"pb(
    policy { default_grace_s: 0 sim_ack_delay_s: 45 }
    events { at: 0 submit { job: "r1" team: "research" per_replica { key: "gpu" value: 2 } elastic { min: 1 max: 4 } } }
    events { at: 200 submit { job: "s1" team: "serving" replicas: 1 per_replica { key: "gpu" value: 4 } } }
    expect { at: 200 job: "s1" state: JOB_STATE_ADMITTED }
    expect { at: 200 job: "r1" state: JOB_STATE_ADMITTED replicas: 2 }
  )pb"), &result);
  EXPECT_EQ(result.FailedExpectations(), 0) << testing::PrintToString(lines);
  EXPECT_THAT(lines, testing::Contains(HasSubstr(
                         R"({"at":200,"type":"resize","job":"r1","team":"research","from":4,"to":2,"borrowed":{"gpu":0},"reason":"deadline"})")));
  EXPECT_EQ(Count(lines, R"("type":"resize","job":"r1")"), 3) << testing::PrintToString(lines);  // grow, ask, enforce.
}

TEST(SimulatorTest, AGraceZeroShrinkAckedAtOnceWritesOneRecord) {
  SimResult result;
  std::vector<std::string> lines = Lines(Parse(std::string(kTeamsOnly) + R"pb(
    policy { default_grace_s: 0 }
    events { at: 0 submit { job: "r1" team: "research" per_replica { key: "gpu" value: 2 } elastic { min: 1 max: 4 } } }
    events { at: 200 submit { job: "s1" team: "serving" replicas: 1 per_replica { key: "gpu" value: 4 } } }
    expect { at: 200 job: "s1" state: JOB_STATE_ADMITTED }
    expect { at: 200 job: "r1" state: JOB_STATE_ADMITTED replicas: 2 }
  )pb"), &result);
  EXPECT_EQ(result.FailedExpectations(), 0) << testing::PrintToString(lines);
  EXPECT_EQ(Count(lines, R"("type":"resize","job":"r1")"), 2) << testing::PrintToString(lines);
  EXPECT_EQ(Count(lines, R"("reason":"deadline")"), 0) << testing::PrintToString(lines);
}

TEST(SimulatorTest, AReclaimerThatNoLongerFitsGetsAQueueRecord) {
  // s1's victim leaves at 130 s, but the cluster shrank at 110 s: s1 returns
  // to the queue, and says so with its reason.
  SimResult result;
  std::vector<std::string> lines = Lines(Parse(std::string(kTwoTeams) + R"pb(
    events { at: 0 submit { job: "r1" team: "research" replicas: 1 per_replica { key: "gpu" value: 8 } } }
    events { at: 100 submit { job: "s1" team: "serving" replicas: 1 per_replica { key: "gpu" value: 4 } } }
    events { at: 110 set_capacity { cluster: "a" capacity { key: "gpu" value: 2 } } }
    expect { at: 100 by: "s1" preempted: "r1" }
    expect { at: 130 job: "s1" state: JOB_STATE_QUEUED }
  )pb"), &result);
  EXPECT_EQ(result.FailedExpectations(), 0) << testing::PrintToString(lines);
  EXPECT_THAT(lines, testing::Contains(testing::StartsWith(
                         R"({"at":130,"type":"queue","job":"s1","team":"serving","reason":"exceeds_max)")))
      << testing::PrintToString(lines);
}

TEST(SimulatorTest, BadStartNamesTheValue) {
  absl::StatusOr<SimResult> r = Simulate(Parse(std::string(kTwoTeams) + R"pb(
    start: "yesterday"
  )pb"), {});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("start: \"yesterday\""));
}

TEST(SimulatorTest, TraceRowsFollowScenarioEventsOfTheSameInstant) {
  absl::StatusOr<Trace> trace = ParseTrace(
      "job_id,team,submit_s,duration_s,gpus,gpu_type,status\n"
      "t1,research,0,30,8,,\n",
      "t.csv");
  ASSERT_TRUE(trace.ok());
  SimResult result;
  std::vector<std::string> lines = Lines(Parse(std::string(kTwoTeams) + R"pb(
    until: 100
    events { at: 0 submit { job: "s1" team: "serving" replicas: 1 per_replica { key: "gpu" value: 4 } } }
  )pb"), &result, &*trace);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_THAT(lines[0], HasSubstr(R"("job":"s1")"));
  EXPECT_THAT(lines[1], HasSubstr(R"({"at":0,"type":"queue","job":"t1")"));
  ASSERT_TRUE(result.summary.trace.has_value());
  EXPECT_EQ(result.summary.trace->submitted, 1);
  EXPECT_EQ(result.summary.jobs.submitted, 2);
}

TEST(SimulatorTest, SameInputGivesTheSameOutput) {
  const v1::Scenario scenario = Parse(std::string(kTwoTeams) + R"pb(
    events { at: 0 submit { job: "r1" team: "research" replicas: 2 per_replica { key: "gpu" value: 4 } run_s: 300 } }
    events { at: 10 submit { job: "s1" team: "serving" replicas: 1 per_replica { key: "gpu" value: 4 } run_s: 100 } }
    events { at: 20 submit { job: "s2" team: "serving" replicas: 1 per_replica { key: "gpu" value: 2 } } }
  )pb");
  EXPECT_EQ(Lines(scenario), Lines(scenario));
}

}  // namespace
}  // namespace tidegate::sim
