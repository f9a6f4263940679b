#include "broker/service/core_loop.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "api/text/config_diff.h"
#include "api/text/enum_names.h"
#include "broker/ledger_ops/recovery.h"
#include "broker/service/auth_origin.h"
#include "broker/service/core_loop_commands.h"
#include "broker/service/leader_tail.h"
#include "broker/service/unknown_fields.h"
#include "google/protobuf/util/message_differencer.h"
#include "spdlog/spdlog.h"

namespace tidegate::service {

using loop_internal::ConfigSized;
using loop_internal::KindOf;
using loop_internal::TickMs;

CoreLoop::CoreLoop(std::unique_ptr<core::Broker> broker, std::unique_ptr<ledger::Store> store, Clock* clock,
                   CoreLoopOptions options, int64_t seq, SnapshotCount since)
    : broker_(std::move(broker)), store_(std::move(store)), clock_(clock), options_(options), seq_(seq) {
  last_snapshot_seq_ = since.seq;
  snapshot_bytes_ = since.bytes;
  journal_bytes_since_snapshot_ = since.journal_bytes;
  snapshot_row_seq_ = seq;
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
  SnapshotCount since;
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
    since = {recovered->snapshot_seq, recovered->snapshot_bytes, recovered->replayed_bytes};
    spdlog::info("ledger: recovered from snapshot at seq {} and {} journal entries", recovered->snapshot_seq,
                 recovered->replayed);
  }
  // Counted from zero, a restart would delay the next snapshot by a whole
  // interval, or (the snapshot's size unknown) take one after
  // snapshot_every entries however big the state.
  auto loop =
      std::unique_ptr<CoreLoop>(new CoreLoop(std::move(broker), std::move(store), clock, options, seq, since));
  // The config file given at start-up is the one in force: a difference
  // (e.g. a `config apply` not written back to the file) is applied as a
  // journalled change, never silently.
  if (!google::protobuf::util::MessageDifferencer::Equivalent(loop->broker_->Config(), config)) {
    const std::vector<std::string> diff = text::ConfigDiff(loop->broker_->Config(), config);
    spdlog::warn("config: the --config file differs from the ledger's config; applying the file as a "
                 "journalled config change ({} {}):",
                 diff.size(), diff.size() == 1 ? "change" : "changes");
    for (const auto& line : diff) spdlog::warn("config:   {}", line);
    if (diff.empty()) spdlog::warn("config:   (only the order of entries differs)");
    internal::v1::Command apply;
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
  // Named for profiles and per-thread CPU (bench/run-loadgen.sh).
  responder_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "tidegate-answer");
    Respond();
  });
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "tidegate-writer");
    Run();
  });
}

void CoreLoop::AnswerNow() {
  std::deque<std::pair<Done, absl::StatusOr<Applied>>> answers;
  {
    absl::MutexLock lock(&answers_mu_);
    answers.swap(answers_);
    answers_hook_pending_ = false;
  }
  for (auto& [done, applied] : answers) done(std::move(applied));
}

void CoreLoop::QueueAnswers(std::vector<std::pair<Done, absl::StatusOr<Applied>>> answers,
                            const std::vector<std::string>* changed_jobs) {
  absl::MutexLock lock(&answers_mu_);
  for (auto& answer : answers) {
    if (answer.first) answers_.push_back(std::move(answer));
  }
  if (changed_jobs != nullptr && !changed_jobs->empty()) {
    answers_hook_pending_ = true;
    answers_change_.jobs.insert(answers_change_.jobs.end(), changed_jobs->begin(), changed_jobs->end());
  }
}

