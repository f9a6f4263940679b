// CheckJournal over a memory store damaged through its test hooks, and over
// ForwardingStore wrappers for what a store cannot be made to do directly.
#include "ledger/verify.h"

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ledger/forwarding_store.h"
#include "ledger/memory_store.h"

namespace tidegate::ledger {
namespace {

using ::testing::ElementsAre;
using ::testing::FieldsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::unique_ptr<Store> StoreWithEntries(int64_t last) {
  std::unique_ptr<Store> store = NewMemoryStore();
  Batch batch;
  for (int64_t seq = 1; seq <= last; ++seq) {
    const std::string payload = absl::StrCat("command ", seq);
    batch.journal.push_back({seq, seq, "submit", payload, Checksum(payload)});
  }
  batch.snapshot = SnapshotRecord{last, last, "state"};
  EXPECT_TRUE(store->Commit(batch).ok());
  return store;
}

TEST(ChecksumTest, IsZlibCrc32) {
  EXPECT_EQ(Checksum("hello"), 907060870u);  // python3: zlib.crc32(b"hello")
  EXPECT_EQ(Checksum(""), 0u);
}

TEST(CheckJournalTest, ASoundJournalHasNoProblemsAndReplaysInOrder) {
  auto store = StoreWithEntries(5);
  std::vector<int64_t> replayed;
  auto report = CheckJournal(*store, [&](const JournalRecord& r) {
    replayed.push_back(r.seq);
    return absl::OkStatus();
  });
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->ok());
  EXPECT_EQ(report->intact_entries, 5);
  EXPECT_EQ(report->last_seq, 5);
  EXPECT_EQ(report->latest_snapshot_seq, 5);
  EXPECT_THAT(replayed, ElementsAre(1, 2, 3, 4, 5));
  EXPECT_EQ(FormatReport(*report), "");
}

TEST(CheckJournalTest, AnEmptyJournalIsSound) {
  auto store = NewMemoryStore();
  auto report = CheckJournal(*store);
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->ok());
  EXPECT_EQ(report->last_seq, 0);
  EXPECT_EQ(report->earliest_snapshot_seq, std::nullopt);
}

TEST(CheckJournalTest, ListsEveryCorruptAndMissingEntryAndStopsReplayAtTheFirst) {
  auto store = StoreWithEntries(10);
  ASSERT_TRUE(CorruptMemoryJournalForTest(*store, 3).ok());
  ASSERT_TRUE(DropMemoryJournalEntryForTest(*store, 5).ok());
  ASSERT_TRUE(DropMemoryJournalEntryForTest(*store, 6).ok());
  ASSERT_TRUE(CorruptMemoryJournalForTest(*store, 10).ok());
  std::vector<int64_t> replayed;
  auto report = CheckJournal(*store, [&](const JournalRecord& r) {
    replayed.push_back(r.seq);
    return absl::OkStatus();
  });
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_THAT(report->problems,
              ElementsAre(FieldsAre(3, HasSubstr("journal seq 3: stored checksum")),
                          FieldsAre(5, HasSubstr("journal seqs 5..6 missing")),
                          FieldsAre(10, HasSubstr("journal seq 10: stored checksum"))));
  EXPECT_EQ(report->intact_entries, 6);  // 1, 2, 4, 7, 8, 9
  EXPECT_THAT(replayed, ElementsAre(1, 2));
  EXPECT_THAT(FormatReport(*report),
              HasSubstr("journal seqs 5..6 missing (next stored entry is seq 7)\n"));
}

TEST(CheckJournalTest, AReplayErrorIsAProblemAndEndsTheReplayButNotTheChecks) {
  auto store = StoreWithEntries(5);
  ASSERT_TRUE(CorruptMemoryJournalForTest(*store, 4).ok());
  int calls = 0;
  auto report = CheckJournal(*store, [&](const JournalRecord& r) {
    ++calls;
    return r.seq == 2 ? absl::FailedPreconditionError("job j1 is unknown") : absl::OkStatus();
  });
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(calls, 2);
  EXPECT_THAT(
      report->problems,
      ElementsAre(
          FieldsAre(2, "journal seq 2: replay failed: FAILED_PRECONDITION: job j1 is unknown"),
          FieldsAre(4, HasSubstr("journal seq 4"))));
}

