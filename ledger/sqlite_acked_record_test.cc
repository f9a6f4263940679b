// The SQLite store's record of the last acknowledged seq (LEDGER.acked,
// acked_seq.h): a journal that ends before it is refused as data loss, the
// record catches up off the commit's path, and it starts anew or is checked
// when a file is created.
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ledger/acked_seq.h"
#include "ledger/sqlite_test_support.h"

namespace tidegate::ledger {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A lost WAL drops the newest commits; the raw DELETE stands in for it.
TEST_F(SqliteStoreTest, AJournalThatEndsBeforeTheAcknowledgedSeqIsRefused) {
  {
    auto store = OpenSqliteStore(path_, {}).value();
    for (int64_t seq = 1; seq <= 3; ++seq) {
      Batch batch;
      batch.journal = {Entry(seq)};
      ASSERT_TRUE(store->Commit(batch).ok());
    }
  }
  EXPECT_EQ(ReadAckedSeq(path_).value(), 3);
  ASSERT_TRUE(RawDb(path_).Exec("DELETE FROM journal WHERE seq = 3").ok());
  auto reopened = OpenSqliteStore(path_, {});
  EXPECT_EQ(reopened.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(reopened.status().message(),
              HasSubstr("the journal ends at seq 2 but seq 3 was acknowledged (" + path_ + ".acked)"));
  // Removing the record accepts the loss.
  std::filesystem::remove(path_ + ".acked");
  EXPECT_TRUE(OpenSqliteStore(path_, {}).ok());
}

// The record is written off the commit's path: it catches up with the last
// commit while the store stays open.
TEST_F(SqliteStoreTest, TheAcknowledgedRecordCatchesUpWithTheLastCommit) {
  auto store = OpenSqliteStore(path_, {}).value();
  for (int64_t seq = 1; seq <= 20; ++seq) {
    Batch batch;
    batch.journal = {Entry(seq)};
    ASSERT_TRUE(store->Commit(batch).ok());
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  absl::StatusOr<std::optional<int64_t>> acked = ReadAckedSeq(path_);
  while (acked.ok() && acked->value_or(0) < 20 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
    acked = ReadAckedSeq(path_);
  }
  ASSERT_TRUE(acked.ok()) << acked.status();
  EXPECT_EQ(*acked, 20);
}

// A record function that holds its first call until released, so the test
// can advance past it while a sync is in flight.
class HeldRecords {
 public:
  absl::Status Record(int64_t seq) {
    std::unique_lock<std::mutex> lock(mu_);
    recorded_.push_back(seq);
    changed_.notify_all();
    changed_.wait(lock, [this] { return released_ || recorded_.size() > 1; });
    return absl::OkStatus();
  }
  void AwaitFirst() {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(lock, [this] { return !recorded_.empty(); });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    changed_.notify_all();
  }
  std::vector<int64_t> recorded() {
    std::lock_guard<std::mutex> lock(mu_);
    return recorded_;
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<int64_t> recorded_;
  bool released_ = false;
};

// Seqs advanced while a sync is in flight are coalesced into one record, and
// Close (a clean shutdown) records the last seq even when the thread had not
// picked it up yet.
TEST(AckedSeqRecorderTest, CoalescesWhileASyncIsInFlightAndCloseFlushesTheLastSeq) {
  HeldRecords records;
  AckedSeqRecorder recorder([&](int64_t seq) { return records.Record(seq); });
  ASSERT_TRUE(recorder.Advance(1));
  records.AwaitFirst();  // the sync of seq 1 is in flight
  for (int64_t seq = 2; seq <= 5; ++seq) ASSERT_TRUE(recorder.Advance(seq));
  std::thread closing([&] { recorder.Close(); });
  // Close has begun once Advance is refused; only then does the held sync
  // return, so the thread cannot have picked up seq 5 itself.
  while (recorder.Advance(5)) std::this_thread::yield();
  records.Release();
  closing.join();
  EXPECT_THAT(records.recorded(), ElementsAre(1, 5));
  EXPECT_FALSE(recorder.Advance(6));
}

// A record starts at least the gap after the previous one ended, however
// fast commits come: each record here advances the next seq at once, and the
// next still waits for the gap.
TEST(AckedSeqRecorderTest, ARecordStartsAtLeastTheGapAfterThePreviousEnded) {
  constexpr auto kGap = std::chrono::milliseconds(20);
  std::mutex mu;
  std::condition_variable changed;
  std::vector<std::chrono::steady_clock::time_point> starts, ends;
  AckedSeqRecorder* recorder = nullptr;
  AckedSeqRecorder gapped(
      [&](int64_t seq) {
        std::lock_guard<std::mutex> lock(mu);
        starts.push_back(std::chrono::steady_clock::now());
        recorder->Advance(seq + 1);
        changed.notify_all();
        ends.push_back(std::chrono::steady_clock::now());
        return absl::OkStatus();
      },
      kGap);
  recorder = &gapped;
  ASSERT_TRUE(gapped.Advance(1));
  {
    std::unique_lock<std::mutex> lock(mu);
    changed.wait(lock, [&] { return starts.size() >= 4; });
  }
  gapped.Close();
  std::lock_guard<std::mutex> lock(mu);
  for (size_t i = 1; i < 4; ++i) EXPECT_GE(starts[i] - ends[i - 1], kGap) << "record " << i;
}

// A clean shutdown records the last seq at once, even in the middle of a gap.
TEST(AckedSeqRecorderTest, CloseDoesNotWaitOutTheGap) {
  std::mutex mu;
  std::condition_variable changed;
  std::vector<int64_t> recorded;
  AckedSeqRecorder recorder(
      [&](int64_t seq) {
        std::lock_guard<std::mutex> lock(mu);
        recorded.push_back(seq);
        changed.notify_all();
        return absl::OkStatus();
      },
      std::chrono::hours(1));
  ASSERT_TRUE(recorder.Advance(1));
  {
    std::unique_lock<std::mutex> lock(mu);
    changed.wait(lock, [&] { return !recorded.empty(); });
  }
  ASSERT_TRUE(recorder.Advance(2));
  recorder.Close();  // without waking the gap's wait, this would take an hour
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_THAT(recorded, ElementsAre(1, 2));
}

TEST_F(SqliteStoreTest, ANewLedgerStartsANewRecord) {
  {
    auto store = OpenSqliteStore(path_, {}).value();
    Batch batch;
    batch.journal = {Entry(1)};
    ASSERT_TRUE(store->Commit(batch).ok());
  }
  std::filesystem::remove(path_);
  std::filesystem::remove(path_ + "-wal");
  std::filesystem::remove(path_ + "-shm");
  SqliteOptions init;
  init.init = true;
  ASSERT_TRUE(OpenSqliteStore(path_, init).ok());  // created on purpose
  EXPECT_EQ(ReadAckedSeq(path_).value(), 0);
}

// Only the broker's --init starts a new record: a tool that creates a file
// where a ledger was lost must not erase the evidence of the loss.
TEST_F(SqliteStoreTest, CreatingAFileWithoutInitKeepsAndChecksTheRecord) {
  {
    auto store = OpenSqliteStore(path_, {}).value();
    Batch batch;
    batch.journal = {Entry(1), Entry(2)};
    ASSERT_TRUE(store->Commit(batch).ok());
  }
  std::filesystem::remove(path_);
  std::filesystem::remove(path_ + "-wal");
  std::filesystem::remove(path_ + "-shm");
  auto created = OpenSqliteStore(path_, {});
  EXPECT_EQ(created.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(created.status().message(), HasSubstr("seq 2 was acknowledged"));
  EXPECT_EQ(ReadAckedSeq(path_).value(), 2);
}

TEST_F(SqliteStoreTest, WithoutCreateAMissingOrTablelessFileIsRefused) {
  SqliteOptions no_create;
  no_create.create = false;
  EXPECT_EQ(OpenSqliteStore(path_, no_create).status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(std::filesystem::exists(path_));
  std::ofstream(path_).close();
  auto empty = OpenSqliteStore(path_, no_create);
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(empty.status().message(), HasSubstr("holds no tables"));
}

}  // namespace
}  // namespace tidegate::ledger
