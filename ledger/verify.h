// The part of `tidegate ledger verify` that needs no core: read the
// whole journal, check its integrity, and list every problem rather than stop
// at the first. The service combines this with a replay through the core (the
// `replay` callback) and a comparison with the stored state.
//
// Checked here:
//   - seqs run 1, 2, 3, ... with nothing missing;
//   - every entry's checksum matches its payload;
//   - the highest seq read is Store::LastSeq();
//   - every snapshot's checksum matches (a damaged one is listed);
//   - no snapshot lies after the journal's end.
#ifndef TIDEGATE_LEDGER_VERIFY_H_
#define TIDEGATE_LEDGER_VERIFY_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ledger/store.h"

namespace tidegate::ledger {

struct JournalProblem {
  int64_t seq = 0;   // the first entry concerned
  std::string what;  // a sentence for people that names the seq(s)
};

struct JournalReport {
  int64_t intact_entries = 0;  // entries read with a matching checksum
  int64_t last_seq = 0;        // Store::LastSeq()
  std::optional<int64_t> earliest_snapshot_seq;
  std::optional<int64_t> latest_snapshot_seq;
  std::vector<JournalProblem> problems;  // in seq order
  bool truncated = false;                // stopped listing at VerifyOptions::max_problems
  // The replay ended before the journal did (a damaged entry, or an entry it
  // could not apply): what it reached is not the ledger's state.
  bool replay_stopped = false;

  bool ok() const { return problems.empty(); }
};

struct VerifyOptions {
  // A badly damaged file would otherwise list a problem per entry.
  size_t max_problems = 100;
};

using ReplayFn = std::function<absl::Status(const JournalRecord&)>;

// Reads every journal entry from seq 1. `replay`, when set, is called with
// each intact entry in order until the first damaged or missing entry (a
// replay past a hole means nothing) or until it returns an error, which is
// listed as a problem at that seq ("journal seq N: replay failed: ...").
// Problems found are in the report; the status is an error only when the
// store itself fails (I/O, UNAVAILABLE, ...).
absl::StatusOr<JournalReport> CheckJournal(Store& store, const ReplayFn& replay = nullptr,
                                           const VerifyOptions& options = {});

// One line per problem, for the CLI; every line names its seq.
std::string FormatReport(const JournalReport& report);

}  // namespace tidegate::ledger

#endif  // TIDEGATE_LEDGER_VERIFY_H_
