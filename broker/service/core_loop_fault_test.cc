// The commit-failure path of the real CoreLoop, over a store wrapper that
// fails commits on demand (ledger/forwarding_store.h): a failed commit is
// answered UNAVAILABLE and leaves no trace, reads go on, health says why, and
// writes resume once a commit succeeds again. No process ever aborts.
#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>

#include "api/yaml_loader.h"
#include "broker/service/core_loop.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ledger/forwarding_store.h"
#include "ledger/memory_store.h"

namespace tidegate::service {
namespace {

using ::testing::HasSubstr;

constexpr char kConfig[] = R"(
clusters:
  - {name: a, capacity: {gpu: 8}}
teams:
  - {name: red, quota: {gpu: {guaranteed: 4}}}
  - {name: blue, quota: {gpu: {guaranteed: 4}}}
policy: {default_grace_s: 0, tick_s: 1}
)";

// Commit fails with `failure` while it is set; counts the calls.
class FailingStore : public ledger::ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;
  absl::Status Commit(const ledger::Batch& batch) override {
    ++commits_;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!failure_.ok()) return failure_;
    }
    return target()->Commit(batch);
  }
  void Fail(absl::Status failure) {
    std::lock_guard<std::mutex> lock(mu_);
    failure_ = std::move(failure);
  }
  void Heal() { Fail(absl::OkStatus()); }
  int commits() const { return commits_.load(); }

 private:
  std::mutex mu_;
  absl::Status failure_;
  std::atomic<int> commits_{0};
};

// Records every health change the loop reports.
class HealthLog {
 public:
  void Record(const absl::Status& status) {
    std::lock_guard<std::mutex> lock(mu_);
    changes_.push_back(status);
    cv_.notify_all();
  }
  // Waits (bounded) until the latest change has `ok`.
  bool WaitFor(bool ok) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10),
                        [&] { return !changes_.empty() && changes_.back().ok() == ok; });
  }
  std::vector<absl::Status> changes() {
    std::lock_guard<std::mutex> lock(mu_);
    return changes_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<absl::Status> changes_;
};

v1::Command Submit(const std::string& job, const std::string& team, int64_t gpus) {
  v1::Command command;
  v1::JobSpec* spec = command.mutable_submit();
  spec->set_job(job);
  spec->set_team(team);
  spec->set_replicas(1);
  (*spec->mutable_per_replica())["gpu"] = gpus;
  return command;
}

class CoreLoopFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(api::LoadYamlString(kConfig, "test.yaml", &config_).ok());
    Open(/*retry_ms=*/10);
  }

  void Open(int64_t retry_ms) {
    loop_.reset();
    auto failing = std::make_unique<FailingStore>(memory_.get());
    store_ = failing.get();
    CoreLoopOptions options;
    options.retry_commit_after_ms = retry_ms;
    auto loop = CoreLoop::Open(config_, std::move(failing), clock_, options);
    ASSERT_TRUE(loop.ok()) << loop.status();
    loop_ = *std::move(loop);
    loop_->SetHealthHook([this](const absl::Status& s) { health_.Record(s); });
    loop_->Start();
  }

  absl::StatusOr<Applied> Run(v1::Command command) {
    std::promise<absl::StatusOr<Applied>> answer;
    loop_->Submit(std::move(command), [&](absl::StatusOr<Applied> a) { answer.set_value(std::move(a)); });
    return answer.get_future().get();
  }

  int64_t LedgerSeq() { return *memory_->LastSeq(); }

  v1::Config config_;
  std::unique_ptr<ledger::Store> memory_ = ledger::NewMemoryStore();
  RealClock real_clock_;
  FakeClock fake_clock_{1'700'000'000'000};
  Clock* clock_ = &real_clock_;
  FailingStore* store_ = nullptr;
  HealthLog health_;
  std::unique_ptr<CoreLoop> loop_;
};

TEST_F(CoreLoopFaultTest, AFailedCommitIsAnsweredUnavailableAndLeavesNoTrace) {
  ASSERT_TRUE(Run(Submit("j1", "red", 2)).ok());
  const int64_t acknowledged = LedgerSeq();
  store_->Fail(absl::ResourceExhaustedError("database or disk is full"));

  absl::StatusOr<Applied> refused = Run(Submit("j2", "red", 2));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(refused.status().message(), HasSubstr("database or disk is full"));
  EXPECT_EQ(LedgerSeq(), acknowledged);
  // Reads keep the acknowledged state: j1 and only j1.
  EXPECT_NE(loop_->Published()->FindJob("j1"), nullptr);
  EXPECT_EQ(loop_->Published()->FindJob("j2"), nullptr);
  EXPECT_EQ(loop_->LedgerHealth().code(), absl::StatusCode::kUnavailable);
  ASSERT_TRUE(health_.WaitFor(false));
  EXPECT_THAT(health_.changes().front().message(), HasSubstr("database or disk is full"));
}

