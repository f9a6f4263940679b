#include "cli/jobs_command.h"

#include <sstream>

#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace tidegate::cli {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kNow = 1714521600000;  // 2024-05-01T00:00:00Z

template <typename M>
M Parse(const std::string& text) {
  M m;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &m)) << text;
  return m;
}

AdmitOptions Admit() {
  AdmitOptions o;
  o.job = "slurm:1";
  o.team = "research";
  o.per_replica = "gpu=8";
  return o;
}

TEST(BuildJobSpecTest, FillsTheSpecFromTheFlags) {
  AdmitOptions o = Admit();
  o.cluster = "a";
  o.replicas = "4";
  o.per_replica = "gpu=8,cpu=4000";
  o.priority = -5;
  o.grace_s = "0";
  o.labels = {"user=ana", "queue=long"};
  auto spec = BuildJobSpec(o);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->job(), "slurm:1");
  EXPECT_EQ(spec->team(), "research");
  EXPECT_EQ(spec->cluster(), "a");
  EXPECT_EQ(spec->replicas(), 4);
  EXPECT_EQ(spec->per_replica().at("gpu"), 8);
  EXPECT_EQ(spec->per_replica().at("cpu"), 4000);
  EXPECT_EQ(spec->priority(), -5);
  ASSERT_TRUE(spec->has_grace_s());
  EXPECT_EQ(spec->grace_s(), 0);
  EXPECT_EQ(spec->labels().at("user"), "ana");
}

TEST(BuildJobSpecTest, LeavesDefaultsToTheBroker) {
  auto spec = BuildJobSpec(Admit());
  ASSERT_TRUE(spec.ok());
  EXPECT_FALSE(spec->has_replicas());
  EXPECT_FALSE(spec->has_grace_s());
  EXPECT_EQ(spec->cluster(), "");
}

TEST(BuildJobSpecTest, BadFlagsAreNamedWithTheirValue) {
  auto error = [](AdmitOptions o) {
    auto spec = BuildJobSpec(o);
    EXPECT_FALSE(spec.ok());
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(spec.status().message());
  };
  AdmitOptions o = Admit();
  o.per_replica = "gpu:8";
  EXPECT_THAT(error(o), HasSubstr("--per-replica 'gpu:8'"));
  o = Admit();
  o.replicas = "0";
  EXPECT_THAT(error(o), HasSubstr("--replicas '0'"));
  o = Admit();
  o.grace_s = "-3";
  EXPECT_THAT(error(o), HasSubstr("--grace-s '-3'"));
  o = Admit();
  o.labels = {"a=1", "a=2"};
  EXPECT_THAT(error(o), HasSubstr("--label 'a=2': a is given twice"));
  o = Admit();
  o.wait_timeout = "soon";
  EXPECT_THAT(error(o), HasSubstr("--wait-timeout 'soon'"));
  o = Admit();
  o.job = "";
  EXPECT_THAT(error(o), HasSubstr("--job"));
}

