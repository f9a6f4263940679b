#include "broker/service/core_loop.h"

#include <algorithm>
#include <chrono>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "api/text/enum_names.h"
#include "broker/ledger_ops/recovery.h"
#include "broker/service/auth_origin.h"
#include "broker/service/config_diff.h"
#include "broker/service/leader_tail.h"
#include "google/protobuf/util/message_differencer.h"
#include "spdlog/spdlog.h"

namespace tidegate::service {
namespace {

std::string KindOf(const v1::Command& c) {
  switch (c.kind_case()) {
    case v1::Command::kSubmit: return "submit";
    case v1::Command::kAdopt: return "adopt";
    case v1::Command::kFinish: return "finish";
    case v1::Command::kCheckpoint: return "checkpoint";
    case v1::Command::kSetQuota: return "set_quota";
    case v1::Command::kSetCapacity: return "set_capacity";
    case v1::Command::kTick: return "tick";
    case v1::Command::kApplyConfig: return "apply_config";
    case v1::Command::kAckResize: return "ack_resize";
    case v1::Command::kVacate: return "vacate";
    case v1::Command::KIND_NOT_SET: return "none";
  }
  return "none";
}

core::Time TickMs(const core::Broker& broker) {
  const auto& policy = broker.Config().policy();
  return std::max<int64_t>(1, policy.has_tick_s() ? policy.tick_s() : 10) * core::kMillisPerSecond;
}

// Commands that may carry a whole config or an agent's whole view.
bool ConfigSized(const v1::Command& c) {
  return c.has_apply_config() || c.has_set_quota() || c.has_set_capacity() || c.has_adopt();
}

bool ChangesConfig(const v1::Command& c) {
  return c.has_set_quota() || c.has_set_capacity() || c.has_apply_config();
}

// The job a command names, if any.
void CommandJobs(const v1::Command& c, std::vector<std::string>* out) {
  if (c.has_submit()) out->push_back(c.submit().job());
  if (c.has_finish()) out->push_back(c.finish());
  if (c.has_checkpoint()) out->push_back(c.checkpoint());
  if (c.has_ack_resize()) out->push_back(c.ack_resize().job());
  if (c.has_vacate()) out->push_back(c.vacate());
  if (c.has_adopt()) {
    for (const auto& j : c.adopt().jobs()) out->push_back(j.job());
  }
}

// Rows with the same key add up in the ledger, so they add up here too.
std::vector<ledger::UsageRow> MergeUsageRows(std::vector<ledger::UsageRow> rows) {
  std::vector<ledger::UsageRow> merged;
  absl::flat_hash_map<std::tuple<std::string, std::string, int64_t>, size_t> at;
  for (ledger::UsageRow& r : rows) {
    auto [it, fresh] = at.try_emplace(std::make_tuple(r.team, r.resource, r.hour_start_ms), merged.size());
    if (fresh) {
      merged.push_back(std::move(r));
      continue;
    }
    ledger::UsageRow& into = merged[it->second];
    into.used += r.used;
    into.borrowed += r.borrowed;
    into.lent += r.lent;
    into.queued += r.queued;
  }
  return merged;
}

std::vector<ledger::LoanRow> MergeLoanRows(std::vector<ledger::LoanRow> rows) {
  std::vector<ledger::LoanRow> merged;
  absl::flat_hash_map<std::tuple<std::string, std::string, std::string, std::string>, size_t> at;
  for (ledger::LoanRow& r : rows) {
    auto [it, fresh] = at.try_emplace(std::make_tuple(r.borrower, r.lender, r.resource, r.day), merged.size());
    if (fresh) {
      merged.push_back(std::move(r));
    } else {
      merged[it->second].amount += r.amount;
    }
  }
  return merged;
}

}  // namespace

CoreLoop::CoreLoop(std::unique_ptr<core::Broker> broker, std::unique_ptr<ledger::Store> store, Clock* clock,
                   CoreLoopOptions options, int64_t seq)
    : broker_(std::move(broker)), store_(std::move(store)), clock_(clock), options_(options), seq_(seq) {
  last_snapshot_seq_ = seq;
  last_accounting_ = broker_->Now();
  last_tick_ = clock_->NowMs();
  published_ = ReadModel::Build(*broker_, seq_);
}

absl::StatusOr<std::unique_ptr<CoreLoop>> CoreLoop::Open(const v1::Config& config,
                                                         std::unique_ptr<ledger::Store> store, Clock* clock,
                                                         CoreLoopOptions options, bool init,
                                                         std::optional<ledger_ops::RecoveredCore> warm) {
  absl::StatusOr<ledger_ops::RecoveredCore> recovered =
      warm.has_value() ? absl::StatusOr<ledger_ops::RecoveredCore>(*std::move(warm)) : ledger_ops::RecoverCore(*store);
  if (warm.has_value() && recovered.ok()) {
    if (absl::Status s = CatchUpCore(*recovered, *store); !s.ok()) recovered = s;
  }
  std::unique_ptr<core::Broker> broker;
  int64_t seq = 0;
  if (absl::IsNotFound(recovered.status()) && !init) {
    return absl::FailedPreconditionError(
        "the ledger holds no broker state (no snapshot, no journal): it was not written by a broker (e.g. "
        "made by `tidegate ledger import-usage`) or lost its state; pass --init to start a new ledger in it");
  }
  if (absl::IsNotFound(recovered.status())) {
    auto created = core::Broker::Create(config, clock->NowMs());
    if (!created.ok()) return created.status();
    broker = *std::move(created);
    ledger::Batch first;
    first.snapshot = ledger::SnapshotRecord{0, broker->Now(), broker->Snapshot().SerializeAsString()};
    if (auto s = store->Commit(first); !s.ok()) return s;
    spdlog::info("ledger: new, initial state written");
  } else if (!recovered.ok()) {
    return recovered.status();
  } else {
    for (const std::string& why : recovered->skipped) {
      spdlog::warn("ledger: {}; recovering from an older snapshot (`tidegate ledger verify` lists the damage)", why);
    }
    broker = std::move(recovered->broker);
    seq = recovered->seq;
    spdlog::info("ledger: recovered from snapshot at seq {} and {} journal entries", recovered->snapshot_seq,
                 recovered->replayed);
  }
  auto loop = std::unique_ptr<CoreLoop>(new CoreLoop(std::move(broker), std::move(store), clock, options, seq));
  // The config file given at start-up is the one in force: a difference
  // (e.g. a `config apply` not written back to the file) is applied as a
  // journalled change, never silently.
  if (!google::protobuf::util::MessageDifferencer::Equivalent(loop->broker_->Config(), config)) {
    const std::vector<std::string> diff = ConfigDiff(loop->broker_->Config(), config);
    spdlog::warn("config: the --config file differs from the ledger's config; applying the file as a "
                 "journalled config change ({} {}):",
                 diff.size(), diff.size() == 1 ? "change" : "changes");
    for (const auto& line : diff) spdlog::warn("config:   {}", line);
    if (diff.empty()) spdlog::warn("config:   (only the order of entries differs)");
    v1::Command apply;
    *apply.mutable_apply_config() = config;
    absl::Status result;
    loop->ApplyBatch({Pending{apply, [&](absl::StatusOr<Applied> applied) {
                                if (!applied.ok()) {
                                  result = applied.status();
                                  return;
                                }
                                for (const auto& e : applied->events) {
                                  if (e.type == core::EventType::kError) result = absl::FailedPreconditionError(e.reason);
                                }
                              }}});
    loop->AnswerNow();  // no responder thread yet: answer on this one.
    if (!result.ok()) {
      spdlog::error("config: the --config file was NOT applied, the ledger's config stays in force: {}",
                    result.ToString());
    }
  }
  return loop;
}

CoreLoop::~CoreLoop() { Stop(); }

void CoreLoop::Start() {
  last_wake_ms_ = clock_->NowMs();
  responder_ = std::thread([this] { Respond(); });
  thread_ = std::thread([this] { Run(); });
}

void CoreLoop::AnswerNow() {
  std::deque<std::pair<Done, absl::StatusOr<Applied>>> answers;
  {
    std::lock_guard<std::mutex> lock(answers_mu_);
    answers.swap(answers_);
    answers_hook_pending_ = false;
  }
  for (auto& [done, applied] : answers) done(std::move(applied));
}

void CoreLoop::Respond() {
  while (true) {
    std::deque<std::pair<Done, absl::StatusOr<Applied>>> answers;
    bool hook = false;
    PublishedChange change;
    {
      std::unique_lock<std::mutex> lock(answers_mu_);
      answers_cv_.wait(lock, [&] { return !answers_.empty() || answers_hook_pending_ || answers_done_; });
      answers.swap(answers_);
      hook = answers_hook_pending_;
      answers_hook_pending_ = false;
      change.jobs.swap(answers_change_.jobs);
      if (answers.empty() && !hook && answers_done_) return;
    }
    for (auto& [done, applied] : answers) done(std::move(applied));
    if (hook && publish_hook_) publish_hook_(change);
  }
}

void CoreLoop::DryRun(v1::Command command, Done done) { Enqueue(std::move(command), std::move(done), /*dry_run=*/true); }

absl::Status CoreLoop::CheckSize(const v1::Command& command) const {
  const bool config_sized = ConfigSized(command);
  const int64_t limit = config_sized ? options_.max_config_bytes : options_.max_command_bytes;
  const size_t size = command.ByteSizeLong();
  if (static_cast<int64_t>(size) <= limit) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(KindOf(command), ": the request is ", size, " bytes, more than the ",
                                                 limit, " accepted (",
                                                 config_sized ? "--max-config-bytes" : "--max-request-bytes", ")"));
}

