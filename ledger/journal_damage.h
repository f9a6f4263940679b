// How a Store reports a damaged journal, shared by both implementations and
// by verify.h.
//
// ReadJournal stops with DATA_LOSS at the first entry whose checksum does not
// match its payload, or where a seq is missing. The status message names the
// seq for people; a payload carries it for programs, so `tidegate ledger
// verify` can step over the damage and list every problem, not just the first.
#ifndef TIDEGATE_LEDGER_JOURNAL_DAMAGE_H_
#define TIDEGATE_LEDGER_JOURNAL_DAMAGE_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "ledger/store.h"

namespace tidegate::ledger {

struct JournalDamage {
  int64_t seq = 0;           // the first damaged (or missing) seq
  int64_t resume_after = 0;  // reading may continue with ReadJournal(resume_after, ...)
};

// OK when `record` is the intact entry `expected_seq`; otherwise DATA_LOSS
// carrying a JournalDamage: a stored seq above `expected_seq` means entries
// expected_seq..record.seq-1 are missing; a checksum mismatch damages
// record.seq itself.
absl::Status CheckStoredRecord(const JournalRecord& record, int64_t expected_seq);

// The damage a DATA_LOSS status from CheckStoredRecord describes, or nullopt
// for any other status.
std::optional<JournalDamage> DamageOf(const absl::Status& status);

// OK when `snapshot` matches `stored_checksum`; otherwise DATA_LOSS naming
// its seq, which DamagedSnapshotSeq reads back.
absl::Status CheckStoredSnapshot(const SnapshotRecord& snapshot, uint32_t stored_checksum);
std::optional<int64_t> DamagedSnapshotSeq(const absl::Status& status);
// DATA_LOSS for a parted snapshot of which only `found` of parts 0..parts-1
// are stored, naming its seq like CheckStoredSnapshot.
absl::Status MissingSnapshotParts(int64_t seq, int64_t parts, int64_t found);

}  // namespace tidegate::ledger

#endif  // TIDEGATE_LEDGER_JOURNAL_DAMAGE_H_
