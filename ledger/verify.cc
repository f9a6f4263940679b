#include "ledger/verify.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "ledger/journal_damage.h"

namespace tidegate::ledger {

absl::StatusOr<JournalReport> CheckJournal(Store& store, const ReplayFn& replay,
                                           const VerifyOptions& options) {
  JournalReport report;
  auto add = [&](int64_t seq, std::string what) {
    if (report.problems.size() >= options.max_problems) {
      report.truncated = true;
      return;
    }
    report.problems.push_back({seq, std::move(what)});
  };

  bool replaying = static_cast<bool>(replay);
  int64_t highest = 0;  // the highest seq seen, intact or damaged
  for (int64_t after = 0; !report.truncated;) {
    absl::Status read = store.ReadJournal(after, [&](const JournalRecord& record) {
      ++report.intact_entries;
      highest = record.seq;
      if (replaying) {
        if (absl::Status s = replay(record); !s.ok()) {
          add(record.seq,
              absl::StrCat("journal seq ", record.seq, ": replay failed: ", s.ToString()));
          replaying = false;
          report.replay_stopped = true;
        }
      }
      return absl::OkStatus();
    });
    if (read.ok()) break;
    std::optional<JournalDamage> damage = DamageOf(read);
    if (!damage.has_value()) return read;  // the store failed, not the journal
    if (damage->resume_after <= after) {
      return absl::InternalError(absl::StrCat("journal damage at seq ", damage->seq,
                                              " does not let reading move past seq ", after));
    }
    add(damage->seq, std::string(read.message()));
    if (replaying) report.replay_stopped = true;
    replaying = false;
    highest = std::max(highest, damage->resume_after);
    after = damage->resume_after;
  }

  absl::StatusOr<int64_t> last = store.LastSeq();
  if (!last.ok()) return last.status();
  report.last_seq = *last;
  if (!report.truncated && highest != report.last_seq) {
    add(highest, absl::StrCat("the journal reads up to seq ", highest, " but its last seq is ",
                              report.last_seq));
  }

  // Every snapshot, newest first: a damaged one is a problem, not an error.
  absl::StatusOr<std::optional<SnapshotRecord>> snapshot = store.LatestSnapshot();
  for (;;) {
    int64_t seq = 0;
    if (!snapshot.ok()) {
      std::optional<int64_t> damaged = DamagedSnapshotSeq(snapshot.status());
      if (!damaged.has_value()) return snapshot.status();
      add(*damaged, std::string(snapshot.status().message()));
      seq = *damaged;
    } else if (!snapshot->has_value()) {
      break;
    } else {
      seq = (*snapshot)->seq;
    }
    if (!report.latest_snapshot_seq.has_value()) report.latest_snapshot_seq = seq;
    report.earliest_snapshot_seq = seq;
    snapshot = store.SnapshotBefore(seq);
  }
  if (report.latest_snapshot_seq.has_value() && *report.latest_snapshot_seq > report.last_seq) {
    add(*report.latest_snapshot_seq, absl::StrCat("snapshot at seq ", *report.latest_snapshot_seq,
                                                  " is after the journal's end (seq ", report.last_seq, ")"));
  }
  return report;
}

std::string FormatReport(const JournalReport& report) {
  std::string out;
  for (const JournalProblem& problem : report.problems) {
    absl::StrAppend(&out, problem.what, "\n");
  }
  if (report.truncated) absl::StrAppend(&out, "(more problems not listed)\n");
  return out;
}

}  // namespace tidegate::ledger
