// Periodic snapshots of the single writer (core_loop_snapshot.cc): captured by
// a child process and written in parts over later commits, they restore to
// exactly the core's state at their seq; a failed capture leaves the ledger on
// the previous snapshot plus the journal, and a later one succeeds.
#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "broker/ledger_ops/recovery.h"
#include "broker/service/core_loop.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "ledger/forwarding_store.h"

namespace tidegate::service {
namespace {

constexpr char kConfig[] = R"pb(
  clusters { name: "a" capacity { key: "gpu" value: 8 } }
  teams { name: "research" quota { key: "gpu" value { guaranteed: 8 } } }
)pb";

internal::v1::Command Submit(const std::string& id) {
  internal::v1::Command c;
  c.mutable_submit()->set_job(id);
  c.mutable_submit()->set_team("research");
  (*c.mutable_submit()->mutable_per_replica())["gpu"] = 1;
  return c;
}

// What each commit carried, as the writer sent it.
struct CommitShape {
  int64_t last_journal_seq = 0;  // 0: no journal entries
  size_t parts = 0;
  bool parted_row = false;
  bool whole_snapshot = false;
};

class RecordingStore : public ledger::ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;
  absl::Status Commit(const ledger::Batch& batch) override {
    if (refuse_.load()) return absl::ResourceExhaustedError("refused by the test");
    absl::Status status = ForwardingStore::Commit(batch);
    if (status.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      shapes_.push_back({batch.journal.empty() ? 0 : batch.journal.back().seq, batch.snapshot_parts.size(),
                         batch.parted_snapshot.has_value(), batch.snapshot.has_value()});
    }
    return status;
  }
  std::vector<CommitShape> shapes() {
    std::lock_guard<std::mutex> lock(mu_);
    return shapes_;
  }
  // Every later commit fails, as writes after kill -9 never happen.
  void RefuseFromNowOn() { refuse_.store(true); }

 private:
  std::atomic<bool> refuse_{false};
  std::mutex mu_;
  std::vector<CommitShape> shapes_;
};

class CoreLoopSnapshotTest : public ::testing::Test {
 protected:
  void Open(CoreLoopOptions options) {
    v1::Config config;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(kConfig, &config));
    auto loop = CoreLoop::Open(config, std::make_unique<RecordingStore>(memory_.get()), &clock_, options, /*init=*/true);
    ASSERT_TRUE(loop.ok()) << loop.status();
    loop_ = *std::move(loop);
  }
  void Run(internal::v1::Command command) {
    std::promise<absl::Status> answer;
    loop_->Submit(std::move(command), [&](absl::StatusOr<Applied> a) { answer.set_value(a.status()); });
    ASSERT_TRUE(answer.get_future().get().ok());
  }
  // Submits jobs, one batch each, until `done` holds (false at the deadline).
  bool SubmitUntil(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      Run(Submit("j" + std::to_string(next_job_++)));
    }
    return true;
  }
  int64_t LatestSnapshotSeq() {
    auto latest = memory_->LatestSnapshot();
    EXPECT_TRUE(latest.ok()) << latest.status();
    return latest.ok() && latest->has_value() ? (*latest)->seq : -1;
  }
  // The core rebuilt from the initial snapshot and the journal up to `seq`,
  // one command at a time: what a snapshot at `seq` must hold.
  internal::v1::CoreSnapshot Replayed(int64_t seq) {
    internal::v1::CoreSnapshot initial;
    EXPECT_TRUE(initial.ParseFromString(memory_->EarliestSnapshot().value().value().payload));
    auto broker = core::Broker::Restore(initial).value();
    EXPECT_TRUE(memory_
                    ->ReadJournal(0,
                                  [&](const ledger::JournalRecord& rec) {
                                    if (rec.seq > seq) return absl::OkStatus();
                                    internal::v1::Command command;
                                    EXPECT_TRUE(command.ParseFromString(rec.payload));
                                    broker->Apply(command, rec.at_ms);
                                    return absl::OkStatus();
                                  })
                    .ok());
    return broker->Snapshot();
  }

  // Polls, submitting nothing, until the newest snapshot is past `seq` (an
  // idle writer writes a captured snapshot's parts on its own).
  bool WaitForSnapshotAfter(int64_t seq) {
    return WaitUntil([&] { return LatestSnapshotSeq() > seq; });
  }
  static bool WaitUntil(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
  }
  // Payload bytes of the journal entries after `after` up to `upto`.
  int64_t JournalBytes(int64_t after, int64_t upto) {
    int64_t bytes = 0;
    EXPECT_TRUE(memory_
                    ->ReadJournal(after,
                                  [&](const ledger::JournalRecord& rec) {
                                    if (rec.seq <= upto) bytes += static_cast<int64_t>(rec.payload.size());
                                    return absl::OkStatus();
                                  })
                    .ok());
    return bytes;
  }
  // With snapshot_every 5 and the ratio given: the first periodic snapshot
  // (at seq 5, entries only), then one job a batch while the journal since
  // it stays short of ratio × its size. Returns that snapshot's seq and size.
  std::pair<int64_t, int64_t> FirstSnapshotThenJustShortOfTheShare(double ratio) {
    CoreLoopOptions options;
    options.snapshot_every = 5;
    options.snapshot_journal_ratio = ratio;
    Open(options);
    loop_->Start();
    for (int i = 0; i < 5; ++i) Run(Submit("j" + std::to_string(next_job_++)));
    EXPECT_TRUE(WaitForSnapshotAfter(0));
    const ledger::SnapshotRecord first = memory_->LatestSnapshot().value().value();
    EXPECT_EQ(first.seq, 5);
    const int64_t share = static_cast<int64_t>(ratio * static_cast<double>(first.payload.size()));
    // Each job's entry is as long as its serialized command.
    for (int64_t journal = 0;;) {
      const int64_t next = static_cast<int64_t>(Submit("j" + std::to_string(next_job_)).ByteSizeLong());
      if (journal + next >= share) break;
      Run(Submit("j" + std::to_string(next_job_++)));
      journal += next;
    }
    return {first.seq, static_cast<int64_t>(first.payload.size())};
  }

  FakeClock clock_{1'000'000};
  std::unique_ptr<ledger::Store> memory_ = ledger::NewMemoryStore();  // outlives loop_
  int next_job_ = 0;
  std::unique_ptr<CoreLoop> loop_;
};

