// What the two SQL stores (sqlite_store.cc, postgres_store.cc) share, so the
// rules of a commit and of reading snapshots are written once: Commit's
// preamble (read-only, empty batches) and the record of its seq
// (acked_seq.h), the order a batch's rows are written in inside the
// transaction, and the snapshot accessors on one query per kind. Each store
// supplies its transaction and one statement per row kind.
//
// Threading: as the store that derives from it.
#ifndef TIDEGATE_LEDGER_SQL_STORE_H_
#define TIDEGATE_LEDGER_SQL_STORE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ledger/acked_seq.h"
#include "ledger/store.h"

// Returns a failed absl::Status from the enclosing function.
#define TIDEGATE_RETURN_IF_ERROR(expr)                 \
  do {                                                 \
    if (absl::Status s_ = (expr); !s_.ok()) return s_; \
  } while (0)

namespace tidegate::ledger {

class SqlStore : public Store {
 public:
  explicit SqlStore(bool read_only) : read_only_(read_only) {}

  // FAILED_PRECONDITION on a read-only store; an empty batch writes nothing
  // (no transaction); otherwise CommitInTransaction, then the batch's last
  // seq goes to the acknowledged-seq record, if the store keeps one.
  absl::Status Commit(const Batch& batch) final;

  // Writers only: records each committed seq in `file` (acked_seq.h), off
  // the commit's path. The record is flushed to the last commit when the
  // store is destroyed.
  void RecordAckedSeqIn(AckedSeqFile file) { acked_ = std::make_unique<AckedSeqRecorder>(std::move(file)); }

  absl::StatusOr<std::optional<SnapshotRecord>> LatestSnapshot() final {
    return ReadSnapshot(SnapshotQuery::kLatest, std::nullopt);
  }
  absl::StatusOr<std::optional<SnapshotRecord>> EarliestSnapshot() final {
    return ReadSnapshot(SnapshotQuery::kEarliest, std::nullopt);
  }
  absl::StatusOr<std::optional<SnapshotRecord>> SnapshotBefore(int64_t seq) final {
    return ReadSnapshot(SnapshotQuery::kBefore, seq);
  }

 protected:
  enum class SnapshotQuery { kLatest, kEarliest, kBefore };

  // The snapshot `which` selects (kBefore: the newest with seq < `bound`),
  // passed through CheckedSnapshot.
  virtual absl::StatusOr<std::optional<SnapshotRecord>> ReadSnapshot(SnapshotQuery which,
                                                                     std::optional<int64_t> bound) = 0;

  // One transaction around WriteBatch (plus what the store checks before it
  // commits); nothing of the batch stays when it fails.
  virtual absl::Status CommitInTransaction(const Batch& batch) = 0;

  // Inside the transaction: validates `batch` against the committed journal
  // (batch_rules.h), then writes journal, jobs, usage, loans and the
  // snapshot, and prunes old snapshots.
  absl::Status WriteBatch(const Batch& batch);

  // One statement each, inside the transaction.
  virtual absl::Status InsertJournal(const JournalRecord& record) = 0;
  // A batch's journal records in order; by default InsertJournal for each.
  virtual absl::Status InsertJournalRecords(const std::vector<JournalRecord>& records) {
    for (const JournalRecord& record : records) TIDEGATE_RETURN_IF_ERROR(InsertJournal(record));
    return absl::OkStatus();
  }
  virtual absl::Status UpsertJob(const JobRow& job) = 0;
  virtual absl::Status AddUsage(const UsageRow& row) = 0;
  virtual absl::Status AddLoan(const LoanRow& row) = 0;
  virtual absl::Status PutSnapshot(const SnapshotRecord& snapshot, uint32_t checksum) = 0;
  // Deletes snapshots but the earliest and the `kept` latest.
  virtual absl::Status PruneSnapshots(int kept) = 0;
  // Parted snapshots (store.h SnapshotPart): an upsert by (seq, index); how
  // many of parts 0..parts-1 of `seq` are stored; the row; and the deletion
  // of every part no parted row names, after a snapshot row was written.
  virtual absl::Status PutSnapshotPart(const SnapshotPart& part) = 0;
  virtual absl::StatusOr<int64_t> CountSnapshotParts(int64_t seq, int64_t parts) = 0;
  virtual absl::Status PutPartedSnapshot(const PartedSnapshot& snapshot) = 0;
  virtual absl::Status DeleteUnnamedSnapshotParts() = 0;

 private:
  const bool read_only_;
  std::unique_ptr<AckedSeqRecorder> acked_;
};

// A snapshot read back from its row: DATA_LOSS (journal_damage.h) when its
// stored checksum does not match; rows from before checksums (NULL) pass.
absl::StatusOr<SnapshotRecord> CheckedSnapshot(SnapshotRecord snapshot, std::optional<uint32_t> stored_checksum);
// A parted snapshot from its row (`row`'s payload is ignored) and its parts
// as read, (index, bytes) in index order: DATA_LOSS (journal_damage.h) when
// parts 0..parts-1 are not all there or the checksum does not match.
absl::StatusOr<SnapshotRecord> AssembledSnapshot(SnapshotRecord row, int64_t parts, uint32_t stored_checksum,
                                                 const std::vector<std::pair<int64_t, std::string>>& read);

}  // namespace tidegate::ledger

#endif  // TIDEGATE_LEDGER_SQL_STORE_H_
