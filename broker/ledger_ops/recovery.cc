#include "broker/ledger_ops/recovery.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "ledger/journal_damage.h"
#include "tidegate/internal/v1/journal.pb.h"
#include "tidegate/v1/config.pb.h"

namespace tidegate::ledger_ops {
namespace {

// The cross-check of a snapshot with the journal: the entry at its seq
// exists and was applied no later than the snapshot was taken. A journal
// that ends before the snapshot lost entries: DATA_LOSS. Otherwise a reason
// the snapshot does not belong to this journal, or nullopt when it fits.
absl::StatusOr<std::optional<std::string>> MisfitWithJournal(ledger::Store& store,
                                                              const ledger::SnapshotRecord& snapshot) {
  if (snapshot.seq == 0) return std::nullopt;
  std::optional<ledger::JournalRecord> entry;
  const absl::Status stop = absl::CancelledError("read one entry");
  absl::Status read = store.ReadJournal(snapshot.seq - 1, [&](const ledger::JournalRecord& rec) {
    entry = rec;
    return stop;
  });
  if (!read.ok() && read != stop) return read;
  if (!entry.has_value() || entry->seq != snapshot.seq) {
    absl::StatusOr<int64_t> last = store.LastSeq();
    if (!last.ok()) return last.status();
    return absl::DataLossError(absl::StrCat("ledger: the snapshot at seq ", snapshot.seq,
                                            " is after the journal's end (seq ", *last,
                                            "): acknowledged journal entries are missing"));
  }
  if (entry->at_ms > snapshot.at_ms) {
    return absl::StrCat("snapshot at seq ", snapshot.seq, " was taken at ", snapshot.at_ms,
                        " ms, before its journal entry (", entry->at_ms, " ms)");
  }
  return std::nullopt;
}

absl::StatusOr<std::unique_ptr<core::Broker>> Restore(const ledger::SnapshotRecord& snapshot) {
  internal::v1::CoreSnapshot parsed;
  if (!parsed.ParseFromString(snapshot.payload)) {
    return absl::DataLossError(absl::StrCat("snapshot at seq ", snapshot.seq, " does not parse"));
  }
  return core::Broker::Restore(parsed);
}

}  // namespace

absl::StatusOr<RecoveredCore> RecoverCore(ledger::Store& store) {
  RecoveredCore out;
  std::optional<int64_t> start;  // the seq of the snapshot restored
  absl::StatusOr<std::optional<ledger::SnapshotRecord>> read = store.LatestSnapshot();
  // Newest first; a damaged snapshot is skipped for the one before it (the
  // journal is whole, so an older snapshot and a longer replay give the same
  // state).
  while (!start.has_value()) {
    std::string damage;
    int64_t damaged_seq = 0;
    if (!read.ok()) {
      std::optional<int64_t> seq = ledger::DamagedSnapshotSeq(read.status());
      if (!seq.has_value()) return read.status();
      damage = std::string(read.status().message());
      damaged_seq = *seq;
    } else if (!read->has_value()) {
      break;
    } else {
      const ledger::SnapshotRecord& snapshot = **read;
      absl::StatusOr<std::optional<std::string>> misfit = MisfitWithJournal(store, snapshot);
      if (!misfit.ok()) return misfit.status();
      damaged_seq = snapshot.seq;
      if (misfit->has_value()) {
        damage = **misfit;
      } else if (absl::StatusOr<std::unique_ptr<core::Broker>> broker = Restore(snapshot); !broker.ok()) {
        damage = absl::StrCat("snapshot at seq ", snapshot.seq, ": ", broker.status().message());
      } else {
        out.broker = *std::move(broker);
        out.snapshot_bytes = static_cast<int64_t>(snapshot.payload.size());
        start = snapshot.seq;
        break;
      }
    }
    out.skipped.push_back(damage);
    read = store.SnapshotBefore(damaged_seq);
  }
  if (!start.has_value()) {
    absl::StatusOr<int64_t> last = store.LastSeq();
    if (!last.ok()) return last.status();
    if (!out.skipped.empty()) {
      return absl::DataLossError(absl::StrCat("ledger: no intact snapshot to start from (", out.skipped.back(), ")"));
    }
    if (*last > 0) {
      return absl::DataLossError(absl::StrCat("ledger: the journal has ", *last,
                                              " entries but there is no snapshot to replay them on"));
    }
    return absl::NotFoundError("ledger: no state yet");
  }
  out.seq = *start;
  out.snapshot_seq = *start;
  absl::Status replay = store.ReadJournal(*start, [&](const ledger::JournalRecord& rec) -> absl::Status {
    internal::v1::Command command;
    if (!command.ParseFromString(rec.payload)) {
      return absl::DataLossError(absl::StrCat("ledger: journal entry ", rec.seq, " does not parse"));
    }
    out.broker->Apply(command, rec.at_ms);
    out.seq = rec.seq;
    ++out.replayed;
    out.replayed_bytes += static_cast<int64_t>(rec.payload.size());
    return absl::OkStatus();
  });
  if (!replay.ok()) return replay;
  return out;
}

}  // namespace tidegate::ledger_ops
