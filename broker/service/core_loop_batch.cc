#include <algorithm>
#include <chrono>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "broker/service/core_loop.h"
#include "broker/service/core_loop_commands.h"
#include "api/text/enum_names.h"
#include "broker/ledger_ops/recovery.h"
#include "spdlog/spdlog.h"

namespace tidegate::service {
namespace {

using loop_internal::ChangesConfig;
using loop_internal::CommandJobs;
using loop_internal::KindOf;

}  // namespace

// About 120 lines: one batch's steps in the order durability depends on
// (apply and journal, job rows, accounting, snapshot, commit, publish,
// answer), kept in one function so that order reads top to bottom.
void CoreLoop::ApplyBatch(std::vector<Pending> batch) {
  const core::Time now = std::max(clock_->NowMs(), broker_->Now());
  const std::shared_ptr<const ReadModel> before = Published();
  ledger::Batch out;
  std::vector<std::vector<core::Event>> results(batch.size());
  std::vector<std::string> touched;
  absl::flat_hash_set<std::string> seen;
  bool all_teams = false;
  absl::flat_hash_map<std::string, const core::Event*> last_event;  // per job, for ended/rejected rows
  std::vector<std::vector<core::Event>> applied_events;  // of journalled commands, in order
  std::vector<std::string> quiet;  // changed with no event (QuietlyChangedIds)
  int64_t journal_bytes = 0;       // for the snapshot's interval (SnapshotDue)
  auto apply = [&](const internal::v1::Command& command) -> std::vector<core::Event> {
    const uint64_t quota_generation = broker_->QuotaGeneration();
    std::vector<core::Event> events = broker_->Apply(command, now);
    // A tide change replaces the quota in force during any command.
    if (broker_->QuotaGeneration() != quota_generation) all_teams = true;
    ledger::JournalRecord rec;
    rec.seq = ++seq_;
    rec.at_ms = now;
    rec.kind = KindOf(command);
    rec.payload = command.SerializeAsString();
    journal_bytes += static_cast<int64_t>(rec.payload.size());
    rec.checksum = ledger::Checksum(rec.payload);
    out.journal.push_back(std::move(rec));
    if (ChangesConfig(command)) all_teams = true;
    std::vector<std::string> ids;
    CommandJobs(command, &ids);
    for (const auto& e : events) ids.push_back(e.job);
    // Re-read for readers, but no query-table row: a recomputed reason is
    // not a state change, and rows for every waiting job would swamp the ledger.
    for (const auto& id : broker_->QuietlyChangedIds()) quiet.push_back(id);
    for (auto& id : ids) {
      if (!id.empty() && seen.insert(id).second) touched.push_back(id);
    }
    applied_events.push_back(events);
    return events;
  };
  for (size_t i = 0; i < batch.size(); ++i) {
    const internal::v1::Command& command = batch[i].command;
    if (batch[i].dry_run) {
      results[i] = DryRunEvents(command, now);
      continue;
    }
    // A submit that changes nothing is answered without being journalled:
    // rejects cannot grow the ledger, and replay sees exactly the commands
    // that changed state.
    if (command.has_submit()) {
      if (auto answer = broker_->SubmitWithoutEffect(command.submit(), now)) {
        results[i] = *std::move(answer);
        continue;
      }
    }
    results[i] = apply(command);
  }
  // Time-driven work is due and nothing above ran it (an idle loop, or a
  // batch of commands without effect): a tick, journalled like any command.
  if (TickDue(now) && out.journal.empty()) {
    internal::v1::Command tick;
    tick.mutable_tick();
    apply(tick);
  }
  if (out.journal.empty()) {
    // Nothing changed: answer from the model readers already have.
    std::vector<std::pair<Done, absl::StatusOr<Applied>>> answers;
    for (size_t i = 0; i < batch.size(); ++i) {
      answers.emplace_back(std::move(batch[i].done), Applied{std::move(results[i]), before});
    }
    QueueAnswers(std::move(answers), nullptr);
    return;
  }
  if (out.journal.back().kind == "tick") last_tick_ = now;
  // The teams whose usage or queue may have changed: those of the jobs the
  // batch touched (their events name them; a job's row names its team).
  std::vector<std::string> changed_teams;
  for (const auto& events : applied_events) {
    for (const auto& e : events) {
      if (!e.job.empty()) last_event[e.job] = &e;
      if (!e.team.empty()) changed_teams.push_back(e.team);
    }
  }
  ReadModel::Records records;
  AddJobRows(touched, last_event, *before, now, &out.jobs, &changed_teams, &records);
  // Every batch is observed (usage is piecewise constant between batches);
  // rows are written about once a second, merged by the accountant.
  Account(now, now - last_accounting_ >= options_.accounting_every_ms || all_teams, &out.usage, &out.loans,
          all_teams ? nullptr : &changed_teams);
  AddSnapshotParts(&out);  // of a snapshot captured earlier (core_loop_snapshot.cc)
  AddUnwrittenRows(&out);
  const auto commit_started = std::chrono::steady_clock::now();
  const absl::Status committed = store_->Commit(out);
  BatchStats stats{static_cast<int64_t>(batch.size()), committed.ok(),
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - commit_started).count(), now,
                   &applied_events, nullptr};
  if (!committed.ok()) {
    if (batch_observer_) batch_observer_(stats);
    CommitFailed(committed, std::move(batch), std::move(out), touched, now);
    return;
  }
  unwritten_usage_.clear();
  unwritten_loans_.clear();
  SnapshotPartsCommitted(out);
  journal_bytes_since_snapshot_ += journal_bytes;
  if (!LedgerHealth().ok()) {
    spdlog::info("ledger: a commit succeeded again (seq {}); accepting writes", seq_);
    SetLedgerHealth(absl::OkStatus());
  }
  for (auto& id : quiet) {
    if (seen.insert(id).second) touched.push_back(std::move(id));
  }
  // The core is as AddJobRows read it: the records made there are current.
  auto model = ReadModel::Update(*before, *broker_, seq_, touched, all_teams, &records);
  {
    absl::MutexLock lock(&mu_);
    published_ = model;
  }
  stats.model = model.get();
  if (batch_observer_) batch_observer_(stats);
  // Answering (serializing replies, waking gRPC) happens on the responder
  // thread, so the writer goes straight on to the next batch.
  std::vector<std::pair<Done, absl::StatusOr<Applied>>> answers;
  for (size_t i = 0; i < batch.size(); ++i) {
    answers.emplace_back(std::move(batch[i].done), Applied{std::move(results[i]), model});
  }
  QueueAnswers(std::move(answers), &touched);
  // The state is exactly the committed seq_: a due snapshot captures it now.
  MaybeStartSnapshot(now);
}