TEST(CheckJournalTest, StopsListingAtTheLimit) {
  auto store = StoreWithEntries(6);
  for (int64_t seq : {1, 3, 5}) ASSERT_TRUE(CorruptMemoryJournalForTest(*store, seq).ok());
  VerifyOptions options;
  options.max_problems = 2;
  auto report = CheckJournal(*store, nullptr, options);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->problems.size(), 2u);
  EXPECT_TRUE(report->truncated);
  EXPECT_THAT(FormatReport(*report), HasSubstr("(more problems not listed)"));
}

TEST(CheckJournalTest, ASnapshotWrittenInPartsIsCheckedWholeAndListedWhenAPartIsDamaged) {
  auto store = StoreWithEntries(4);
  Batch more;
  const std::string payload = "command 5";
  more.journal.push_back({5, 5, "submit", payload, Checksum(payload)});
  more.snapshot_parts = {SnapshotPart{5, 0, "sta"}, SnapshotPart{5, 1, "te"}};
  more.parted_snapshot = PartedSnapshot{5, 5, 2, SnapshotChecksum(SnapshotRecord{5, 5, "state"})};
  ASSERT_TRUE(store->Commit(more).ok());
  auto sound = CheckJournal(*store);
  ASSERT_TRUE(sound.ok()) << sound.status();
  EXPECT_TRUE(sound->ok()) << FormatReport(*sound);
  EXPECT_EQ(sound->latest_snapshot_seq, 5);

  ASSERT_TRUE(CorruptMemorySnapshotForTest(*store, 5).ok());  // its first part
  auto damaged = CheckJournal(*store);
  ASSERT_TRUE(damaged.ok()) << damaged.status();
  EXPECT_THAT(damaged->problems, ElementsAre(FieldsAre(5, HasSubstr("snapshot at seq 5: stored checksum"))));
  EXPECT_EQ(damaged->earliest_snapshot_seq, 4);
}

TEST(CheckJournalTest, ADamagedSnapshotIsListedAndTheOthersStillCount) {
  auto store = StoreWithEntries(4);
  Batch more;
  const std::string payload = "command 5";
  more.journal.push_back({5, 5, "submit", payload, Checksum(payload)});
  more.snapshot = SnapshotRecord{5, 5, "state"};
  ASSERT_TRUE(store->Commit(more).ok());
  ASSERT_TRUE(CorruptMemorySnapshotForTest(*store, 5).ok());
  auto report = CheckJournal(*store);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_THAT(report->problems, ElementsAre(FieldsAre(5, HasSubstr("snapshot at seq 5: stored checksum"))));
  EXPECT_EQ(report->latest_snapshot_seq, 5);
  EXPECT_EQ(report->earliest_snapshot_seq, 4);
}

// A store whose snapshot claims a seq its journal never reached.
class SnapshotFromTheFuture : public ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;
  absl::StatusOr<std::optional<SnapshotRecord>> LatestSnapshot() override {
    return SnapshotRecord{9, 0, "state"};
  }
};

TEST(CheckJournalTest, ASnapshotAfterTheJournalsEndIsAProblem) {
  auto store = StoreWithEntries(3);
  SnapshotFromTheFuture wrapped(store.get());
  auto report = CheckJournal(wrapped);
  ASSERT_TRUE(report.ok());
  EXPECT_THAT(report->problems,
              ElementsAre(FieldsAre(9, "snapshot at seq 9 is after the journal's end (seq 3)")));
}

// A store whose journal read fails as a disk would.
class UnreadableJournal : public ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;
  absl::Status ReadJournal(int64_t,
                           const std::function<absl::Status(const JournalRecord&)>&) override {
    return absl::UnavailableError("disk I/O error");
  }
};

TEST(CheckJournalTest, AStoreFailureIsAnErrorNotAProblem) {
  auto store = StoreWithEntries(3);
  UnreadableJournal wrapped(store.get());
  EXPECT_EQ(CheckJournal(wrapped).status(), absl::UnavailableError("disk I/O error"));
}

}  // namespace
}  // namespace tidegate::ledger