int64_t CoreLoop::queued_for_tests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(queue_.size());
}

void CoreLoop::Submit(v1::Command command, Done done) {
  StampOrigin(&command);  // who asked, for the journal (auth_origin.h)
  Enqueue(std::move(command), std::move(done), /*dry_run=*/false);
}

void CoreLoop::Enqueue(v1::Command command, Done done, bool dry_run) {
  if (auto s = CheckSize(command); !s.ok()) {
    done(s);
    return;
  }
  // Fields this build does not know would be journalled and served back
  // verbatim: a client could store anything in the ledger through them.
  command.DiscardUnknownFields();
  absl::Status refused;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      refused = absl::UnavailableError("the broker is shutting down");
    } else if (static_cast<int64_t>(queue_.size()) >= options_.max_queued) {
      refused = absl::ResourceExhaustedError(absl::StrCat("the broker's command queue is full (", queue_.size(),
                                                          " commands waiting, --max-queued-commands); retry later"));
    } else {
      queue_.push_back(Pending{std::move(command), std::move(done), dry_run});
      wake_.notify_one();
      return;
    }
  }
  done(refused);
}

void CoreLoop::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
    wake_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
  {
    std::lock_guard<std::mutex> lock(answers_mu_);
    answers_done_ = true;
    answers_cv_.notify_one();
  }
  if (responder_.joinable()) responder_.join();
}