TEST_F(CoreLoopSnapshotTest, ABackgroundSnapshotIsTheCoresStateAtItsSeqAndNoCommitCarriesTheWholeState) {
  CoreLoopOptions options;
  options.snapshot_every = 20;
  options.snapshot_part_bytes = 64;  // many parts, so many commits
  Open(options);
  auto* recording = dynamic_cast<RecordingStore*>(&loop_->store_for_tests());
  loop_->Start();
  ASSERT_TRUE(SubmitUntil([&] { return LatestSnapshotSeq() > 0; }));
  const ledger::SnapshotRecord stored = memory_->LatestSnapshot().value().value();
  ASSERT_GE(stored.seq, 20);

  internal::v1::CoreSnapshot parsed;
  ASSERT_TRUE(parsed.ParseFromString(stored.payload));
  const internal::v1::CoreSnapshot expected = Replayed(stored.seq);
  std::string diff;
  google::protobuf::util::MessageDifferencer differ;
  differ.ReportDifferencesToString(&diff);
  EXPECT_TRUE(differ.Compare(expected, parsed)) << diff;

  // After the initial state, no commit carried a whole snapshot: parts, one
  // per commit, and the row naming them only after the commit of its seq.
  const std::vector<CommitShape> shapes = recording->shapes();
  size_t parts = 0;
  int64_t row_at = -1;
  ASSERT_FALSE(shapes.empty());
  EXPECT_TRUE(shapes[0].whole_snapshot);  // the initial state, at Open
  for (size_t i = 1; i < shapes.size(); ++i) {
    EXPECT_FALSE(shapes[i].whole_snapshot) << "commit " << i;
    EXPECT_LE(shapes[i].parts, 1u) << "commit " << i;
    parts += shapes[i].parts;
    if (shapes[i].parted_row && row_at < 0) row_at = static_cast<int64_t>(i);
  }
  ASSERT_GE(row_at, 0);
  EXPECT_GT(parts, 1u);
  int64_t seq_at = -1;  // the commit that ended the journal at the snapshot's seq
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (shapes[i].last_journal_seq == stored.seq) seq_at = static_cast<int64_t>(i);
  }
  ASSERT_GE(seq_at, 0);
  EXPECT_GT(row_at, seq_at) << "the snapshot was written with the batch of its own seq";
  EXPECT_EQ(loop_->SnapshotFailures(), 0);
  // The next snapshot may be in progress by now; the final one at Stop
  // replaces it, and its row deletes the parts already written.
  loop_->Stop();
  EXPECT_EQ(memory_->UnfinishedSnapshotParts().value(), 0);
}

