// The SLURM mapping on documents shaped like SLURM 22.05's `squeue --json`
// and `sinfo --json` (fields trimmed to those the driver reads).
#include "adapters/slurm/slurm_driver.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tidegate::adapters {
namespace {

using ::testing::HasSubstr;

SlurmOptions Options() {
  SlurmOptions o;
  o.cluster = "hpc";
  return o;
}

constexpr char kSqueue[] = R"({"jobs": [
  {"job_id": 1, "job_state": "PENDING", "state_reason": "JobHeldUser", "account": "research",
   "partition": "gpu", "comment": "", "nice": 10, "node_count": 2, "tasks": 2,
   "tres_per_node": "gres:gpu:h100:4", "tres_per_task": "", "tres_per_job": "", "requeue": true,
   "array_job_id": 0, "het_job_id": 0, "user_name": "ada", "name": "train"},
  {"job_id": 2, "job_state": "RUNNING", "state_reason": "None", "account": "serving",
   "partition": "gpu", "comment": "tidegate: admitted", "nice": null, "node_count": 1, "tasks": 1,
   "tres_per_node": "gres:gpu:2", "requeue": false, "array_job_id": 0, "het_job_id": 0},
  {"job_id": 3, "job_state": "PENDING", "state_reason": "JobHeldUser", "account": "",
   "partition": "gpu", "node_count": 1, "tres_per_node": "gres:gpu:1", "array_job_id": 0, "het_job_id": 0},
  {"job_id": 4, "job_state": "PENDING", "state_reason": "JobHeldAdmin", "account": "research",
   "partition": "gpu", "node_count": 1, "tres_per_node": "gres:fpga:1", "array_job_id": 0, "het_job_id": 0},
  {"job_id": 5, "job_state": "RUNNING", "account": "research", "partition": "gpu", "node_count": 1,
   "tres_per_node": "", "tres_per_task": "", "tres_per_job": ""},
  {"job_id": 6, "job_state": "COMPLETED", "account": "research", "partition": "gpu", "node_count": 1,
   "tres_per_node": "", "tres_per_task": "gres:gpu:1", "tasks": 3, "array_job_id": 0, "het_job_id": 0},
  {"job_id": 7, "job_state": "PENDING", "state_reason": "Resources", "account": "research",
   "partition": "gpu", "node_count": 1, "tres_per_node": "gres:gpu:8", "array_job_id": 0, "het_job_id": 0}
]})";

TEST(ParseSqueue, MapsAHeldGpuJobToABrokerJob) {
  auto jobs = ParseSqueue(kSqueue, Options());
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 6u);  // job 5 asks for no gres: not the broker's.
  const ClusterJob& j = (*jobs)[0];
  EXPECT_EQ(j.id, "slurm:1");
  EXPECT_EQ(j.phase, JobPhase::kWaiting);
  EXPECT_EQ(j.problem, "");
  EXPECT_EQ(j.spec.team(), "research");
  EXPECT_EQ(j.spec.cluster(), "hpc");
  EXPECT_EQ(j.spec.replicas(), 2);                  // two nodes
  EXPECT_EQ(j.spec.per_replica().at("gpu"), 4);     // four H100s each
  EXPECT_EQ(j.spec.priority(), -10);                // nice 10
  EXPECT_TRUE(j.spec.requeue());
  EXPECT_EQ(j.spec.labels().at("slurm_user"), "ada");
}

TEST(ParseSqueue, PhasesFollowSlurmStates) {
  auto jobs = ParseSqueue(kSqueue, Options());
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ((*jobs)[1].phase, JobPhase::kRunning);
  EXPECT_EQ((*jobs)[1].spec.priority(), 0);
  EXPECT_FALSE((*jobs)[1].spec.requeue());
  EXPECT_EQ((*jobs)[1].note, "tidegate: admitted");
  EXPECT_EQ((*jobs)[4].phase, JobPhase::kEnded);
  EXPECT_EQ((*jobs)[4].spec.replicas(), 3);  // gres per task: one replica per task
  EXPECT_EQ((*jobs)[5].phase, JobPhase::kPending);
}

TEST(ParseSqueue, BadInputStaysHeldWithAReason) {
  auto jobs = ParseSqueue(kSqueue, Options());
  ASSERT_TRUE(jobs.ok());
  EXPECT_THAT((*jobs)[2].problem, HasSubstr("no account"));
  EXPECT_THAT((*jobs)[3].problem, HasSubstr("gres 'fpga'"));
  EXPECT_EQ((*jobs)[3].phase, JobPhase::kWaiting);
}

TEST(ParseSqueue, GresTypeMapsToAResourceWhenAsked) {
  SlurmOptions o = Options();
  o.type_resource["h100"] = "h100";
  auto jobs = ParseSqueue(kSqueue, o);
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ((*jobs)[0].spec.per_replica().at("h100"), 4);
  EXPECT_EQ((*jobs)[0].spec.per_replica().count("gpu"), 0u);
}

TEST(ParseSqueue, PartitionFilter) {
  SlurmOptions o = Options();
  o.partitions = {"cpu"};
  auto jobs = ParseSqueue(kSqueue, o);
  ASSERT_TRUE(jobs.ok());
  EXPECT_TRUE(jobs->empty());
}

TEST(ParseSqueue, RefusesAnotherDocument) {
  EXPECT_FALSE(ParseSqueue("{\"nodes\": []}", Options()).ok());
  EXPECT_FALSE(ParseSqueue("not json", Options()).ok());
}

TEST(ParseSinfo, CountsGpusOfUsableNodes) {
  constexpr char kSinfo[] = R"({"nodes": [
    {"name": "n1", "state": "mixed", "state_flags": [], "gres": "gpu:h100:8", "partitions": ["gpu"]},
    {"name": "n2", "state": "idle", "state_flags": ["DRAIN"], "gres": "gpu:h100:8", "partitions": ["gpu"]},
    {"name": "n3", "state": "down", "state_flags": [], "gres": "gpu:a100:4", "partitions": ["gpu"]},
    {"name": "n4", "state": "idle", "state_flags": [], "gres": "gpu:a100:4(S:0),gpu:h100:2", "partitions": ["gpu"]}
  ]})";
  auto cap = ParseSinfo(kSinfo, Options());
  ASSERT_TRUE(cap.ok()) << cap.status();
  EXPECT_EQ(cap->at("gpu"), 14);  // n1 8 + n4 4 + 2; n2 drained, n3 down
  SlurmOptions o = Options();
  o.type_resource["a100"] = "a100";
  cap = ParseSinfo(kSinfo, o);
  ASSERT_TRUE(cap.ok());
  EXPECT_EQ(cap->at("gpu"), 10);
  EXPECT_EQ(cap->at("a100"), 4);
}

TEST(RunCommand, ReturnsStdoutOrStderr) {
  auto ok = RunCommand({"echo", "hello"});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, "hello\n");
  auto bad = RunCommand({"sh", "-c", "echo oops >&2; exit 3"});
  EXPECT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("oops"));
}

}  // namespace
}  // namespace tidegate::adapters
