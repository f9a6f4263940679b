#include "ledger/sql_store.h"

#include <utility>

#include "ledger/batch_rules.h"
#include "ledger/journal_damage.h"

namespace tidegate::ledger {

absl::Status SqlStore::Commit(const Batch& batch) {
  if (read_only_) return absl::FailedPreconditionError("ledger store is open read-only");
  if (batch.journal.empty() && batch.jobs.empty() && batch.usage.empty() && batch.loans.empty() &&
      !batch.snapshot.has_value()) {
    return absl::OkStatus();
  }
  return CommitInTransaction(batch);
}

absl::Status SqlStore::WriteBatch(const Batch& batch) {
  absl::StatusOr<int64_t> last = LastSeq();
  if (!last.ok()) return last.status();
  TIDEGATE_RETURN_IF_ERROR(ValidateBatch(batch, *last));
  for (const JournalRecord& record : batch.journal) {
    TIDEGATE_RETURN_IF_ERROR(InsertJournal(record));
  }
  for (const JobRow& job : batch.jobs) {
    TIDEGATE_RETURN_IF_ERROR(UpsertJob(job));
  }
  for (const UsageRow& row : batch.usage) {
    TIDEGATE_RETURN_IF_ERROR(AddUsage(row));
  }
  for (const LoanRow& row : batch.loans) {
    TIDEGATE_RETURN_IF_ERROR(AddLoan(row));
  }
  if (batch.snapshot.has_value()) {
    TIDEGATE_RETURN_IF_ERROR(PutSnapshot(*batch.snapshot, SnapshotChecksum(*batch.snapshot)));
    TIDEGATE_RETURN_IF_ERROR(PruneSnapshots(kLatestSnapshotsKept));
  }
  return absl::OkStatus();
}

absl::StatusOr<SnapshotRecord> CheckedSnapshot(SnapshotRecord snapshot, std::optional<uint32_t> stored_checksum) {
  if (stored_checksum.has_value()) {
    TIDEGATE_RETURN_IF_ERROR(CheckStoredSnapshot(snapshot, *stored_checksum));
  }
  return snapshot;
}

}  // namespace tidegate::ledger
