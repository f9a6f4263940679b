#include "broker/ledger_ops/verify_ledger.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "api/text/enum_names.h"
#include "broker/core/broker.h"
#include "broker/ledger_ops/recovery.h"
#include "google/protobuf/util/message_differencer.h"
#include "ledger/acked_seq.h"
#include "ledger/journal_damage.h"
#include "ledger/postgres_conn.h"
#include "ledger/postgres_store.h"
#include "ledger/verify.h"

namespace tidegate::ledger_ops {
namespace {

absl::StatusOr<std::unique_ptr<core::Broker>> RestoreSnapshot(const ledger::SnapshotRecord& snap) {
  internal::v1::CoreSnapshot parsed;
  if (!parsed.ParseFromString(snap.payload)) {
    return absl::DataLossError(absl::StrCat("snapshot at seq ", snap.seq, " does not parse"));
  }
  return core::Broker::Restore(parsed);
}

// Applies one journal entry to `broker` (entries at or before `after` are
// already in its snapshot).
absl::Status ApplyEntry(core::Broker& broker, int64_t after, const ledger::JournalRecord& rec, int64_t* entries) {
  if (rec.seq <= after) return absl::OkStatus();
  internal::v1::Command command;
  if (!command.ParseFromString(rec.payload)) {
    return absl::DataLossError(absl::StrCat("journal entry ", rec.seq, " does not parse"));
  }
  broker.Apply(command, rec.at_ms);
  ++*entries;
  return absl::OkStatus();
}

// The state replayed from the first entry (`a`) against the one the broker
// starts from (`b`): config and every live job; differences go to `report`.
void CompareReplayWithStored(const internal::v1::CoreSnapshot& a, const internal::v1::CoreSnapshot& b,
                             VerifyReport& report) {
  if (!google::protobuf::util::MessageDifferencer::Equivalent(a.config(), b.config())) {
    report.problems.push_back("config: the replayed config differs from the latest snapshot's");
  }
  std::map<std::string, const internal::v1::JobSnapshot*> ja, jb;
  for (const auto& j : a.jobs()) ja[j.spec().job()] = &j;
  for (const auto& j : b.jobs()) jb[j.spec().job()] = &j;
  for (const auto& [id, j] : ja) {
    auto it = jb.find(id);
    if (it == jb.end()) {
      report.problems.push_back(absl::StrCat("job ", id, ": in the replay, missing from the stored state"));
      continue;
    }
    google::protobuf::util::MessageDifferencer diff;
    // The wait reason is a cached explanation, not state.
    diff.IgnoreField(internal::v1::JobSnapshot::descriptor()->FindFieldByName("reason"));
    std::string out;
    diff.ReportDifferencesToString(&out);
    // A snapshot written before jobs kept how much they borrow restores
    // them without it; the replay's figure is not a difference from that.
    internal::v1::JobSnapshot replayed = *j;
    if (it->second->borrowed().empty()) replayed.clear_borrowed();
    if (!diff.Compare(replayed, *it->second)) {
      report.problems.push_back(absl::StrCat("job ", id, ": replay and stored state differ: ", out));
    }
  }
  for (const auto& [id, j] : jb) {
    if (!ja.count(id)) report.problems.push_back(absl::StrCat("job ", id, ": in the stored state, not in the replay"));
  }
}

// The jobs query table must agree with the core (`live`) on every live job;
// differences go to `report`, an error only when the table cannot be read.
absl::Status CheckJobsTable(ledger::Store& store, const internal::v1::CoreSnapshot& live, VerifyReport& report) {
  std::map<std::string, const internal::v1::JobSnapshot*> ja;
  for (const auto& j : live.jobs()) ja[j.spec().job()] = &j;
  auto rows = store.Jobs({});
  if (!rows.ok()) return rows.status();
  std::map<std::string, const ledger::JobRow*> table;
  for (const auto& r : *rows) table[r.job] = &r;
  for (const auto& [id, j] : ja) {
    auto it = table.find(id);
    if (it == table.end()) {
      report.problems.push_back(absl::StrCat("jobs table: job ", id, " is missing"));
    } else if (it->second->state != text::JobStateName(j->state())) {
      report.problems.push_back(absl::StrCat("jobs table: job ", id, " is '", it->second->state, "', the core says '",
                                             text::JobStateName(j->state()), "'"));
    }
  }
  for (const auto& [id, row] : table) {
    const bool live = row->state == "queued" || row->state == "admitted" || row->state == "draining";
    if (live && !ja.count(id)) {
      report.problems.push_back(absl::StrCat("jobs table: job ", id, " is '", row->state, "' but the core has ended it"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<VerifyReport> VerifyLedger(ledger::Store& store) {
  VerifyReport report;
  auto earliest = store.EarliestSnapshot();
  if (!earliest.ok() && ledger::DamagedSnapshotSeq(earliest.status()).has_value()) {
    report.problems.push_back(absl::StrCat("initial state: ", earliest.status().message()));
    return report;
  }
  if (!earliest.ok()) return earliest.status();
  if (!earliest->has_value()) return absl::FailedPreconditionError("the ledger has no initial state");

  // From the first entry: the journal's own checks (gaps, checksums,
  // snapshots' checksums) while the entries are replayed in order.
  auto from_start = RestoreSnapshot(**earliest);
  if (!from_start.ok()) return from_start.status();
  const int64_t first = (*earliest)->seq;
  auto journal = ledger::CheckJournal(store, [&](const ledger::JournalRecord& rec) {
    return ApplyEntry(**from_start, first, rec, &report.entries);
  });
  if (!journal.ok()) return journal.status();
  for (const auto& p : journal->problems) report.problems.push_back(absl::StrCat("journal: ", p.what));
  // What the broker starts from: the newest intact snapshot and the journal
  // after it (damaged snapshots are already listed above).
  absl::StatusOr<RecoveredCore> recovered = RecoverCore(store);
  if (!recovered.ok()) {
    report.problems.push_back(absl::StrCat("start-up state: ", recovered.status().message()));
    return report;
  }
  std::unique_ptr<core::Broker>* from_snapshot = &recovered->broker;
  const internal::v1::CoreSnapshot a = (*from_start)->Snapshot();
  const internal::v1::CoreSnapshot b = (*from_snapshot)->Snapshot();
  const internal::v1::CoreSnapshot& live = journal->replay_stopped ? b : a;
  report.jobs = live.jobs_size();
  if (journal->replay_stopped) {
    // Every later change would show as a difference from the stored state
    // and bury the cause listed above.
    report.problems.push_back(absl::StrCat(
        "replay: stopped at the problem above, so the stored state (", b.jobs_size(),
        " live jobs, from the latest snapshot and the journal after it) was not compared with it"));
  } else {
    CompareReplayWithStored(a, b, report);
  }
  if (absl::Status table = CheckJobsTable(store, live, report); !table.ok()) return table;
  return report;
}

absl::Status CheckAcknowledgedHistory(const std::string& db, ledger::Store& store, VerifyReport& report) {
  if (ledger::IsPostgresLedger(db)) {
    // Brokers sharing a PostgreSQL ledger: a deposed leader's commit after
    // a newer leader's would show as an epoch going back (postgres_store.h).
    auto epochs = ledger::ReadJournalEpochs(db);
    if (!epochs.ok()) return epochs.status();
    for (size_t i = 1; i < epochs->size(); ++i) {
      if ((*epochs)[i].second < (*epochs)[i - 1].second) {
        report.problems.push_back(absl::StrCat("journal seq ", (*epochs)[i].first, " was written under lease epoch ",
                                               (*epochs)[i].second, ", after seq ", (*epochs)[i - 1].first,
                                               " under epoch ", (*epochs)[i - 1].second,
                                               ": a deposed leader committed"));
      }
    }
    return absl::OkStatus();
  }
  // Commits the journal lost with its WAL leave no trace inside the file.
  auto acked = ledger::ReadAckedSeq(db);
  auto last = store.LastSeq();
  if (acked.ok() && acked->has_value() && last.ok() && **acked > *last) {
    report.problems.push_back(ledger::JournalBehindRecord(db, *last, **acked));
  }
  return absl::OkStatus();
}

}  // namespace tidegate::ledger_ops