TEST_F(CoreLoopSnapshotTest, ACaptureThatHangsIsKilledAfterItsTimeoutAndALaterOneSucceeds) {
  CoreLoopOptions options;
  options.snapshot_every = 5;
  options.snapshot_capture_timeout_ms = 60'000;
  Open(options);
  loop_->FailSnapshotChildrenForTests(1, SnapshotChildFault::kHang);
  loop_->Start();
  // Six batches: the sixth is answered after the fifth started the capture.
  for (int i = 0; i < 6; ++i) Run(Submit("j" + std::to_string(next_job_++)));
  ASSERT_EQ(loop_->SnapshotFailures(), 0);
  clock_.Advance(60'001);
  ASSERT_TRUE(SubmitUntil([&] { return loop_->SnapshotFailures() == 1; }));
  ASSERT_TRUE(SubmitUntil([&] { return LatestSnapshotSeq() > 0; }));
  EXPECT_EQ(loop_->SnapshotFailures(), 1);
  loop_->Stop();
}

TEST_F(CoreLoopSnapshotTest, AFailedCaptureLeavesThePreviousSnapshotAndTheJournalAndALaterOneSucceeds) {
  CoreLoopOptions options;
  options.snapshot_every = 5;
  Open(options);
  loop_->FailSnapshotChildrenForTests(1);
  loop_->Start();
  ASSERT_TRUE(SubmitUntil([&] { return loop_->SnapshotFailures() == 1; }));
  EXPECT_EQ(LatestSnapshotSeq(), 0);  // only the initial state

  // What a restart now would recover: the initial snapshot plus the journal.
  absl::StatusOr<ledger_ops::RecoveredCore> recovered = ledger_ops::RecoverCore(*memory_);
  ASSERT_TRUE(recovered.ok()) << recovered.status();
  EXPECT_EQ(recovered->snapshot_seq, 0);
  EXPECT_GE(recovered->seq, 5);
  std::string diff;
  google::protobuf::util::MessageDifferencer differ;
  differ.ReportDifferencesToString(&diff);
  EXPECT_TRUE(differ.Compare(Replayed(recovered->seq), recovered->broker->Snapshot())) << diff;

  ASSERT_TRUE(SubmitUntil([&] { return LatestSnapshotSeq() > 0; }));
  EXPECT_GE(LatestSnapshotSeq(), 10);
  EXPECT_EQ(loop_->SnapshotFailures(), 1);
  const int64_t snapshot_seq = LatestSnapshotSeq();
  internal::v1::CoreSnapshot parsed;
  ASSERT_TRUE(parsed.ParseFromString(memory_->LatestSnapshot().value().value().payload));
  EXPECT_TRUE(differ.Compare(Replayed(snapshot_seq), parsed)) << diff;
}

TEST_F(CoreLoopSnapshotTest, StopWritesTheFinalSnapshotWholeEvenWithOneInProgress) {
  CoreLoopOptions options;
  options.snapshot_every = 5;
  options.snapshot_part_bytes = 16;
  Open(options);
  loop_->Start();
  // Seq 5 starts a capture; the final snapshot at Stop is due even when no
  // entry came after it, and it is written at once, in one piece.
  for (int i = 0; i < 5; ++i) Run(Submit("j" + std::to_string(next_job_++)));
  loop_->Stop();
  const int64_t last = memory_->LastSeq().value();
  EXPECT_EQ(LatestSnapshotSeq(), last);
  EXPECT_EQ(memory_->UnfinishedSnapshotParts().value(), 0);  // the abandoned one's parts are gone
}

TEST_F(CoreLoopSnapshotTest, ASnapshotWaitsPastSnapshotEveryUntilTheJournalReachesItsShareOfTheLastOne) {
  const auto [first_seq, first_bytes] = FirstSnapshotThenJustShortOfTheShare(/*ratio=*/2.0);
  const int64_t short_at = loop_->last_seq();
  ASSERT_GT(short_at - first_seq, 2 * 5) << "the share must hold the snapshot back well past snapshot_every";
  EXPECT_LT(JournalBytes(first_seq, short_at), 2 * first_bytes);
  // The entry that reaches the share starts the capture at exactly its seq.
  Run(Submit("j" + std::to_string(next_job_++)));
  ASSERT_TRUE(WaitForSnapshotAfter(first_seq));
  EXPECT_EQ(LatestSnapshotSeq(), short_at + 1);
  EXPECT_GE(JournalBytes(first_seq, short_at + 1), 2 * first_bytes);
  EXPECT_EQ(loop_->SnapshotFailures(), 0);
}

TEST_F(CoreLoopSnapshotTest, AFailedCaptureIsRetriedAfterSnapshotEveryEntriesNotAnotherShareOfJournal) {
  const auto [first_seq, first_bytes] = FirstSnapshotThenJustShortOfTheShare(/*ratio=*/2.0);
  const int64_t failed_at = loop_->last_seq() + 1;
  loop_->FailSnapshotChildrenForTests(1);
  Run(Submit("j" + std::to_string(next_job_++)));  // reaches the share; its capture fails
  ASSERT_TRUE(WaitUntil([&] { return loop_->SnapshotFailures() == 1; }));
  // The journal since the last snapshot written is still past its share:
  // snapshot_every more entries start the retry, as for any failure.
  for (int i = 0; i < 5; ++i) Run(Submit("j" + std::to_string(next_job_++)));
  ASSERT_TRUE(WaitForSnapshotAfter(first_seq));
  EXPECT_EQ(LatestSnapshotSeq(), failed_at + 5);
  EXPECT_LT(JournalBytes(failed_at, failed_at + 5), 2 * first_bytes);
}

TEST_F(CoreLoopSnapshotTest, TheFirstPeriodicSnapshotCountsEntriesOnlyNotTheInitialStatesSize) {
  CoreLoopOptions options;
  options.snapshot_every = 5;
  options.snapshot_journal_ratio = 100;  // far more journal than 5 jobs write
  Open(options);
  const int64_t initial_bytes =
      static_cast<int64_t>(memory_->LatestSnapshot().value().value().payload.size());
  loop_->Start();
  for (int i = 0; i < 5; ++i) Run(Submit("j" + std::to_string(next_job_++)));
  ASSERT_LT(JournalBytes(0, 5), 100 * initial_bytes);
  ASSERT_TRUE(WaitForSnapshotAfter(0));
  EXPECT_EQ(LatestSnapshotSeq(), 5);
}

TEST_F(CoreLoopSnapshotTest, ARestartWhileTheShareHoldsASnapshotBackReplaysTheJournalSinceTheLastOne) {
  const auto [first_seq, first_bytes] = FirstSnapshotThenJustShortOfTheShare(/*ratio=*/2.0);
  const int64_t last = loop_->last_seq();
  ASSERT_GT(last - first_seq, 5);
  // What a restart now (after kill -9: no final snapshot) recovers.
  absl::StatusOr<ledger_ops::RecoveredCore> recovered = ledger_ops::RecoverCore(*memory_);
  ASSERT_TRUE(recovered.ok()) << recovered.status();
  EXPECT_EQ(recovered->snapshot_seq, first_seq);
  EXPECT_EQ(recovered->replayed, last - first_seq);
  EXPECT_EQ(recovered->seq, last);
  std::string diff;
  google::protobuf::util::MessageDifferencer differ;
  differ.ReportDifferencesToString(&diff);
  EXPECT_TRUE(differ.Compare(Replayed(last), recovered->broker->Snapshot())) << diff;
  // A second writer opened on the same ledger (never started, so it writes
  // nothing) answers for every job.
  v1::Config config;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(kConfig, &config));
  auto restarted = CoreLoop::Open(config, std::make_unique<ledger::ForwardingStore>(memory_.get()), &clock_,
                                  loop_->options(), /*init=*/false);
  ASSERT_TRUE(restarted.ok()) << restarted.status();
  EXPECT_EQ((*restarted)->last_seq(), last);
  for (int i = 0; i < next_job_; ++i) {
    EXPECT_NE((*restarted)->Published()->FindJob("j" + std::to_string(i)), nullptr) << i;
  }
  // The first writer, still running, counts the journal since its last
  // snapshot: its next entry reaches the share (so does a restarted one's:
  // the next test).
  Run(Submit("j" + std::to_string(next_job_++)));
  ASSERT_TRUE(WaitForSnapshotAfter(first_seq));
  EXPECT_EQ(LatestSnapshotSeq(), last + 1);
}

