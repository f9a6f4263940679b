#include "broker/service/core_loop.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
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

const char* StateName(v1::JobState s) {
  switch (s) {
    case v1::JOB_STATE_QUEUED: return "queued";
    case v1::JOB_STATE_ADMITTED: return "admitted";
    case v1::JOB_STATE_DRAINING: return "draining";
    case v1::JOB_STATE_ENDED: return "ended";
    case v1::JOB_STATE_REJECTED: return "rejected";
    default: return "unknown";
  }
}

}  // namespace

CoreLoop::CoreLoop(std::unique_ptr<core::Broker> broker, std::unique_ptr<ledger::Store> store, Clock* clock,
                   CoreLoopOptions options, int64_t seq)
    : broker_(std::move(broker)), store_(std::move(store)), clock_(clock), options_(options), seq_(seq) {
  last_snapshot_seq_ = seq;
  last_accounting_ = broker_->Now();
  published_ = ReadModel::Build(*broker_, seq_);
}

absl::StatusOr<std::unique_ptr<CoreLoop>> CoreLoop::Open(const v1::Config& config,
                                                         std::unique_ptr<ledger::Store> store, Clock* clock,
                                                         CoreLoopOptions options) {
  auto latest = store->LatestSnapshot();
  if (!latest.ok()) return latest.status();
  std::unique_ptr<core::Broker> broker;
  int64_t seq = 0;
  if (!latest->has_value()) {
    auto created = core::Broker::Create(config, clock->NowMs());
    if (!created.ok()) return created.status();
    broker = *std::move(created);
    ledger::Batch first;
    first.snapshot = ledger::SnapshotRecord{0, broker->Now(), broker->Snapshot().SerializeAsString()};
    if (auto s = store->Commit(first); !s.ok()) return s;
    spdlog::info("ledger: new, initial state written");
  } else {
    v1::CoreSnapshot snap;
    if (!snap.ParseFromString((*latest)->payload)) {
      return absl::DataLossError(absl::StrCat("ledger: snapshot at seq ", (*latest)->seq, " does not parse"));
    }
    auto restored = core::Broker::Restore(snap);
    if (!restored.ok()) return restored.status();
    broker = *std::move(restored);
    seq = (*latest)->seq;
    int64_t replayed = 0;
    auto status = store->ReadJournal(seq, [&](const ledger::JournalRecord& rec) -> absl::Status {
      v1::Command command;
      if (!command.ParseFromString(rec.payload)) {
        return absl::DataLossError(absl::StrCat("ledger: journal entry ", rec.seq, " does not parse"));
      }
      broker->Apply(command, rec.at_ms);
      seq = rec.seq;
      ++replayed;
      return absl::OkStatus();
    });
    if (!status.ok()) return status;
    spdlog::info("ledger: recovered from snapshot at seq {} and {} journal entries", (*latest)->seq, replayed);
  }
  auto loop = std::unique_ptr<CoreLoop>(new CoreLoop(std::move(broker), std::move(store), clock, options, seq));
  // The config file given at start-up is the one in force.
  if (!google::protobuf::util::MessageDifferencer::Equivalent(loop->broker_->Config(), config)) {
    v1::Command apply;
    *apply.mutable_apply_config() = config;
    absl::Status result;
    loop->ApplyBatch({Pending{apply, [&](absl::StatusOr<Applied> applied) {
                                for (const auto& e : applied->events) {
                                  if (e.type == core::EventType::kError) result = absl::FailedPreconditionError(e.reason);
                                }
                              }}});
    loop->AnswerNow();  // no responder thread yet: answer on this one.
    if (!result.ok()) spdlog::error("config: the new config file was not applied: {}", result.ToString());
  }
  return loop;
}

CoreLoop::~CoreLoop() { Stop(); }

void CoreLoop::Start() {
  responder_ = std::thread([this] { Respond(); });
  thread_ = std::thread([this] { Run(); });
}

void CoreLoop::AnswerNow() {
  std::deque<std::pair<Done, Applied>> answers;
  {
    std::lock_guard<std::mutex> lock(answers_mu_);
    answers.swap(answers_);
    answers_hook_pending_ = false;
  }
  for (auto& [done, applied] : answers) done(std::move(applied));
}

void CoreLoop::Respond() {
  while (true) {
    std::deque<std::pair<Done, Applied>> answers;
    bool hook = false;
    {
      std::unique_lock<std::mutex> lock(answers_mu_);
      answers_cv_.wait(lock, [&] { return !answers_.empty() || answers_hook_pending_ || answers_done_; });
      answers.swap(answers_);
      hook = answers_hook_pending_;
      answers_hook_pending_ = false;
      if (answers.empty() && !hook && answers_done_) return;
    }
    for (auto& [done, applied] : answers) done(std::move(applied));
    if (hook && publish_hook_) publish_hook_();
  }
}

void CoreLoop::Submit(v1::Command command, Done done) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_) {
      queue_.push_back(Pending{std::move(command), std::move(done)});
      wake_.notify_one();
      return;
    }
  }
  done(absl::UnavailableError("the broker is shutting down"));
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

