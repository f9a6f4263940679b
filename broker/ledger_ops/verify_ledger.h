// `tidegate ledger verify`: replays a ledger from its first entry through the
// core and compares the result with the state the broker would start from
// (latest snapshot + journal tail) and with the jobs query table; then checks
// what a replay cannot see (who wrote, what was acknowledged).
#ifndef TIDEGATE_BROKER_LEDGER_OPS_VERIFY_LEDGER_H_
#define TIDEGATE_BROKER_LEDGER_OPS_VERIFY_LEDGER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ledger/store.h"

namespace tidegate::ledger_ops {

struct VerifyReport {
  int64_t entries = 0;       // journal entries replayed.
  int64_t jobs = 0;          // jobs the core remembers at the end.
  std::vector<std::string> problems;  // empty = the ledger is consistent.
};

// FAILED_PRECONDITION when the ledger has no initial state at all.
absl::StatusOr<VerifyReport> VerifyLedger(ledger::Store& store);

// The checks a replay cannot make, by where ledger `db` lives (`store` is
// open on it). PostgreSQL: lease epochs never go back along the journal (no
// deposed leader committed after a newer one). SQLite: the journal holds
// every commit LEDGER.acked records as acknowledged. Problems are appended
// to `report`; an error only when PostgreSQL's epochs cannot be read.
absl::Status CheckAcknowledgedHistory(const std::string& db, ledger::Store& store, VerifyReport& report);

}  // namespace tidegate::ledger_ops

#endif  // TIDEGATE_BROKER_LEDGER_OPS_VERIFY_LEDGER_H_
