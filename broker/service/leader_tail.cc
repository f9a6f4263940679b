#include "broker/service/leader_tail.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "tidegate/internal/v1/journal.pb.h"
#include "tidegate/v1/config.pb.h"

namespace tidegate::service {

absl::Status CatchUpCore(ledger_ops::RecoveredCore& core, ledger::Store& store) {
  return store.ReadJournal(core.seq, [&](const ledger::JournalRecord& rec) -> absl::Status {
    internal::v1::Command command;
    if (!command.ParseFromString(rec.payload)) {
      return absl::DataLossError(absl::StrCat("ledger: journal entry ", rec.seq, " does not parse"));
    }
    core.broker->Apply(command, rec.at_ms);
    core.seq = rec.seq;
    ++core.replayed;
    core.replayed_bytes += static_cast<int64_t>(rec.payload.size());
    return absl::OkStatus();
  });
}

absl::Status JournalTail::Poll(ledger::Store& store) {
  if (!core_.has_value()) {
    absl::StatusOr<ledger_ops::RecoveredCore> recovered = ledger_ops::RecoverCore(store);
    if (absl::IsNotFound(recovered.status())) return absl::OkStatus();
    if (!recovered.ok()) return recovered.status();
    core_ = *std::move(recovered);
  } else if (absl::Status s = CatchUpCore(*core_, store); !s.ok()) {
    // The core may hold part of the tail: rebuild it on the next poll.
    core_.reset();
    return s;
  }
  seen_seq_ = std::max(seen_seq_, core_->seq);
  return absl::OkStatus();
}

absl::StatusOr<std::optional<ledger_ops::RecoveredCore>> JournalTail::TakeOver(ledger::Store& store) {
  absl::Status polled = Poll(store);
  if (!polled.ok()) return polled;
  absl::StatusOr<int64_t> last = store.LastSeq();
  if (!last.ok()) return last.status();
  if (*last < seen_seq_) {
    return absl::DataLossError(absl::StrCat(
        "ledger: the journal ends at seq ", *last, " but this broker saw seq ", seen_seq_,
        " committed: acknowledged commits are missing (did the database fail over to a replica that missed "
        "them?); not taking over"));
  }
  std::optional<ledger_ops::RecoveredCore> out = std::move(core_);
  core_.reset();
  return out;
}

}  // namespace tidegate::service