TEST(DescribeAdmitTest, SaysTheDecisionAndWhatGoesWithIt) {
  EXPECT_EQ(DescribeAdmit("j", Parse<v1::AdmitResponse>("decision: DECISION_ADMITTED")),
            "j: ADMITTED");
  EXPECT_EQ(DescribeAdmit("j", Parse<v1::AdmitResponse>(R"pb(
              decision: DECISION_ADMITTED_BORROWING
              borrowed { key: "gpu" value: 8 })pb")),
            "j: ADMITTED_BORROWING: borrowing gpu=8 (reclaimable)");
  EXPECT_EQ(DescribeAdmit("j", Parse<v1::AdmitResponse>(R"pb(
              decision: DECISION_RECLAIMING victims: "x" victims: "y")pb")),
            "j: RECLAIMING: waiting for 2 victims to drain (x, y)");
  EXPECT_EQ(DescribeAdmit("j", Parse<v1::AdmitResponse>(R"pb(
              decision: DECISION_QUEUED
              reason: "gpu: ml at 56 of 56"
              job { team: "research" queue_position: 3 })pb")),
            "j: QUEUED: gpu: ml at 56 of 56 (position 3 in research's queue)");
  EXPECT_EQ(DescribeAdmit("j", Parse<v1::AdmitResponse>(R"pb(
              decision: DECISION_REJECTED reason: "unknown team 'nope'")pb")),
            "j: REJECTED: unknown team 'nope'");
}

TEST(DescribeWaitStateTest, ShowsBorrowingAndQueuePosition) {
  EXPECT_EQ(DescribeWaitState(Parse<v1::JobInfo>(
                R"pb(state: JOB_STATE_QUEUED team: "t" queue_position: 2 reason: "r")pb")),
            "queued, position 2 in t's queue: r");
  EXPECT_EQ(DescribeWaitState(Parse<v1::JobInfo>("state: JOB_STATE_ADMITTED borrowing: true")),
            "admitted, borrowing");
  EXPECT_EQ(DescribeWaitState(Parse<v1::JobInfo>("state: JOB_STATE_ENDED")), "ended");
}

TEST(PrintJobsTableTest, OneRowPerJobWithAgeAndReason) {
  auto response = Parse<v1::ListJobsResponse>(R"pb(
    jobs {
      job: "slurm:1" team: "research" cluster: "a" state: JOB_STATE_ADMITTED replicas: 2
      demand { key: "gpu" value: 16 } created_at_ms: 1714521480000 borrowing: true
    }
    jobs {
      job: "slurm:2" team: "training" cluster: "a" state: JOB_STATE_QUEUED replicas: 4
      priority: 10 demand { key: "gpu" value: 32 } demand { key: "cpu" value: 64 }
      created_at_ms: 1714514400000 reason: "gpu: ml at 56 of 56" queue_position: 1
    })pb");
  std::ostringstream out;
  PrintJobsTable(response.jobs(), kNow, out);
  EXPECT_EQ(out.str(),
            "job      team      cluster  state     replicas  demand         priority  age  reason\n"
            "slurm:1  research  a        admitted         2  gpu=16                0   2m  borrowing\n"
            "slurm:2  training  a        queued           4  gpu=32,cpu=64        10   2h  gpu: ml at 56 of 56\n");
}

TEST(PrintJobDetailsTest, AQueuedJobSaysWhatItWaitsForAndItsPosition) {
  auto job = Parse<v1::JobInfo>(R"pb(
    job: "slurm:2" team: "training" cluster: "a" state: JOB_STATE_QUEUED replicas: 4
    demand { key: "gpu" value: 32 } created_at_ms: 1714514400000
    reason: "gpu: ml at 56 of 56 (limit 40 + borrow 16)" queue_position: 3
    spec { per_replica { key: "gpu" value: 8 } grace_s: 60 labels { key: "u" value: "ana" } })pb");
  std::ostringstream out;
  PrintJobDetails(job, kNow, out);
  const std::string text = out.str();
  EXPECT_THAT(text, HasSubstr("state:           queued\n"));
  EXPECT_THAT(text, HasSubstr("waits for:       gpu: ml at 56 of 56 (limit 40 + borrow 16)\n"));
  EXPECT_THAT(text, HasSubstr("queue position:  3 in training's queue\n"));
  EXPECT_THAT(text, HasSubstr("per replica:     gpu=8\n"));
  EXPECT_THAT(text, HasSubstr("demand:          gpu=32\n"));
  EXPECT_THAT(text, HasSubstr("grace:           60s\n"));
  EXPECT_THAT(text, HasSubstr("labels:          u=ana\n"));
  EXPECT_THAT(text, HasSubstr("created:         2024-04-30T22:00:00Z (2h ago)\n"));
  EXPECT_THAT(text, HasSubstr("admitted:        never\n"));
}

TEST(PrintJobDetailsTest, AnAdmittedJobHasNoQueueFields) {
  auto job = Parse<v1::JobInfo>(R"pb(
    job: "j" team: "t" state: JOB_STATE_ADMITTED created_at_ms: 1714521000000
    admitted_at_ms: 1714521540000)pb");
  std::ostringstream out;
  PrintJobDetails(job, kNow, out);
  EXPECT_EQ(out.str().find("queue position"), std::string::npos);
  EXPECT_THAT(out.str(), HasSubstr("cluster:      -\n"));
  EXPECT_THAT(out.str(), HasSubstr("admitted:     2024-04-30T23:59:00Z (1m ago)\n"));
}

}  // namespace
}  // namespace tidegate::cli