void CoreLoop::AddJobRows(const std::vector<std::string>& touched,
                          const absl::flat_hash_map<std::string, const core::Event*>& last_event,
                          const ReadModel& before, core::Time now, std::vector<ledger::JobRow>* rows,
                          std::vector<std::string>* changed_teams, ReadModel::Records* records) const {
  for (const auto& id : touched) {
    ledger::JobRow row;
    auto view = broker_->GetJob(id);
    std::shared_ptr<const JobRecord> record;
    if (view) record = (*records)[id] = before.MakeRecord(*view);
    // A retained ended job keeps the row written when it ended.
    if (view && (view->state == v1::JOB_STATE_ENDED || view->state == v1::JOB_STATE_REJECTED)) view.reset();
    if (view) {
      row.job = id;
      row.team = view->team;
      row.cluster = view->cluster;
      row.state = text::JobStateName(view->state);
      row.created_at_ms = view->created_at;
      row.admitted_at_ms = std::max<core::Time>(0, view->admitted_at);
      row.reason = view->reason;
      row.spec = record->SerializedSpec();  // the record serialized it already
    } else {
      auto it = last_event.find(id);
      if (it == last_event.end()) continue;
      const core::Event& e = *it->second;
      if (e.type != core::EventType::kEnd && e.type != core::EventType::kReject) continue;
      row.job = id;
      row.team = e.team;
      row.state = e.type == core::EventType::kEnd ? "ended" : "rejected";
      row.ended_at_ms = now;
      row.reason = e.reason;
      // Keep what readers knew of it (cluster, created, admitted, spec) while
      // it was live, from its record as kept (no JobInfo built, no parsing).
      const JobRecord* prev = before.FindRecord(id);
      if (prev && prev->state() != v1::JOB_STATE_ENDED && prev->state() != v1::JOB_STATE_REJECTED) {
        row.cluster = prev->cluster();
        row.created_at_ms = prev->created_at_ms();
        row.admitted_at_ms = prev->admitted_at_ms();
        row.spec = prev->SerializedSpec();
        if (row.team.empty()) row.team = prev->team();
      }
    }
    if (!row.team.empty()) changed_teams->push_back(row.team);
    rows->push_back(std::move(row));
  }
}