void CoreLoop::Respond() {
  while (true) {
    std::deque<std::pair<Done, absl::StatusOr<Applied>>> answers;
    bool hook = false;
    PublishedChange change;
    {
      absl::MutexLock lock(&answers_mu_);
      auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(answers_mu_) {
        return !answers_.empty() || answers_hook_pending_ || answers_done_;
      };
      answers_mu_.Await(absl::Condition(&ready));
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

void CoreLoop::DryRun(internal::v1::Command command, Done done) { Enqueue(std::move(command), std::move(done), /*dry_run=*/true); }

absl::Status CoreLoop::CheckSize(const internal::v1::Command& command) const {
  const bool config_sized = ConfigSized(command);
  const int64_t limit = config_sized ? options_.max_config_bytes : options_.max_command_bytes;
  const size_t size = command.ByteSizeLong();
  if (static_cast<int64_t>(size) <= limit) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(KindOf(command), ": the request is ", size, " bytes, more than the ",
                                                 limit, " accepted (",
                                                 config_sized ? "--max-config-bytes" : "--max-request-bytes", ")"));
}

int64_t CoreLoop::queued_for_tests() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(queue_.size());
}

void CoreLoop::Submit(internal::v1::Command command, Done done) {
  StampOrigin(&command);  // who asked, for the journal (auth_origin.h)
  Enqueue(std::move(command), std::move(done), /*dry_run=*/false);
}

void CoreLoop::Enqueue(internal::v1::Command command, Done done, bool dry_run) {
  if (auto s = CheckSize(command); !s.ok()) {
    done(s);
    return;
  }
  // Fields this build does not know would be journalled and served back
  // verbatim: a client could store anything in the ledger through them.
  static const UnknownFieldScrubber scrubber(internal::v1::Command::descriptor());
  scrubber.Scrub(&command);
  absl::Status refused;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) {
      refused = absl::UnavailableError("the broker is shutting down");
    } else if (static_cast<int64_t>(queue_.size()) >= options_.max_queued) {
      refused = absl::ResourceExhaustedError(absl::StrCat("the broker's command queue is full (", queue_.size(),
                                                          " commands waiting, --max-queued-commands); retry later"));
    } else {
      queue_.push_back(Pending{std::move(command), std::move(done), dry_run});
      return;
    }
  }
  done(refused);
}

void CoreLoop::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
  {
    absl::MutexLock lock(&answers_mu_);
    answers_done_ = true;
  }
  if (responder_.joinable()) responder_.join();
}

std::shared_ptr<const ReadModel> CoreLoop::Published() const {
  absl::MutexLock lock(&mu_);
  return published_;
}

CoreLoop::Lookup CoreLoop::PublishedForLookup() const {
  const bool outcome_unknown = commit_outcome_unknown_.load(std::memory_order_acquire);
  return Lookup{Published(), outcome_unknown, outcome_unknown ? LedgerHealth() : absl::OkStatus()};
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
      absl::MutexLock lock(&mu_);
      // Sleep until work arrives, a deadline of the core is due, or a tick.
      // While writes are refused, only the retry is worth waking for: a due
      // deadline or tick stays due (every attempt before the retry is
      // refused), so waiting for it would spin.
      core::Time next = last_tick_ + TickMs(*broker_);
      if (auto d = broker_->NextDeadline(); d && !core_dirty_) next = std::min(next, *d);
      if (SnapshotPartsPending()) next = 0;  // an idle writer writes them on
      if (!ledger_health_.ok()) next = retry_commit_at_;
      // A ledger that lost acknowledged commits is never retried, but the
      // loop still wakes each tick: liveness reads its wake-ups, and a hung
      // snapshot child is reaped on one.
      if (ledger_lost_) next = clock_->NowMs() + TickMs(*broker_);
      const core::Time wait = std::max<core::Time>(0, next - clock_->NowMs());
      auto work = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
        return !queue_.empty() || stopping_ || snapshot_captured_;
      };
      mu_.AwaitWithTimeout(absl::Condition(&work), absl::Milliseconds(wait));
      snapshot_captured_ = false;  // CollectSnapshot below takes the result
      while (!queue_.empty() && static_cast<int64_t>(batch.size()) < options_.max_batch) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      stop = stopping_ && queue_.empty();
    }
    const core::Time now = clock_->NowMs();
    last_wake_ms_.store(now, std::memory_order_relaxed);
    CollectSnapshot();
    if (!LedgerHealth().ok()) {
      // Writes are refused until the retry; the retry first needs a core
      // that holds exactly what the ledger does.
      if (ledger_lost_ || now < retry_commit_at_ || (core_dirty_ && !ReloadCore())) {
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
    WriteSnapshotPartAlone();  // when no batch carried one
    if (stop) break;
  }
  if (auto s = Snapshot(); !s.ok()) spdlog::error("ledger: final snapshot failed: {}", s.ToString());
  last_wake_ms_.store(0, std::memory_order_relaxed);
}

absl::Status CoreLoop::LedgerHealth() const {
  absl::MutexLock lock(&mu_);
  return ledger_health_;
}

void CoreLoop::SetLedgerHealth(absl::Status health) {
  {
    absl::MutexLock lock(&mu_);
    if (ledger_health_ == health) return;
    ledger_health_ = health;
  }
  if (health_hook_) health_hook_(health);
}

}  // namespace tidegate::service
