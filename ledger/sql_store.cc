#include "ledger/sql_store.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "ledger/batch_rules.h"
#include "ledger/journal_damage.h"

namespace tidegate::ledger {

absl::Status SqlStore::Commit(const Batch& batch) {
  if (read_only_) return absl::FailedPreconditionError("ledger store is open read-only");
  if (batch.journal.empty() && batch.jobs.empty() && batch.usage.empty() && batch.loans.empty() &&
      !batch.snapshot.has_value() && batch.snapshot_parts.empty() && !batch.parted_snapshot.has_value()) {
    return absl::OkStatus();
  }
  absl::Status status = CommitInTransaction(batch);
  // Recorded off the commit's path; a record left behind only weakens the
  // check for lost commits (acked_seq.h).
  if (status.ok() && acked_ != nullptr && !batch.journal.empty()) acked_->Advance(batch.journal.back().seq);
  return status;
}

absl::Status SqlStore::WriteBatch(const Batch& batch) {
  absl::StatusOr<int64_t> last = LastSeq();
  if (!last.ok()) return last.status();
  TIDEGATE_RETURN_IF_ERROR(ValidateBatch(batch, *last));
  TIDEGATE_RETURN_IF_ERROR(InsertJournalRecords(batch.journal));
  for (const JobRow& job : batch.jobs) {
    TIDEGATE_RETURN_IF_ERROR(UpsertJob(job));
  }
  for (const UsageRow& row : batch.usage) {
    TIDEGATE_RETURN_IF_ERROR(AddUsage(row));
  }
  for (const LoanRow& row : batch.loans) {
    TIDEGATE_RETURN_IF_ERROR(AddLoan(row));
  }
  for (const SnapshotPart& part : batch.snapshot_parts) {
    TIDEGATE_RETURN_IF_ERROR(PutSnapshotPart(part));
  }
  if (batch.snapshot.has_value()) {
    TIDEGATE_RETURN_IF_ERROR(PutSnapshot(*batch.snapshot, SnapshotChecksum(*batch.snapshot)));
  }
  if (const auto& parted = batch.parted_snapshot; parted.has_value()) {
    absl::StatusOr<int64_t> stored = CountSnapshotParts(parted->seq, parted->parts);
    if (!stored.ok()) return stored.status();
    if (*stored != parted->parts) {
      return absl::FailedPreconditionError(absl::StrCat("parted snapshot at seq ", parted->seq, ": ", *stored, " of its ",
                                                        parted->parts, " parts are stored"));
    }
    TIDEGATE_RETURN_IF_ERROR(PutPartedSnapshot(*parted));
  }
  if (batch.snapshot.has_value() || batch.parted_snapshot.has_value()) {
    TIDEGATE_RETURN_IF_ERROR(PruneSnapshots(kLatestSnapshotsKept));
    TIDEGATE_RETURN_IF_ERROR(DeleteUnnamedSnapshotParts());
  }
  return absl::OkStatus();
}

absl::StatusOr<SnapshotRecord> AssembledSnapshot(SnapshotRecord row, int64_t parts, uint32_t stored_checksum,
                                                 const std::vector<std::pair<int64_t, std::string>>& read) {
  size_t size = 0;
  for (const auto& part : read) size += part.second.size();
  row.payload.clear();
  row.payload.reserve(size);
  for (int64_t i = 0; i < parts; ++i) {
    if (i >= static_cast<int64_t>(read.size()) || read[i].first != i) return MissingSnapshotParts(row.seq, parts, i);
    row.payload += read[i].second;
  }
  return CheckedSnapshot(std::move(row), stored_checksum);
}

absl::StatusOr<SnapshotRecord> CheckedSnapshot(SnapshotRecord snapshot, std::optional<uint32_t> stored_checksum) {
  if (stored_checksum.has_value()) {
    TIDEGATE_RETURN_IF_ERROR(CheckStoredSnapshot(snapshot, *stored_checksum));
  }
  return snapshot;
}

}  // namespace tidegate::ledger
