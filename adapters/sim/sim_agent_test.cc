// The agent protocol end to end: the real tidegated (tests/support), an Agent
// over a simulated cluster (SimDriver), gRPC between them. The agent runs on
// a manual clock: each step of a wait lets it go to sleep, then moves its
// time by one poll period, so its polls, backoffs and grace deadlines pass
// without real sleeps. Waits are bounded, never timed.
#include <fstream>
#include <functional>
#include <thread>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "adapters/agent/agent.h"
#include "adapters/agent/agent_clock.h"
#include "adapters/sim/sim_driver.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/server_process.h"
#include "tidegate/v1/service.grpc.pb.h"

namespace tidegate::adapters {
namespace {

using ::testing::HasSubstr;

constexpr char kConfig[] = R"(
clusters:
  - {name: sim, kind: simulated, capacity: {gpu: 16}}
teams:
  - {name: research, quota: {gpu: {guaranteed: 8}}}
  - {name: serving, quota: {gpu: {guaranteed: 8}}, preemption: {reclaim: any}}
policy: {default_grace_s: 1, tick_s: 1, requeue_backoff_s: 0}
)";

v1::JobSpec Job(const std::string& id, const std::string& team, int64_t gpus) {
  v1::JobSpec j;
  j.set_job(id);
  j.set_team(team);
  j.set_cluster("sim");
  j.set_replicas(1);
  j.set_requeue(false);
  (*j.mutable_per_replica())["gpu"] = gpus;
  return j;
}

constexpr int64_t kPollMs = 100;

class SimAgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = dir_.File("tidegate.yaml");
    std::ofstream(config_) << kConfig;
    server_ = std::make_unique<testing::ServerProcess>(config_, dir_.File("tidegate.db"));
    ASSERT_TRUE(server_->Start()) << server_->Stderr();
    admission_ = v1::AdmissionService::NewStub(server_->Channel());
    StartAgent();
  }
  void TearDown() override { StopAgent(); }

  void StartAgent() {
    AgentOptions o;
    o.cluster = "sim";
    o.kind = v1::CLUSTER_KIND_SIMULATED;
    o.agent_id = "sim-test";
    o.poll_ms = kPollMs;
    o.clock = &clock_;
    agent_ = std::make_unique<Agent>(o, server_->Channel(), &cluster_);
    thread_ = std::thread([this] { agent_->Run(); });
  }
  void StopAgent() {
    if (!agent_) return;
    agent_->Stop();
    thread_.join();
    agent_.reset();
  }
  // Until `pred` holds, or 30 s of real time: each step waits for the agent
  // to sleep, then moves its clock by a poll period.
  bool WaitFor(const std::function<bool()>& pred) {
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (!pred()) {
      if (absl::Now() > deadline) return false;
      clock_.AdvanceWhenAsleep(kPollMs, absl::Milliseconds(100));
    }
    return true;
  }
  v1::JobState BrokerState(const std::string& id) {
    grpc::ClientContext ctx;
    v1::GetJobRequest req;
    req.set_job(id);
    v1::JobInfo out;
    if (!admission_->GetJob(&ctx, req, &out).ok()) return v1::JOB_STATE_UNSPECIFIED;
    return out.state();
  }

  testing::TempDir dir_;
  std::string config_;
  std::unique_ptr<testing::ServerProcess> server_;
  std::unique_ptr<v1::AdmissionService::Stub> admission_;
  SimDriver cluster_{{{"gpu", 16}}};
  ManualAgentClock clock_{absl::ToUnixMillis(absl::Now())};  // grace deadlines come in the broker's Unix ms
  std::unique_ptr<Agent> agent_;
  std::thread thread_;
};

TEST_F(SimAgentTest, HeldJobWithinQuotaIsAdmittedAndStarted) {
  cluster_.Submit(Job("sim:r1", "research", 8));
  EXPECT_TRUE(WaitFor([&] { return cluster_.PhaseOf("sim:r1") == JobPhase::kRunning; }));
  EXPECT_EQ(BrokerState("sim:r1"), v1::JOB_STATE_ADMITTED);
}

TEST_F(SimAgentTest, JobThatCannotFitStaysHeldWithTheBrokersReason) {
  cluster_.Submit(Job("sim:big", "research", 24));
  EXPECT_TRUE(WaitFor([&] { return !cluster_.NoteOf("sim:big").empty(); }));
  EXPECT_THAT(cluster_.NoteOf("sim:big"), HasSubstr("tidegate: queued"));
  EXPECT_THAT(cluster_.NoteOf("sim:big"), HasSubstr("tidegate job sim:big"));
  EXPECT_EQ(cluster_.PhaseOf("sim:big"), JobPhase::kWaiting);
}

TEST_F(SimAgentTest, BadInputStaysHeldAndIsNeverStarted) {
  cluster_.SubmitBad("sim:bad", "the job has no account");
  cluster_.Submit(Job("sim:nobody", "nobody", 1));
  EXPECT_TRUE(WaitFor([&] { return !cluster_.NoteOf("sim:bad").empty() && !cluster_.NoteOf("sim:nobody").empty(); }));
  EXPECT_THAT(cluster_.NoteOf("sim:bad"), HasSubstr("no account"));
  EXPECT_THAT(cluster_.NoteOf("sim:nobody"), HasSubstr("refused"));
  EXPECT_EQ(cluster_.PhaseOf("sim:bad"), JobPhase::kWaiting);
  EXPECT_EQ(cluster_.PhaseOf("sim:nobody"), JobPhase::kWaiting);
}

