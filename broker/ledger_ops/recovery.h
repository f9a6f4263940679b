// Rebuilding the broker core from the ledger: at start-up (CoreLoop::Open)
// and after a failed commit, when the core holds a batch the ledger refused
// and must return to exactly what was acknowledged (docs/operations.md).
//
// Threading: uses the store it is given; call from the store's one thread.
#ifndef TIDEGATE_BROKER_LEDGER_OPS_RECOVERY_H_
#define TIDEGATE_BROKER_LEDGER_OPS_RECOVERY_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "broker/core/broker.h"
#include "ledger/store.h"

namespace tidegate::ledger_ops {

struct RecoveredCore {
  std::unique_ptr<core::Broker> broker;
  int64_t seq = 0;           // the last journal entry applied (the ledger's end)
  int64_t snapshot_seq = 0;  // the snapshot the replay started from
  int64_t replayed = 0;      // journal entries applied on top of it
  // The snapshot's payload and the replayed entries' payloads, in bytes: a
  // restarted writer takes its next snapshot when it would have without the
  // restart (CoreLoopOptions::snapshot_journal_ratio).
  int64_t snapshot_bytes = 0;
  int64_t replayed_bytes = 0;
  // Newer snapshots passed over, each with why (checksum mismatch, does not
  // parse, does not fit the journal), for the log.
  std::vector<std::string> skipped;
};

// The newest intact snapshot, then every journal entry after it, in order.
// A snapshot is intact when its checksum matches, it parses, and it fits the
// journal (the entry at its seq exists and is not newer than it); a damaged
// one is passed over for the one before it, down to the initial state.
// NOT_FOUND when the ledger holds no snapshot and no journal (a new ledger);
// DATA_LOSS when it has journal entries but no (intact) snapshot, the journal
// ends before a snapshot, an entry does not parse, or the journal is damaged
// (the status names the seq).
absl::StatusOr<RecoveredCore> RecoverCore(ledger::Store& store);

}  // namespace tidegate::ledger_ops

#endif  // TIDEGATE_BROKER_LEDGER_OPS_RECOVERY_H_
