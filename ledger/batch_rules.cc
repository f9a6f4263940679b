#include "ledger/batch_rules.h"

#include "absl/strings/str_cat.h"

namespace tidegate::ledger {

bool IsDay(const std::string& day) {
  if (day.size() != 10) return false;
  for (size_t i = 0; i < day.size(); ++i) {
    const bool dash = i == 4 || i == 7;
    if (dash ? day[i] != '-' : (day[i] < '0' || day[i] > '9')) return false;
  }
  return true;
}

absl::Status ValidateBatch(const Batch& batch, int64_t last_seq) {
  int64_t expected = last_seq + 1;
  for (const JournalRecord& record : batch.journal) {
    if (record.seq != expected) {
      return absl::FailedPreconditionError(
          absl::StrCat("journal seq ", record.seq, " does not continue the journal: expected seq ",
                       expected, " (last committed seq is ", last_seq, ")"));
    }
    const uint32_t actual = Checksum(record.payload);
    if (record.checksum != actual) {
      return absl::InvalidArgumentError(
          absl::StrCat("journal seq ", record.seq, ": checksum ", record.checksum,
                       " is not crc32 of the payload (", actual, ")"));
    }
    ++expected;
  }
  const int64_t new_last = expected - 1;
  if (batch.snapshot.has_value()) {
    const int64_t seq = batch.snapshot->seq;
    if (seq < 0) {
      return absl::InvalidArgumentError(absl::StrCat("snapshot seq ", seq, " is negative"));
    }
    if (seq > new_last) {
      return absl::FailedPreconditionError(
          absl::StrCat("snapshot seq ", seq, " is after the journal's end (seq ", new_last, ")"));
    }
  }
  if (batch.snapshot.has_value() && batch.parted_snapshot.has_value()) {
    return absl::InvalidArgumentError("a batch holds either a whole snapshot or a parted one, not both");
  }
  for (const SnapshotPart& part : batch.snapshot_parts) {
    if (part.seq < 0 || part.index < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("snapshot part ", part.index, " of seq ", part.seq, ": a negative seq or index"));
    }
    if (part.seq > new_last) {
      return absl::FailedPreconditionError(absl::StrCat("snapshot part ", part.index, " of seq ", part.seq,
                                                        " is after the journal's end (seq ", new_last, ")"));
    }
  }
  if (batch.parted_snapshot.has_value()) {
    const PartedSnapshot& parted = *batch.parted_snapshot;
    if (parted.seq < 0 || parted.parts < 1) {
      return absl::InvalidArgumentError(absl::StrCat("parted snapshot at seq ", parted.seq, " with ", parted.parts,
                                                     " parts: the seq must be >= 0 and the parts >= 1"));
    }
    if (parted.seq > new_last) {
      return absl::FailedPreconditionError(
          absl::StrCat("snapshot seq ", parted.seq, " is after the journal's end (seq ", new_last, ")"));
    }
  }
  for (const JobRow& job : batch.jobs) {
    if (job.job.empty()) return absl::InvalidArgumentError("job row with an empty job id");
  }
  for (const UsageRow& row : batch.usage) {
    if (row.team.empty() || row.resource.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("usage row with an empty team (\"", row.team,
                                                     "\") or resource (\"", row.resource, "\")"));
    }
  }
  for (const LoanRow& row : batch.loans) {
    if (row.borrower.empty() || row.lender.empty() || row.resource.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("loan row with an empty borrower (\"",
                                                     row.borrower, "\"), lender (\"", row.lender,
                                                     "\") or resource (\"", row.resource, "\")"));
    }
    if (!IsDay(row.day)) {
      return absl::InvalidArgumentError(
          absl::StrCat("loan row day: \"", row.day, "\" is not YYYY-MM-DD"));
    }
  }
  return absl::OkStatus();
}

}  // namespace tidegate::ledger