std::shared_ptr<const ReadModel> CoreLoop::Published() const {
  std::lock_guard<std::mutex> lock(mu_);
  return published_;
}

bool CoreLoop::TickDue(core::Time now) const {
  const auto deadline = broker_->NextDeadline();
  return now >= last_tick_ + TickMs(*broker_) || (deadline && now >= *deadline);
}

void CoreLoop::Run() {
  while (true) {
    std::vector<Pending> batch;
    bool stop = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      // Sleep until work arrives, a deadline of the core is due, or a tick.
      // While writes are refused, only the retry is worth waking for: a due
      // deadline or tick stays due (every attempt before the retry is
      // refused), so waiting for it would spin.
      core::Time next = last_tick_ + TickMs(*broker_);
      if (auto d = broker_->NextDeadline(); d && !core_dirty_) next = std::min(next, *d);
      if (!ledger_health_.ok()) next = retry_commit_at_;
      const core::Time wait = std::max<core::Time>(0, next - clock_->NowMs());
      wake_.wait_for(lock, std::chrono::milliseconds(wait), [&] { return !queue_.empty() || stopping_; });
      while (!queue_.empty() && static_cast<int64_t>(batch.size()) < options_.max_batch) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      stop = stopping_ && queue_.empty();
    }
    const core::Time now = clock_->NowMs();
    last_wake_ms_.store(now, std::memory_order_relaxed);
    if (!LedgerHealth().ok()) {
      // Writes are refused until the retry; the retry first needs a core
      // that holds exactly what the ledger does.
      if (now < retry_commit_at_ || (core_dirty_ && !ReloadCore())) {
        if (now >= retry_commit_at_) retry_commit_at_ = now + options_.retry_commit_after_ms;
        Refuse(std::move(batch));
        if (stop) break;
        continue;
      }
      // A tick tries the ledger even when no one writes, or when every
      // command of the batch would be answered without a commit.
      last_tick_ = now - TickMs(*broker_);
    }
    if (!batch.empty() || TickDue(now)) ApplyBatch(std::move(batch));
    if (stop) break;
  }
  if (auto s = Snapshot(); !s.ok()) spdlog::error("ledger: final snapshot failed: {}", s.ToString());
  last_wake_ms_.store(0, std::memory_order_relaxed);
}

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
  auto apply = [&](const v1::Command& command) -> std::vector<core::Event> {
    const uint64_t quota_generation = broker_->QuotaGeneration();
    std::vector<core::Event> events = broker_->Apply(command, now);
    // A tide change replaces the quota in force during any command.
    if (broker_->QuotaGeneration() != quota_generation) all_teams = true;
    ledger::JournalRecord rec;
    rec.seq = ++seq_;
    rec.at_ms = now;
    rec.kind = KindOf(command);
    rec.payload = command.SerializeAsString();
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
    const v1::Command& command = batch[i].command;
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
    v1::Command tick;
    tick.mutable_tick();
    apply(tick);
  }
  if (out.journal.empty()) {
    // Nothing changed: answer from the model readers already have.
    std::lock_guard<std::mutex> lock(answers_mu_);
    for (size_t i = 0; i < batch.size(); ++i) {
      if (batch[i].done) answers_.push_back({std::move(batch[i].done), Applied{std::move(results[i]), before}});
    }
    answers_cv_.notify_one();
    return;
  }
  if (out.journal.back().kind == "tick") last_tick_ = now;
  for (const auto& events : applied_events) {
    for (const auto& e : events) {
      if (!e.job.empty()) last_event[e.job] = &e;
    }
  }
  // Query table rows for every job the batch touched.
  for (const auto& id : touched) {
    ledger::JobRow row;
    auto view = broker_->GetJob(id);
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
      row.spec = view->spec.SerializeAsString();
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
      // Keep what readers knew of it (cluster, created, admitted, spec).
      if (const v1::JobInfo* prev = before->FindJob(id)) {
        row.cluster = prev->cluster();
        row.created_at_ms = prev->created_at_ms();
        row.admitted_at_ms = prev->admitted_at_ms();
        row.spec = prev->spec().SerializeAsString();
        if (row.team.empty()) row.team = prev->team();
      }
    }
    out.jobs.push_back(std::move(row));
  }
  // Every batch is observed (usage is piecewise constant between batches);
  // rows are written about once a second, merged by the accountant.
  Account(now, now - last_accounting_ >= options_.accounting_every_ms || all_teams, &out.usage, &out.loans);
  if (seq_ - last_snapshot_seq_ >= options_.snapshot_every) {
    out.snapshot = ledger::SnapshotRecord{seq_, now, broker_->Snapshot().SerializeAsString()};
    last_snapshot_seq_ = seq_;
  }
  if (!unwritten_usage_.empty() || !unwritten_loans_.empty()) {
    // Merged by key, so a long outage holds one row per key, not one per retry.
    out.usage.insert(out.usage.end(), unwritten_usage_.begin(), unwritten_usage_.end());
    out.loans.insert(out.loans.end(), unwritten_loans_.begin(), unwritten_loans_.end());
    out.usage = MergeUsageRows(std::move(out.usage));
    out.loans = MergeLoanRows(std::move(out.loans));
  }
  const auto commit_started = std::chrono::steady_clock::now();
  const absl::Status committed = store_->Commit(out);
  BatchStats stats{static_cast<int64_t>(batch.size()), committed.ok(),
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - commit_started).count(), now,
                   &applied_events, nullptr};
  if (!committed.ok()) {
    if (batch_observer_) batch_observer_(stats);
    CommitFailed(committed, std::move(batch), std::move(out), now);
    return;
  }
  unwritten_usage_.clear();
  unwritten_loans_.clear();
  if (!LedgerHealth().ok()) {
    spdlog::info("ledger: a commit succeeded again (seq {}); accepting writes", seq_);
    SetLedgerHealth(absl::OkStatus());
  }
  for (auto& id : quiet) {
    if (seen.insert(id).second) touched.push_back(std::move(id));
  }
  auto model = ReadModel::Update(*before, *broker_, seq_, touched, all_teams);
  {
    std::lock_guard<std::mutex> lock(mu_);
    published_ = model;
  }
  stats.model = model.get();
  if (batch_observer_) batch_observer_(stats);
  // Answering (serializing replies, waking gRPC) happens on the responder
  // thread, so the writer goes straight on to the next batch.
  {
    std::lock_guard<std::mutex> lock(answers_mu_);
    for (size_t i = 0; i < batch.size(); ++i) {
      if (batch[i].done) answers_.push_back({std::move(batch[i].done), Applied{std::move(results[i]), model}});
    }
    if (!touched.empty()) {
      answers_hook_pending_ = true;
      answers_change_.jobs.insert(answers_change_.jobs.end(), touched.begin(), touched.end());
    }
    answers_cv_.notify_one();
  }
}

