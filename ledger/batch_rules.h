// The rules every Store applies to a Batch before writing any of it, so both
// implementations refuse the same batches with the same codes and nothing is
// half-applied because of a bad row found late.
#ifndef TIDEGATE_LEDGER_BATCH_RULES_H_
#define TIDEGATE_LEDGER_BATCH_RULES_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "ledger/store.h"

namespace tidegate::ledger {

// Snapshots kept besides the earliest one: the earliest is the replay origin
// for `ledger verify`; the latest is the restart point; a few more guard
// against a latest snapshot that turns out bad.
inline constexpr int kLatestSnapshotsKept = 3;

// OK when `batch` may be written on top of a journal ending at `last_seq`:
//   FAILED_PRECONDITION  journal seqs do not run last_seq+1, last_seq+2, ...;
//                        a snapshot's (or snapshot part's) seq is after the
//                        journal's new end.
//   INVALID_ARGUMENT     a record's checksum is not Checksum(payload); an
//                        empty job id, team or resource; a day not YYYY-MM-DD;
//                        a negative snapshot seq or part index; a parted
//                        snapshot of no parts; both kinds of snapshot row.
// (Whether a parted snapshot's parts are all stored is the store's check.)
absl::Status ValidateBatch(const Batch& batch, int64_t last_seq);

// True when `day` looks like YYYY-MM-DD (digits and dashes; the calendar is
// not checked). Days are compared as strings, so the shape matters.
bool IsDay(const std::string& day);

}  // namespace tidegate::ledger

#endif  // TIDEGATE_LEDGER_BATCH_RULES_H_
