// The Store conformance suite (store_conformance.h), its snapshots: the
// earliest and latest kept, damage reported by seq, and snapshots written in
// parts over several commits, read only once their row is committed.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "ledger/journal_damage.h"
#include "ledger/store_conformance.h"
#include "ledger/store_conformance_support.h"

namespace tidegate::ledger {
namespace {

using ::testing::FieldsAre;
using ::testing::HasSubstr;

// The initial snapshot "initial" at seq 0, then journal entries 1..last, each
// committed with a snapshot "after SEQ" at 1000 * SEQ ms.
absl::Status CommitSnapshotsThrough(Store& store, int64_t last) {
  Batch initial;
  initial.snapshot = SnapshotRecord{0, 0, "initial"};
  if (absl::Status s = store.Commit(initial); !s.ok()) return s;
  for (int64_t seq = 1; seq <= last; ++seq) {
    Batch batch = Entries(seq, seq);
    batch.snapshot = SnapshotRecord{seq, 1000 * seq, absl::StrCat("after ", seq)};
    if (absl::Status s = store.Commit(batch); !s.ok()) return s;
  }
  return absl::OkStatus();
}

TEST_P(StoreConformanceTest, KeepsTheEarliestAndTheLatestSnapshot) {
  ASSERT_TRUE(CommitSnapshotsThrough(store(), 8).ok());
  EXPECT_THAT(store().EarliestSnapshot().value().value(), FieldsAre(0, 0, "initial"));
  EXPECT_THAT(store().LatestSnapshot().value().value(), FieldsAre(8, 8000, "after 8"));

  Batch again;  // a second snapshot at the same seq replaces the first
  again.snapshot = SnapshotRecord{8, 9000, "after 8, again"};
  ASSERT_TRUE(store().Commit(again).ok());
  EXPECT_THAT(store().LatestSnapshot().value().value(), FieldsAre(8, 9000, "after 8, again"));
}

TEST_P(StoreConformanceTest, ADamagedSnapshotIsDataLossNamingItsSeqAndOlderOnesStayReadable) {
  ASSERT_TRUE(CommitSnapshotsThrough(store(), 2).ok());
  ASSERT_TRUE(harness().CorruptSnapshotPayload(2).ok());
  absl::StatusOr<std::optional<SnapshotRecord>> latest = store().LatestSnapshot();
  EXPECT_EQ(latest.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(latest.status().message(), HasSubstr("snapshot at seq 2"));
  EXPECT_EQ(DamagedSnapshotSeq(latest.status()), 2);
  EXPECT_THAT(store().SnapshotBefore(2).value().value(), FieldsAre(1, 1000, "after 1"));
  EXPECT_THAT(store().SnapshotBefore(1).value().value(), FieldsAre(0, 0, "initial"));
  EXPECT_EQ(store().SnapshotBefore(0).value(), std::nullopt);
}

TEST_P(StoreConformanceTest, RefusesASnapshotAfterTheJournalsEnd) {
  Batch batch = Entries(1, 2);
  batch.snapshot = SnapshotRecord{3, 0, "from the future"};
  EXPECT_EQ(store().Commit(batch).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(store().LastSeq().value(), 0);
  EXPECT_EQ(store().LatestSnapshot().value(), std::nullopt);
}

// A snapshot of `payload` at `seq` as the writer sends it: parts of `size`
// bytes, and the row naming them.
std::vector<SnapshotPart> Parts(int64_t seq, const std::string& payload, size_t size) {
  std::vector<SnapshotPart> parts;
  for (size_t at = 0; at < payload.size(); at += size) {
    parts.push_back(SnapshotPart{seq, static_cast<int64_t>(parts.size()), payload.substr(at, size)});
  }
  return parts;
}

PartedSnapshot RowOf(int64_t seq, int64_t at_ms, const std::string& payload, size_t size) {
  const int64_t parts = static_cast<int64_t>((payload.size() + size - 1) / size);
  return PartedSnapshot{seq, at_ms, parts, SnapshotChecksum(SnapshotRecord{seq, at_ms, payload})};
}

TEST_P(StoreConformanceTest, ASnapshotWrittenInPartsOverSeveralCommitsReadsBackWholeOnlyOnceItsRowIsCommitted) {
  Batch initial;
  initial.snapshot = SnapshotRecord{0, 0, "initial"};
  ASSERT_TRUE(store().Commit(initial).ok());
  const std::string payload("state\0after 3, in parts", 24);  // bytes, not text
  const std::vector<SnapshotPart> parts = Parts(3, payload, 5);
  ASSERT_EQ(parts.size(), 5u);
  ASSERT_TRUE(store().Commit(Entries(1, 3)).ok());
  for (size_t i = 0; i + 1 < parts.size(); ++i) {  // one part per commit, beside journal entries
    Batch batch = Entries(4 + static_cast<int64_t>(i), 4 + static_cast<int64_t>(i));
    batch.snapshot_parts = {parts[i]};
    ASSERT_TRUE(store().Commit(batch).ok());
    EXPECT_THAT(store().LatestSnapshot().value().value(), FieldsAre(0, 0, "initial"));  // no row yet
  }
  EXPECT_EQ(store().UnfinishedSnapshotParts().value(), 4);
  Batch last;
  last.snapshot_parts = {parts.back()};
  last.parted_snapshot = RowOf(3, 3000, payload, 5);
  ASSERT_TRUE(store().Commit(last).ok());

  EXPECT_THAT(store().LatestSnapshot().value().value(), FieldsAre(3, 3000, payload));
  EXPECT_THAT(store().SnapshotBefore(4).value().value(), FieldsAre(3, 3000, payload));
  EXPECT_THAT(store().EarliestSnapshot().value().value(), FieldsAre(0, 0, "initial"));
  EXPECT_EQ(store().UnfinishedSnapshotParts().value(), 0);
}

TEST_P(StoreConformanceTest, PartsWithoutARowAreNeverReadAndTheNextSnapshotRowDeletesThem) {
  Batch first = Entries(1, 2);
  first.snapshot = SnapshotRecord{1, 1000, "after 1"};
  ASSERT_TRUE(store().Commit(first).ok());
  Batch abandoned;  // a writer that stopped midway: parts of seq 2, no row
  abandoned.snapshot_parts = Parts(2, "abandoned state", 4);
  ASSERT_TRUE(store().Commit(abandoned).ok());
  EXPECT_THAT(store().LatestSnapshot().value().value(), FieldsAre(1, 1000, "after 1"));
  EXPECT_EQ(store().SnapshotBefore(3).value().value().seq, 1);
  EXPECT_EQ(store().UnfinishedSnapshotParts().value(), 4);

  Batch next = Entries(3, 4);
  next.snapshot_parts = Parts(4, "state after 4", 6);
  next.parted_snapshot = RowOf(4, 4000, "state after 4", 6);
  ASSERT_TRUE(store().Commit(next).ok());
  EXPECT_EQ(store().UnfinishedSnapshotParts().value(), 0);
  EXPECT_THAT(store().LatestSnapshot().value().value(), FieldsAre(4, 4000, "state after 4"));

  Batch whole = Entries(5, 5);  // a whole snapshot row deletes stray parts too
  ASSERT_TRUE(store().Commit(whole).ok());
  Batch stray;
  stray.snapshot_parts = Parts(5, "stray", 2);
  ASSERT_TRUE(store().Commit(stray).ok());
  Batch row;
  row.snapshot = SnapshotRecord{5, 5000, "after 5"};
  ASSERT_TRUE(store().Commit(row).ok());
  EXPECT_EQ(store().UnfinishedSnapshotParts().value(), 0);
  EXPECT_THAT(store().SnapshotBefore(5).value().value(), FieldsAre(4, 4000, "state after 4"));
}

TEST_P(StoreConformanceTest, RefusesAPartedRowWhosePartsAreNotAllStoredAndWritesNothing) {
  ASSERT_TRUE(store().Commit(Entries(1, 2)).ok());
  std::vector<SnapshotPart> parts = Parts(2, "state after 2", 4);
  parts.erase(parts.begin() + 1);
  Batch missing = Entries(3, 3);
  missing.snapshot_parts = parts;
  missing.parted_snapshot = RowOf(2, 2000, "state after 2", 4);
  const std::string before = Dump(store());
  EXPECT_EQ(store().Commit(missing).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Dump(store()), before);
  EXPECT_EQ(store().UnfinishedSnapshotParts().value(), 0);

  Batch future;
  future.snapshot_parts = Parts(3, "from the future", 4);
  EXPECT_EQ(store().Commit(future).code(), absl::StatusCode::kFailedPrecondition);
  Batch no_parts;
  no_parts.parted_snapshot = PartedSnapshot{2, 2000, 0, 0};
  EXPECT_EQ(store().Commit(no_parts).code(), absl::StatusCode::kInvalidArgument);
  Batch both;
  both.snapshot = SnapshotRecord{2, 2000, "whole"};
  both.snapshot_parts = Parts(2, "state after 2", 4);
  both.parted_snapshot = RowOf(2, 2000, "state after 2", 4);
  EXPECT_EQ(store().Commit(both).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Dump(store()), before);
}

TEST_P(StoreConformanceTest, ADamagedPartedSnapshotIsDataLossNamingItsSeqAndTheOneBeforeIsRead) {
  Batch first = Entries(1, 1);
  first.snapshot = SnapshotRecord{1, 1000, "after 1"};
  ASSERT_TRUE(store().Commit(first).ok());
  Batch parted = Entries(2, 2);
  parted.snapshot_parts = Parts(2, "state after 2", 4);
  parted.parted_snapshot = RowOf(2, 2000, "state after 2", 4);
  ASSERT_TRUE(store().Commit(parted).ok());
  absl::Status hook = harness().CorruptSnapshotPayload(2);
  if (absl::IsUnimplemented(hook)) GTEST_SKIP() << hook.message();
  ASSERT_TRUE(hook.ok()) << hook;

  absl::StatusOr<std::optional<SnapshotRecord>> latest = store().LatestSnapshot();
  EXPECT_EQ(latest.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(DamagedSnapshotSeq(latest.status()), 2);
  EXPECT_THAT(store().SnapshotBefore(2).value().value(), FieldsAre(1, 1000, "after 1"));
}

}  // namespace
}  // namespace tidegate::ledger