TEST_F(SimAgentTest, QueuedJobReleasedByItsUserIsHeldAgain) {
  cluster_.Submit(Job("sim:big", "research", 24));
  ASSERT_TRUE(WaitFor([&] { return BrokerState("sim:big") == v1::JOB_STATE_QUEUED; }));
  cluster_.ReleaseOutside("sim:big");
  EXPECT_TRUE(WaitFor([&] { return cluster_.PhaseOf("sim:big") == JobPhase::kWaiting; }));
  EXPECT_EQ(BrokerState("sim:big"), v1::JOB_STATE_QUEUED);
}

TEST_F(SimAgentTest, ReclaimSignalsTheBorrowerThenStopsItAndStartsTheOwner) {
  cluster_.Submit(Job("sim:r1", "research", 8));
  cluster_.Submit(Job("sim:r2", "research", 8));  // borrows serving's idle 8
  ASSERT_TRUE(WaitFor([&] {
    return cluster_.PhaseOf("sim:r1") == JobPhase::kRunning && cluster_.PhaseOf("sim:r2") == JobPhase::kRunning;
  }));
  cluster_.Submit(Job("sim:s1", "serving", 8));
  EXPECT_TRUE(WaitFor([&] { return cluster_.Signalled("sim:r2") || cluster_.Signalled("sim:r1"); }));
  EXPECT_TRUE(WaitFor([&] { return cluster_.PhaseOf("sim:s1") == JobPhase::kRunning; }));
  // Exactly one borrower was stopped after its grace period.
  const bool r1_gone = cluster_.PhaseOf("sim:r1") == JobPhase::kEnded;
  const bool r2_gone = cluster_.PhaseOf("sim:r2") == JobPhase::kEnded;
  EXPECT_NE(r1_gone, r2_gone);
}

TEST_F(SimAgentTest, RestartedAgentAdoptsJobsThatStartedWithoutTheBroker) {
  cluster_.Submit(Job("sim:r1", "research", 4));
  ASSERT_TRUE(WaitFor([&] { return cluster_.PhaseOf("sim:r1") == JobPhase::kRunning; }));
  StopAgent();
  cluster_.StartOutside(Job("sim:outside", "serving", 4));
  cluster_.Finish("sim:r1");
  StartAgent();
  EXPECT_TRUE(WaitFor([&] { return BrokerState("sim:outside") == v1::JOB_STATE_ADMITTED; }));
  EXPECT_TRUE(WaitFor([&] { return BrokerState("sim:r1") == v1::JOB_STATE_ENDED; }));  // finished, known as ended
}

TEST_F(SimAgentTest, SchedulerOutageLosesNothing) {
  cluster_.Submit(Job("sim:r1", "research", 4));
  ASSERT_TRUE(WaitFor([&] { return cluster_.PhaseOf("sim:r1") == JobPhase::kRunning; }));
  cluster_.SetDown(true);
  cluster_.Submit(Job("sim:r2", "research", 4));
  const int64_t failed = cluster_.failed_observations();
  ASSERT_TRUE(WaitFor([&] { return cluster_.failed_observations() >= failed + 3; }));  // a few failed polls, backing off
  EXPECT_EQ(BrokerState("sim:r1"), v1::JOB_STATE_ADMITTED);
  cluster_.SetDown(false);
  EXPECT_TRUE(WaitFor([&] { return cluster_.PhaseOf("sim:r2") == JobPhase::kRunning; }));
  EXPECT_EQ(BrokerState("sim:r1"), v1::JOB_STATE_ADMITTED);
}

TEST_F(SimAgentTest, BrokerRestartIsReconciledFromTheAgentsView) {
  cluster_.Submit(Job("sim:r1", "research", 4));
  ASSERT_TRUE(WaitFor([&] { return cluster_.PhaseOf("sim:r1") == JobPhase::kRunning; }));
  // The agent holds a channel to the old port: it is restarted on the new
  // one. Stopped first: an idle agent on a clock that does not move would
  // never retry, and gRPC's graceful shutdown waits seconds for its channel.
  StopAgent();
  ASSERT_EQ(server_->Terminate(), 0);
  cluster_.Finish("sim:r1");
  cluster_.Submit(Job("sim:r2", "research", 4));
  ASSERT_TRUE(server_->Start()) << server_->Stderr();  // same ledger, new port
  admission_ = v1::AdmissionService::NewStub(server_->Channel());
  StartAgent();
  EXPECT_TRUE(WaitFor([&] { return cluster_.PhaseOf("sim:r2") == JobPhase::kRunning; }));
  EXPECT_TRUE(WaitFor([&] { return BrokerState("sim:r1") == v1::JOB_STATE_ENDED; }));
}

}  // namespace
}  // namespace tidegate::adapters
