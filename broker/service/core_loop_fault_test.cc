// The commit-failure path of the real CoreLoop, over a store wrapper that
// fails commits on demand (ledger/forwarding_store.h): a failed commit is
// answered UNAVAILABLE and leaves no trace, reads go on, health says why, and
// writes resume once a commit succeeds again. No process ever aborts.
#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "api/yaml_loader.h"
#include "broker/service/core_loop.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "broker/service/failing_store_for_tests.h"
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

internal::v1::Command Submit(const std::string& job, const std::string& team, int64_t gpus) {
  internal::v1::Command command;
  v1::JobSpec* spec = command.mutable_submit();
  spec->set_job(job);
  spec->set_team(team);
  spec->set_replicas(1);
  (*spec->mutable_per_replica())["gpu"] = gpus;
  return command;
}

// A fake time one minute into an hour after the real now: the ledger's
// initial state is written at the real time, and a core never goes back.
core::Time FutureStart() {
  constexpr core::Time kHourMs = 3'600'000;
  return (RealClock().NowMs() / kHourMs + 2) * kHourMs + 60'000;
}

class CoreLoopFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(api::LoadYamlString(kConfig, "test.yaml", &config_).ok());
    Open(/*retry_ms=*/10);
  }

  void Open(int64_t retry_ms, CoreLoopOptions options = {}) {
    loop_.reset();
    auto failing = std::make_unique<FailingStore>(memory_.get());
    store_ = failing.get();
    if (replica_ != nullptr) failing->MirrorTo(replica_.get());
    options.retry_commit_after_ms = retry_ms;
    auto loop = CoreLoop::Open(config_, std::move(failing), clock_, options, /*init=*/true);
    ASSERT_TRUE(loop.ok()) << loop.status();
    loop_ = *std::move(loop);
    loop_->SetHealthHook([this](const absl::Status& s) { health_.Record(s); });
    loop_->Start();
  }

  // Reopens the loop on the fake clock (the test moves time itself) and
  // returns that clock.
  FakeClock& OpenOnFakeClock(int64_t retry_ms, CoreLoopOptions options = {}) {
    clock_ = &fake_clock_;
    Open(retry_ms, std::move(options));
    return fake_clock_;
  }

  // Reopens, on the fake clock, on a new ledger whose commits a replica
  // copies until the test says StopMirroring.
  FakeClock& OpenWithReplica(int64_t retry_ms) {
    loop_.reset();
    memory_ = ledger::NewMemoryStore();
    replica_ = ledger::NewMemoryStore();
    return OpenOnFakeClock(retry_ms);
  }

  // A minute on, a refused batch carries the usage of that minute, and the
  // loop stops before any commit succeeds.
  void RefuseAMinuteOfUsageThenStop(FakeClock& fake) {
    fake.Advance(60'000);
    store_->Fail(absl::ResourceExhaustedError("database or disk is full"));
    EXPECT_FALSE(Run(Submit("k", "blue", 1)).ok());
    store_->Heal();
    loop_->Stop();
  }

  absl::StatusOr<Applied> Run(internal::v1::Command command) {
    std::promise<absl::StatusOr<Applied>> answer;
    loop_->Submit(std::move(command), [&](absl::StatusOr<Applied> a) { answer.set_value(std::move(a)); });
    return answer.get_future().get();
  }

  int64_t LedgerSeq() { return *memory_->LastSeq(); }
  // Resource-seconds `team` used, summed over the ledger's usage rows.
  double UsedSeconds(const std::string& team) {
    absl::StatusOr<std::vector<ledger::UsageRow>> rows = memory_->Usage(team, 0);
    EXPECT_TRUE(rows.ok()) << rows.status();
    double used = 0;
    for (const auto& row : rows.value_or(std::vector<ledger::UsageRow>{})) used += row.used;
    return used;
  }

  v1::Config config_;
  std::unique_ptr<ledger::Store> memory_ = ledger::NewMemoryStore();
  std::unique_ptr<ledger::Store> replica_;
  RealClock real_clock_;
  FakeClock fake_clock_{FutureStart()};
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
  FakeClock& fake = OpenOnFakeClock(/*retry_ms=*/60'000);
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

// A fake clock that counts how often the loop reads it, and wakes waiters
// once the count passes a mark: a loop that spins reads it without end.
class CountingClock : public FakeClock {
 public:
  using FakeClock::FakeClock;
  core::Time NowMs() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (++reads_ >= mark_) cv_.notify_all();
    }
    return FakeClock::NowMs();
  }
  int64_t reads() {
    std::lock_guard<std::mutex> lock(mu_);
    return reads_;
  }
  // Whether `more` further reads happen within `within` (real time).
  bool ReadsMore(int64_t more, std::chrono::milliseconds within) {
    std::unique_lock<std::mutex> lock(mu_);
    mark_ = reads_ + more;
    return cv_.wait_for(lock, within, [&] { return reads_ >= mark_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int64_t reads_ = 0;
  int64_t mark_ = INT64_MAX;
};

// While the ledger refuses writes, a due tick or deadline stays due until
// the retry; the loop must sleep until the retry instead of spinning on it.
TEST_F(CoreLoopFaultTest, WhileWritesAreRefusedTheLoopSleepsUntilTheRetry) {
  CountingClock counting(FutureStart());
  clock_ = &counting;
  Open(/*retry_ms=*/3'600'000);
  store_->Fail(absl::ResourceExhaustedError("database or disk is full"));
  EXPECT_FALSE(Run(Submit("j1", "red", 2)).ok());
  counting.Advance(60'000);  // ticks (every 1 s) are due; the retry is not.
  // Wakes the loop, which now sees a due tick.
  EXPECT_EQ(Run(Submit("j2", "red", 2)).status().code(), absl::StatusCode::kUnavailable);
  // A sleeping loop reads the clock a few times per wake-up; a spinning one
  // thousands of times a second.
  EXPECT_FALSE(counting.ReadsMore(10'000, std::chrono::milliseconds(1000)));
  loop_.reset();  // before `counting` goes away
}

// Each retry's commit carries the usage and loans held back from the failed
// ones; rows of the same key are merged, so what is held stays bounded.
TEST_F(CoreLoopFaultTest, HeldBackUsageRowsStayBoundedOverManyFailedRetries) {
  FakeClock& fake = OpenOnFakeClock(/*retry_ms=*/1'000);
  ASSERT_TRUE(Run(Submit("j1", "red", 6)).ok());  // borrows 2 of blue's GPUs: loan rows too
  store_->Fail(absl::ResourceExhaustedError("database or disk is full"));
  std::vector<int> held;
  for (int retry = 0; retry < 40; ++retry) {
    fake.Advance(1'000);  // within one hour and day of the start
    EXPECT_EQ(Run(Submit("k", "blue", 1)).status().code(), absl::StatusCode::kUnavailable);
    held.push_back(store_->held_rows());
  }
  // red and blue gpu usage, one loan row: a few rows, however long it fails.
  EXPECT_GT(held.back(), 0);
  EXPECT_LE(held.back(), 4) << "rows held after 40 failed retries";
  EXPECT_EQ(held.back(), held[5]);
  store_->Heal();
  fake.Advance(1'000);
  ASSERT_TRUE(Run(Submit("k", "blue", 1)).ok());
  // Nothing was lost by merging: red used 6 GPUs for the whole 41 s.
  const double used_s = UsedSeconds("red");
  EXPECT_DOUBLE_EQ(used_s, 6.0 * 41);
}

// The accountant observed the refused batch's usage; after the rollback it
// must observe the acknowledged state again, or refused admissions accrue.
TEST_F(CoreLoopFaultTest, ARefusedAdmissionAccruesNoUsage) {
  FakeClock& fake = OpenOnFakeClock(/*retry_ms=*/60'000);
  ASSERT_TRUE(Run(Submit("j1", "red", 2)).ok());
  store_->Fail(absl::ResourceExhaustedError("database or disk is full"));
  EXPECT_FALSE(Run(Submit("big", "red", 6)).ok());
  fake.Advance(60'000);
  store_->Heal();
  ASSERT_TRUE(Run(Submit("k", "blue", 1)).ok());
  loop_->Stop();  // the final snapshot takes the rows still accumulated
  const double used_s = UsedSeconds("red");
  EXPECT_DOUBLE_EQ(used_s, 2.0 * 60) << "only j1's 2 GPUs for 60 s";
}

// The same when the reload at the refusal fails too (the server is still
// down): the state reloaded later replaces the refused one from the instant
// of the refusal, not from the reload.
TEST_F(CoreLoopFaultTest, ARefusedAdmissionAccruesNoUsageWhileTheLedgerCannotBeRead) {
  FakeClock& fake = OpenOnFakeClock(/*retry_ms=*/60'000);
  ASSERT_TRUE(Run(Submit("j1", "red", 2)).ok());
  store_->Fail(absl::UnavailableError("server closed the connection unexpectedly"));
  store_->FailReads();
  EXPECT_FALSE(Run(Submit("big", "red", 6)).ok());
  fake.Advance(60'000);
  store_->Heal();
  ASSERT_TRUE(Run(Submit("k", "blue", 1)).ok());
  loop_->Stop();
  EXPECT_DOUBLE_EQ(UsedSeconds("red"), 2.0 * 60) << "only j1's 2 GPUs for 60 s";
}

// Usage rows held for the next commit are written by the final snapshot
// when no commit came before the stop.
TEST_F(CoreLoopFaultTest, UsageHeldForARefusedBatchIsWrittenAtStop) {
  FakeClock& fake = OpenOnFakeClock(/*retry_ms=*/60'000);
  ASSERT_TRUE(Run(Submit("j1", "red", 2)).ok());
  RefuseAMinuteOfUsageThenStop(fake);
  EXPECT_DOUBLE_EQ(UsedSeconds("red"), 2.0 * 60) << "j1's 2 GPUs for 60 s";
}

// The same when a periodic snapshot of the current seq exists already (it
// finished while the broker was idle): the stop has no snapshot to write,
// but still the held rows.
TEST_F(CoreLoopFaultTest, UsageHeldForARefusedBatchIsWrittenAtStopAfterAnIdleSnapshot) {
  CoreLoopOptions snapshot_after_every_entry;
  snapshot_after_every_entry.snapshot_every = 1;
  snapshot_after_every_entry.snapshot_journal_ratio = 0;
  FakeClock& fake = OpenOnFakeClock(/*retry_ms=*/60'000, snapshot_after_every_entry);
  ASSERT_TRUE(Run(Submit("j1", "red", 2)).ok());
  const int64_t seq = LedgerSeq();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (memory_->LatestSnapshot().value()->seq < seq && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(memory_->LatestSnapshot().value()->seq, seq) << "the periodic snapshot did not finish";
  RefuseAMinuteOfUsageThenStop(fake);
  EXPECT_DOUBLE_EQ(UsedSeconds("red"), 2.0 * 60) << "j1's 2 GPUs for 60 s";
}

// Usage the accountant had not yet handed over at a refusal is written at
// the stop too, although the core reloaded is older than that observation.
TEST_F(CoreLoopFaultTest, UsageNotYetTakenAtARefusalIsWrittenAtStop) {
  FakeClock& fake = OpenOnFakeClock(/*retry_ms=*/60'000);
  ASSERT_TRUE(Run(Submit("j1", "red", 2)).ok());
  fake.Advance(60'000);
  ASSERT_TRUE(Run(Submit("k", "blue", 1)).ok());  // writes j1's first minute
  fake.Advance(500);  // under accounting_every_ms: the next batch takes no rows
  store_->Fail(absl::ResourceExhaustedError("database or disk is full"));
  EXPECT_FALSE(Run(Submit("k2", "blue", 1)).ok());
  store_->Heal();
  loop_->Stop();
  EXPECT_DOUBLE_EQ(UsedSeconds("red"), 2.0 * 60.5) << "j1's 2 GPUs for 60.5 s";
}

// I/O errors other than disk full or read-only can fail after the WAL holds
// the batch: the answer must not promise that nothing changed.
TEST_F(CoreLoopFaultTest, AnIoErrorDoesNotPromiseThatNothingChanged) {
  store_->Fail(absl::UnavailableError("disk I/O error"));
  absl::StatusOr<Applied> uncertain = Run(Submit("j1", "red", 2));
  EXPECT_EQ(uncertain.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(uncertain.status().message(), HasSubstr("may not have been applied; retrying is safe"));
  EXPECT_THAT(uncertain.status().message(), ::testing::Not(HasSubstr("nothing was changed")));
  loop_->Stop();
  Open(/*retry_ms=*/10);
  store_->Fail(absl::ResourceExhaustedError("database or disk is full"));
  EXPECT_THAT(Run(Submit("j2", "red", 2)).status().message(), HasSubstr("nothing was changed"));
}

// A commit the server made but whose answer was lost (PostgreSQL restarted
// under it): the reloaded core holds the batch, and so must what readers and
// a retry are answered from. Before, the model stayed the one published
// before the failure, so a retry of the same Admit was answered from a model
// without the job.
TEST_F(CoreLoopFaultTest, ABatchCommittedDespiteAFailedCommitIsWhatReadersSee) {
  ASSERT_TRUE(Run(Submit("j1", "red", 4)).ok());
  ASSERT_TRUE(Run(Submit("b1", "blue", 4)).ok());
  store_->FailAfterWriting(absl::UnavailableError("server closed the connection unexpectedly"));
  EXPECT_EQ(Run(Submit("j2", "red", 2)).status().code(), absl::StatusCode::kUnavailable);
  store_->Heal();
  ASSERT_TRUE(health_.WaitFor(true));
  const JobRecord* seen = loop_->Published()->FindRecord("j2");
  ASSERT_NE(seen, nullptr) << "the ledger holds j2, readers do not";
  EXPECT_EQ(seen->state(), v1::JOB_STATE_QUEUED);
  // The retry changes nothing and is answered from a model that has j2.
  absl::StatusOr<Applied> retried = Run(Submit("j2", "red", 2));
  ASSERT_TRUE(retried.ok()) << retried.status();
  ASSERT_NE(retried->model->FindRecord("j2"), nullptr);
  EXPECT_EQ(retried->model->FindRecord("j2")->state(), v1::JOB_STATE_QUEUED);
}

// The usage rows of a commit that was applied despite its error are in the
// ledger: holding them for the next commit would count them twice.
TEST_F(CoreLoopFaultTest, UsageOfACommitAppliedDespiteItsErrorIsCountedOnce) {
  FakeClock& fake = OpenOnFakeClock(/*retry_ms=*/60'000);
  ASSERT_TRUE(Run(Submit("j1", "red", 2)).ok());
  fake.Advance(60'000);
  store_->FailAfterWriting(absl::UnavailableError("server closed the connection unexpectedly"));
  EXPECT_FALSE(Run(Submit("k", "blue", 1)).ok());  // carries j1's first minute
  fake.Advance(60'000);
  store_->Heal();
  ASSERT_TRUE(Run(Submit("k2", "blue", 1)).ok());
  loop_->Stop();
  EXPECT_DOUBLE_EQ(UsedSeconds("red"), 2.0 * 120) << "j1's 2 GPUs for 120 s";
}

// A database that fails over to a replica which missed acknowledged commits
// holds an older state. Writing on would give the lost seqs to other commands
// and serve the older state as current: writes stay refused, even once the
// database answers again, and readers keep what was acknowledged.
TEST_F(CoreLoopFaultTest, ALedgerThatLostAcknowledgedCommitsIsNeverWrittenOn) {
  FakeClock& fake = OpenWithReplica(/*retry_ms=*/60'000);
  ASSERT_TRUE(Run(Submit("j1", "red", 2)).ok());
  store_->StopMirroring();
  ASSERT_TRUE(Run(Submit("j2", "red", 2)).ok());  // acknowledged, not on the replica
  const int64_t replica_seq = *replica_->LastSeq();
  store_->FailOverOnNextCommit();
  EXPECT_EQ(Run(Submit("j3", "red", 2)).status().code(), absl::StatusCode::kUnavailable);

  EXPECT_EQ(loop_->LedgerHealth().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(loop_->LedgerHealth().message(), HasSubstr("acknowledged commits are missing"));
  // Past the retry, with the database answering: still refused, unwritten,
  // and the ledger not even read again.
  const int commits = store_->commits();
  const int recoveries = store_->recoveries();
  fake.Advance(120'000);
  absl::StatusOr<Applied> refused = Run(Submit("j4", "red", 2));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(refused.status().message(), HasSubstr("restart the broker"));
  EXPECT_EQ(store_->recoveries(), recoveries);
  EXPECT_NE(loop_->Published()->FindJob("j2"), nullptr) << "readers keep the acknowledged state";
  EXPECT_EQ(loop_->LedgerHealth().code(), absl::StatusCode::kDataLoss);
  // The loop still wakes on its own (liveness reads its wake-ups).
  fake.Advance(5'000);
  const core::Time later = fake.NowMs();
  bool woke = false;
  for (int i = 0; i < 1000 && !woke; ++i) {  // a tick (1 s) at most, bounded at 10 s
    woke = loop_->LastLoopWakeMs() >= later;
    if (!woke) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(woke);
  loop_->Stop();  // no snapshot at stop either, nor a reload for one
  EXPECT_EQ(store_->commits(), commits);
  EXPECT_EQ(store_->recoveries(), recoveries);
  EXPECT_EQ(*replica_->LastSeq(), replica_seq);
}

// Opening a store with no snapshot and no journal makes a new ledger only
// when asked (tidegated --init); otherwise it is refused, unchanged.
TEST(CoreLoopOpenTest, AStoreWithoutStateIsRefusedUnlessInit) {
  v1::Config config;
  ASSERT_TRUE(api::LoadYamlString(kConfig, "test.yaml", &config).ok());
  std::unique_ptr<ledger::Store> memory = ledger::NewMemoryStore();
  ledger::Batch usage_only;  // what `ledger import-usage` writes
  usage_only.usage.push_back(ledger::UsageRow{"red", "gpu", 0, 3600, 0, 0, 0});
  ASSERT_TRUE(memory->Commit(usage_only).ok());
  RealClock clock;
  auto refused = CoreLoop::Open(config, std::make_unique<ledger::ForwardingStore>(memory.get()), &clock,
                                CoreLoopOptions{}, /*init=*/false);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(), HasSubstr("pass --init"));
  EXPECT_FALSE(memory->LatestSnapshot().value().has_value());
  auto created = CoreLoop::Open(config, std::make_unique<ledger::ForwardingStore>(memory.get()), &clock,
                                CoreLoopOptions{}, /*init=*/true);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_TRUE(memory->LatestSnapshot().value().has_value());
}

}  // namespace
}  // namespace tidegate::service