TEST_F(CoreLoopFaultTest, WritesResumeOnceACommitSucceedsAgain) {
  store_->Fail(absl::FailedPreconditionError("attempt to write a readonly database"));
  EXPECT_EQ(Run(Submit("j1", "red", 2)).status().code(), absl::StatusCode::kUnavailable);
  ASSERT_TRUE(health_.WaitFor(false));
  store_->Heal();
  // The retry needs no client: a tick tries the ledger and health recovers.
  ASSERT_TRUE(health_.WaitFor(true));
  EXPECT_TRUE(loop_->LedgerHealth().ok());
  absl::StatusOr<Applied> admitted = Run(Submit("j1", "red", 2));
  ASSERT_TRUE(admitted.ok()) << admitted.status();
  EXPECT_NE(admitted->model->FindJob("j1"), nullptr);
}

TEST_F(CoreLoopFaultTest, TheCoreForgetsARefusedCommand) {
  store_->Fail(absl::UnavailableError("disk I/O error"));
  EXPECT_FALSE(Run(Submit("j1", "red", 8)).ok());
  store_->Heal();
  ASSERT_TRUE(health_.WaitFor(true));
  // Had the core kept the refused j1 (8 GPUs), the same id with another spec
  // would be ALREADY_EXISTS and blue's job would not fit.
  absl::StatusOr<Applied> again = Run(Submit("j1", "red", 2));
  ASSERT_TRUE(again.ok()) << again.status();
  for (const core::Event& e : again->events) EXPECT_NE(e.type, core::EventType::kError) << e.reason;
  ASSERT_TRUE(Run(Submit("b1", "blue", 6)).ok());
  EXPECT_EQ(loop_->Published()->FindJob("j1")->state(), v1::JOB_STATE_ADMITTED);
  EXPECT_EQ(loop_->Published()->FindJob("b1")->state(), v1::JOB_STATE_ADMITTED);
  // And the ledger agrees: a broker recovered from it has both jobs admitted.
  loop_->Stop();
  Open(10);
  EXPECT_EQ(loop_->Published()->FindJob("j1")->demand().at("gpu"), 2);
  EXPECT_EQ(loop_->Published()->FindJob("j1")->state(), v1::JOB_STATE_ADMITTED);
  EXPECT_EQ(loop_->Published()->FindJob("b1")->state(), v1::JOB_STATE_ADMITTED);
}

TEST_F(CoreLoopFaultTest, UntilTheRetryWritesAreRefusedWithoutTouchingTheLedger) {
  FakeClock& fake = fake_clock_;
  clock_ = &fake;
  Open(/*retry_ms=*/60'000);
  store_->Fail(absl::ResourceExhaustedError("database or disk is full"));
  EXPECT_FALSE(Run(Submit("j1", "red", 2)).ok());
  const int commits = store_->commits();
  EXPECT_EQ(Run(Submit("j2", "red", 2)).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(Run(Submit("j3", "red", 2)).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(store_->commits(), commits);
  store_->Heal();
  fake.Advance(60'000);
  absl::StatusOr<Applied> retried = Run(Submit("j4", "red", 2));
  ASSERT_TRUE(retried.ok()) << retried.status();
  EXPECT_TRUE(loop_->LedgerHealth().ok());
  EXPECT_NE(loop_->Published()->FindJob("j4"), nullptr);
  EXPECT_EQ(loop_->Published()->FindJob("j2"), nullptr);
}

TEST_F(CoreLoopFaultTest, OpenPassesOverADamagedSnapshotAndReplaysFromAnOlderOne) {
  ASSERT_TRUE(Run(Submit("j1", "red", 2)).ok());
  ASSERT_TRUE(Run(Submit("j2", "blue", 2)).ok());
  loop_->Stop();  // writes a snapshot at the journal's end
  const int64_t end = LedgerSeq();
  ASSERT_EQ(memory_->LatestSnapshot().value()->seq, end);
  ASSERT_TRUE(ledger::CorruptMemorySnapshotForTest(*memory_, end).ok());
  Open(10);
  ASSERT_NE(loop_->Published()->FindJob("j1"), nullptr);
  ASSERT_NE(loop_->Published()->FindJob("j2"), nullptr);
  EXPECT_EQ(loop_->last_seq(), end);
}

}  // namespace
}  // namespace tidegate::service
