// `tidegate ledger verify`: replays a ledger from its first entry through the
// core and compares the result with the state the broker would start from
// (latest snapshot + journal tail) and with the jobs query table.
#ifndef TIDEGATE_BROKER_SERVICE_VERIFY_H_
#define TIDEGATE_BROKER_SERVICE_VERIFY_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ledger/store.h"

namespace tidegate::service {

struct VerifyReport {
  int64_t entries = 0;       // journal entries replayed.
  int64_t jobs = 0;          // jobs the core remembers at the end.
  std::vector<std::string> problems;  // empty = the ledger is consistent.
};

// FAILED_PRECONDITION when the ledger has no initial state at all.
absl::StatusOr<VerifyReport> VerifyLedger(ledger::Store& store);

}  // namespace tidegate::service

#endif  // TIDEGATE_BROKER_SERVICE_VERIFY_H_