void CoreLoop::Run() {
  const core::Time tick_ms = std::max<int64_t>(1, broker_->Config().policy().has_tick_s()
                                                      ? broker_->Config().policy().tick_s()
                                                      : 10) * core::kMillisPerSecond;
  core::Time last_tick = clock_->NowMs();
  while (true) {
    std::vector<Pending> batch;
    bool stop = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      // Sleep until work arrives, a deadline of the core is due, or a tick.
      core::Time next = last_tick + tick_ms;
      if (auto d = broker_->NextDeadline()) next = std::min(next, *d);
      const core::Time wait = std::max<core::Time>(0, next - clock_->NowMs());
      wake_.wait_for(lock, std::chrono::milliseconds(wait), [&] { return !queue_.empty() || stopping_; });
      while (!queue_.empty() && static_cast<int64_t>(batch.size()) < options_.max_batch) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      stop = stopping_ && queue_.empty();
    }
    const core::Time now = clock_->NowMs();
    const auto deadline = broker_->NextDeadline();
    if (batch.empty() && (now >= last_tick + tick_ms || (deadline && now >= *deadline))) {
      v1::Command tick;
      tick.mutable_tick();
      batch.push_back(Pending{std::move(tick), nullptr});
      last_tick = now;
    }
    if (!batch.empty()) ApplyBatch(std::move(batch));
    if (stop) break;
  }
  if (auto s = Snapshot(); !s.ok()) spdlog::error("ledger: final snapshot failed: {}", s.ToString());
}

void CoreLoop::ApplyBatch(std::vector<Pending> batch) {
  const core::Time now = std::max(clock_->NowMs(), broker_->Now());
  const std::shared_ptr<const ReadModel> before = Published();
  ledger::Batch out;
  std::vector<std::vector<core::Event>> results;
  results.reserve(batch.size());
  std::vector<std::string> touched;
  absl::flat_hash_set<std::string> seen;
  bool all_teams = false;
  absl::flat_hash_map<std::string, const core::Event*> last_event;  // per job, for ended/rejected rows
  std::vector<std::string> quiet;  // changed with no event (QuietlyChangedIds)
  for (Pending& p : batch) {
    const uint64_t quota_generation = broker_->QuotaGeneration();
    std::vector<core::Event> events = broker_->Apply(p.command, now);
    // A tide change replaces the quota in force during any command.
    if (broker_->QuotaGeneration() != quota_generation) all_teams = true;
    ledger::JournalRecord rec;
    rec.seq = ++seq_;
    rec.at_ms = now;
    rec.kind = KindOf(p.command);
    rec.payload = p.command.SerializeAsString();
    rec.checksum = ledger::Checksum(rec.payload);
    out.journal.push_back(std::move(rec));
    if (ChangesConfig(p.command)) all_teams = true;
    std::vector<std::string> ids;
    CommandJobs(p.command, &ids);
    for (const auto& e : events) ids.push_back(e.job);
    // Re-read for readers, but no query-table row: a recomputed reason is
    // not a state change, and rows for every waiting job would swamp the ledger.
    for (const auto& id : broker_->QuietlyChangedIds()) quiet.push_back(id);
    for (auto& id : ids) {
      if (!id.empty() && seen.insert(id).second) touched.push_back(id);
    }
    results.push_back(std::move(events));
  }
  for (const auto& events : results) {
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
      row.state = StateName(view->state);
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
  if (auto s = store_->Commit(out); !s.ok()) {
    // The core has applied what the ledger could not record: the only safe
    // way on is to stop and recover from the ledger, which holds exactly what
    // was acknowledged.
    spdlog::critical("ledger: commit failed, stopping to recover from the ledger: {}", s.ToString());
    std::abort();
  }
  for (auto& id : quiet) {
    if (seen.insert(id).second) touched.push_back(std::move(id));
  }
  auto model = ReadModel::Update(*before, *broker_, seq_, touched, all_teams);
  {
    std::lock_guard<std::mutex> lock(mu_);
    published_ = model;
  }
  // Answering (serializing replies, waking gRPC) happens on the responder
  // thread, so the writer goes straight on to the next batch.
  {
    std::lock_guard<std::mutex> lock(answers_mu_);
    for (size_t i = 0; i < batch.size(); ++i) {
      if (batch[i].done) answers_.push_back({std::move(batch[i].done), Applied{std::move(results[i]), model}});
    }
    answers_hook_pending_ = true;
    answers_cv_.notify_one();
  }
}

absl::Status CoreLoop::Snapshot() {
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
    if (!team || !team->leaf) continue;
    for (const auto& r : team->resources) {
      ledger::LeafObservation leaf;
      leaf.team = team->name;
      leaf.resource = r.resource;
      leaf.used = r.used;
      leaf.guaranteed = r.guaranteed;
      if (r.lend_limit != core::kInfinite) leaf.lend_limit = r.lend_limit;
      leaf.queued = r.queued;
      obs.leaves.push_back(std::move(leaf));
    }
  }
  if (auto s = accountant_.Observe(obs); !s.ok()) {
    spdlog::warn("accounting: {}", s.ToString());
    return;
  }
  if (!take_rows) return;
  ledger::AccountingRows rows = accountant_.TakeRows();
  for (auto& r : rows.usage) usage->push_back(std::move(r));
  for (auto& r : rows.loans) loans->push_back(std::move(r));
  last_accounting_ = now;
}

}  // namespace tidegate::service