void CoreLoop::CommitFailed(const absl::Status& failure, std::vector<Pending> batch, ledger::Batch refused,
                            core::Time now) {
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
  if (ReloadCore()) {
    // The accountant holds the refused batch's usage from `now` on; the
    // acknowledged state replaces it, so refused admissions accrue nothing.
    Account(now, /*take_rows=*/false, nullptr, nullptr);
  }
  // Disk full and read-only fail before anything is written; another I/O
  // error may fail after the WAL holds the batch, so it may be in force.
  const bool surely_unwritten = failure.code() == absl::StatusCode::kResourceExhausted ||
                                failure.code() == absl::StatusCode::kFailedPrecondition ||
                                failure.code() == absl::StatusCode::kInvalidArgument;
  Refuse(std::move(batch), surely_unwritten);
}

bool CoreLoop::ReloadCore() {
  absl::StatusOr<ledger_ops::RecoveredCore> recovered = ledger_ops::RecoverCore(*store_);
  if (!recovered.ok()) {
    spdlog::error("ledger: cannot reload the core from the ledger (will retry): {}", recovered.status().ToString());
    return false;
  }
  broker_ = std::move(recovered->broker);
  seq_ = recovered->seq;
  last_snapshot_seq_ = std::min(last_snapshot_seq_, seq_);
  core_dirty_ = false;
  spdlog::info("ledger: core reloaded at seq {} (snapshot {} + {} journal entries)", seq_, recovered->snapshot_seq,
               recovered->replayed);
  return true;
}