// A restart does not start the count again: the journal it replayed is
// journal since the snapshot it started from, against that snapshot's size.
TEST_F(CoreLoopSnapshotTest, ARestartedWriterTakesTheNextSnapshotWhereItsPredecessorWould) {
  const auto [first_seq, first_bytes] = FirstSnapshotThenJustShortOfTheShare(/*ratio=*/2.0);
  const int64_t last = loop_->last_seq();
  ASSERT_GT(last - first_seq, 5);
  // Gone without its final snapshot, as after kill -9.
  dynamic_cast<RecordingStore*>(&loop_->store_for_tests())->RefuseFromNowOn();
  loop_.reset();
  ASSERT_EQ(LatestSnapshotSeq(), first_seq);
  CoreLoopOptions options;
  options.snapshot_every = 5;
  options.snapshot_journal_ratio = 2.0;
  Open(options);
  ASSERT_EQ(loop_->last_seq(), last);
  loop_->Start();
  // One entry, fewer than snapshot_every since the restart, reaches the share.
  Run(Submit("j" + std::to_string(next_job_++)));
  ASSERT_TRUE(WaitForSnapshotAfter(first_seq));
  EXPECT_EQ(LatestSnapshotSeq(), last + 1);
  EXPECT_GE(JournalBytes(first_seq, last + 1), 2 * first_bytes);
}

}  // namespace
}  // namespace tidegate::service