void CoreLoop::CommitFailed(const absl::Status& failure, std::vector<Pending> batch, ledger::Batch refused,
                            const std::vector<std::string>& touched, core::Time now) {
  // The core has applied what the ledger did not record. Nothing of the batch
  // is acknowledged; the core goes back to what the ledger holds, which is
  // exactly what was acknowledged. Usage already happened, so its rows wait
  // for the next commit, unless the rows themselves were refused.
  spdlog::error("ledger: commit up to seq {} failed, refusing writes until a retry commits: {}", seq_,
                failure.ToString());
  if (failure.code() != absl::StatusCode::kInvalidArgument) {
    unwritten_usage_ = std::move(refused.usage);
    unwritten_loans_ = std::move(refused.loans);
  }
  SetLedgerHealth(absl::UnavailableError(absl::StrCat("the ledger cannot be written: ", failure.message())));
  retry_commit_at_ = clock_->NowMs() + options_.retry_commit_after_ms;
  core_dirty_ = true;
  refused_ = Refused{now, touched};
  // Disk full and read-only fail before anything is written; another I/O
  // error may fail after the WAL holds the batch, so it may be in force.
  const bool surely_unwritten = failure.code() == absl::StatusCode::kResourceExhausted ||
                                failure.code() == absl::StatusCode::kFailedPrecondition ||
                                failure.code() == absl::StatusCode::kInvalidArgument;
  if (!surely_unwritten) commit_outcome_unknown_.store(true, std::memory_order_release);
  ReloadCore();  // or a retry does, before any other commit
  Refuse(std::move(batch), surely_unwritten);
}

bool CoreLoop::ReloadCore() {
  absl::StatusOr<ledger_ops::RecoveredCore> recovered = ledger_ops::RecoverCore(*store_);
  if (!recovered.ok()) {
    spdlog::error("ledger: cannot reload the core from the ledger (will retry): {}", recovered.status().ToString());
    return false;
  }
  if (const int64_t acknowledged = Published()->seq(); recovered->seq < acknowledged) {
    const std::string lost = absl::StrCat(
        "the ledger ends at seq ", recovered->seq, " but seq ", acknowledged,
        " was acknowledged: acknowledged commits are missing (did the database fail over to a replica that missed "
        "them?); writes are refused and reads keep the acknowledged state; restart the broker to go on from what "
        "the ledger holds");
    spdlog::error("ledger: {}", lost);
    ledger_lost_ = true;
    SetLedgerHealth(absl::DataLossError(lost));
    return false;  // a failed commit's outcome stays unknown: the lost commits may be restored
  }
  broker_ = std::move(recovered->broker);
  seq_ = recovered->seq;
  observed_valid_ = false;  // the accounting's view of the tree was of the refused core
  last_snapshot_seq_ = std::min(last_snapshot_seq_, seq_);
  core_dirty_ = false;
  spdlog::info("ledger: core reloaded at seq {} (snapshot {} + {} journal entries)", seq_, recovered->snapshot_seq,
               recovered->replayed);
  if (!refused_.has_value()) return true;
  // The accountant has held the refused batch's usage since it was refused;
  // the state reloaded replaces it from that instant, so refused admissions
  // accrue nothing however long the ledger stayed unreadable.
  Account(refused_->at, /*take_rows=*/false, nullptr, nullptr);
  // The refused batch was applied after all (the server committed and its
  // answer was lost): what readers see, and what a retry of the batch's
  // commands is answered from when it changes nothing, must hold it.
  if (const int64_t acknowledged = Published()->seq(); seq_ != acknowledged) {
    spdlog::warn("ledger: the failed commit was applied (seq {} in the ledger, {} acknowledged); publishing it",
                 seq_, acknowledged);
    // A batch commits whole, so the ledger ahead holds all of it, usage rows
    // too: held for the next commit, they would be added twice.
    unwritten_usage_.clear();
    unwritten_loans_.clear();
    auto model = ReadModel::Build(*broker_, seq_);
    {
      absl::MutexLock lock(&mu_);
      published_ = std::move(model);
    }
    QueueAnswers({}, &refused_->jobs);
  }
  refused_.reset();
  commit_outcome_unknown_.store(false, std::memory_order_release);  // the model is what the ledger holds
  return true;
}

