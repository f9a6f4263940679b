// What a standby broker keeps warm while another one leads: the core,
// rebuilt once from the ledger and then fed every journal entry the leader
// commits, so a takeover replays only the entries since the last poll
// instead of everything since the latest snapshot.
//
// It also remembers the highest seq it saw committed. A journal that ends
// before it when this broker takes over lost acknowledged commits (e.g. the
// database failed over to a replica that missed them): the takeover refuses
// with DATA_LOSS rather than serve the older state — what LEDGER.acked does
// for a SQLite ledger (ledger/acked_seq.h). This memory lasts as long as the
// process; --acked-file keeps it across restarts (leader.h).
//
// Threading: one thread.
#ifndef TIDEGATE_BROKER_SERVICE_LEADER_TAIL_H_
#define TIDEGATE_BROKER_SERVICE_LEADER_TAIL_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "broker/ledger_ops/recovery.h"
#include "ledger/store.h"

namespace tidegate::service {

// Applies the journal entries after `core.seq` to `core` (the tail of
// RecoverCore). DATA_LOSS when an entry does not parse or the journal is
// damaged, as RecoverCore.
absl::Status CatchUpCore(ledger_ops::RecoveredCore& core, ledger::Store& store);

class JournalTail {
 public:
  // Rebuilds the core when it has none yet (NOT_FOUND from RecoverCore: the
  // ledger holds no state yet is not an error here), then catches up.
  absl::Status Poll(ledger::Store& store);
  // The warm core for the new leader, after a last Poll; DATA_LOSS when the
  // journal ends before a seq this standby saw. nullopt: no state yet.
  absl::StatusOr<std::optional<ledger_ops::RecoveredCore>> TakeOver(ledger::Store& store);
  int64_t seen_seq() const { return seen_seq_; }

 private:
  std::optional<ledger_ops::RecoveredCore> core_;
  int64_t seen_seq_ = 0;
};

}  // namespace tidegate::service

#endif  // TIDEGATE_BROKER_SERVICE_LEADER_TAIL_H_