void CoreLoop::Refuse(std::vector<Pending> batch, bool surely_unwritten) {
  const absl::Status refused = absl::UnavailableError(absl::StrCat(
      LedgerHealth().message(), surely_unwritten ? "; nothing was changed, retry later"
                                                 : "; the command may not have been applied; retrying is safe "
                                                   "(admit is idempotent per job id)"));
  std::lock_guard<std::mutex> lock(answers_mu_);
  for (Pending& p : batch) {
    if (p.done) answers_.push_back({std::move(p.done), refused});
  }
  answers_cv_.notify_one();
}

absl::Status CoreLoop::LedgerHealth() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ledger_health_;
}

void CoreLoop::SetLedgerHealth(absl::Status health) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (ledger_health_ == health) return;
    ledger_health_ = health;
  }
  if (health_hook_) health_hook_(health);
}

std::vector<core::Event> CoreLoop::DryRunEvents(const v1::Command& command, core::Time now) const {
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
  // A core holding a refused batch must never reach the ledger.
  if (core_dirty_ && !ReloadCore()) return absl::UnavailableError("the core could not be reloaded");
  if (seq_ == last_snapshot_seq_) return absl::OkStatus();
  ledger::Batch out;
  out.snapshot = ledger::SnapshotRecord{seq_, broker_->Now(), broker_->Snapshot().SerializeAsString()};
  Account(broker_->Now(), /*take_rows=*/true, &out.usage, &out.loans);
  auto s = store_->Commit(out);
  if (s.ok()) last_snapshot_seq_ = seq_;
  return s;
}

void CoreLoop::Account(core::Time now, bool take_rows, std::vector<ledger::UsageRow>* usage,
                       std::vector<ledger::LoanRow>* loans) {
  ledger::Observation obs;
  obs.now_ms = now;
  for (const auto& name : broker_->TeamNames()) {
    auto team = broker_->GetTeam(name);
    if (!team) continue;
    for (const auto& r : team->resources) {
      const std::optional<int64_t> lend_limit =
          r.lend_limit == core::kInfinite ? std::nullopt : std::optional<int64_t>(r.lend_limit);
      if (!team->leaf) {
        obs.inner.push_back({team->name, r.resource, r.guaranteed, lend_limit, team->parent});
        continue;
      }
      ledger::LeafObservation leaf;
      leaf.team = team->name;
      leaf.resource = r.resource;
      leaf.used = r.used;
      leaf.guaranteed = r.guaranteed;
      leaf.lend_limit = lend_limit;
      leaf.queued = r.queued;
      leaf.parent = team->parent;
      obs.leaves.push_back(std::move(leaf));
    }
  }
  for (const auto& resource : broker_->ResourceNames()) obs.capacity[resource] = broker_->TotalCapacity(resource);
  if (auto s = accountant_.Observe(obs); !s.ok()) {
    spdlog::warn("accounting: {}", s.ToString());
    return;
  }
  // A figure left out is reported when it first appears, not every second.
  if (accountant_.problems() != accounting_problems_) {
    accounting_problems_ = accountant_.problems();
    for (const auto& problem : accounting_problems_) spdlog::error("accounting: {}", problem);
  }
  if (!take_rows) return;
  ledger::AccountingRows rows = accountant_.TakeRows();
  for (auto& r : rows.usage) usage->push_back(std::move(r));
  for (auto& r : rows.loans) loans->push_back(std::move(r));
  last_accounting_ = now;
}

}  // namespace tidegate::service