void CoreLoop::Refuse(std::vector<Pending> batch, bool surely_unwritten) {
  const absl::Status refused = absl::UnavailableError(absl::StrCat(
      LedgerHealth().message(), surely_unwritten ? "; nothing was changed, retry later"
                                                 : "; the command may not have been applied; retrying is safe "
                                                   "(admit is idempotent per job id)"));
  std::vector<std::pair<Done, absl::StatusOr<Applied>>> answers;
  for (Pending& p : batch) answers.emplace_back(std::move(p.done), refused);
  QueueAnswers(std::move(answers), nullptr);
}

std::vector<core::Event> CoreLoop::DryRunEvents(const internal::v1::Command& command, core::Time now) const {
  auto copy = core::Broker::Restore(broker_->Snapshot());
  if (!copy.ok()) {
    core::Event error;
    error.type = core::EventType::kError;
    error.reason = absl::StrCat("dry run: cannot copy the state: ", copy.status().message());
    return {error};
  }
  return (*copy)->Apply(command, now);
}

absl::Status CoreLoop::Snapshot() {
  AbandonSnapshot("");  // this one, written at once, supersedes one in progress
  if (ledger_lost_) {  // nothing may be written on an older ledger
    spdlog::warn("ledger: no final snapshot: the ledger lost acknowledged commits");
    return absl::OkStatus();
  }
  // A core holding a refused batch must never reach the ledger.
  if (core_dirty_ && !ReloadCore()) return absl::UnavailableError("the core could not be reloaded");
  // The ledger may hold a snapshot of this very state (a periodic one that
  // finished while idle); usage rows of refused batches still need writing.
  const bool state_written = seq_ == snapshot_row_seq_;
  if (state_written && unwritten_usage_.empty() && unwritten_loans_.empty()) return absl::OkStatus();
  ledger::Batch out;
  if (!state_written) {
    out.snapshot = ledger::SnapshotRecord{seq_, broker_->Now(), broker_->Snapshot().SerializeAsString()};
  }
  // A core reloaded after a refused batch is older than the accountant's
  // latest observation, which must not go back.
  Account(std::max(broker_->Now(), observed_.now_ms), /*take_rows=*/true, &out.usage, &out.loans);
  AddUnwrittenRows(&out);  // usage of refused batches is written at the last chance too
  auto s = store_->Commit(out);
  if (s.ok()) {
    unwritten_usage_.clear();
    unwritten_loans_.clear();
    if (!state_written) {
      last_snapshot_seq_ = snapshot_row_seq_ = seq_;
      snapshot_bytes_ = static_cast<int64_t>(out.snapshot->payload.size());
      journal_bytes_since_snapshot_ = 0;
    }
  }
  return s;
}

}  // namespace tidegate::service
