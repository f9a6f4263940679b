#include "broker/sim/simulator.h"

#include <queue>

#include <algorithm>
#include <limits>
#include <memory>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "broker/core/broker.h"
#include "broker/sim/job_states.h"
#include "broker/sim/scenario.h"
#include "broker/sim/work.h"

namespace tidegate::sim {
namespace {

using core::Time;

constexpr Time kNever = std::numeric_limits<Time>::max();
// Ticks in a row at one instant that leave NextDeadline() unchanged before we
// call it a core bug instead of looping forever.
constexpr int kMaxStuckTicks = 1000;

// One entry of the merged, time-ordered input: a scenario event or a trace row.
struct Input {
  Time at;
  const v1::ScenarioEvent* event = nullptr;  // else `row`.
  const TraceSubmit* row = nullptr;
};

// Copies `spec` into *out as the core takes it. `created_at` and
// `last_checkpoint_at` are scenario seconds in the file; the core's JobSpec
// fields are seconds since the epoch, so the scenario's start is added.
void CoreSpec(const v1::JobSpec& spec, Time start_ms, v1::JobSpec* out) {
  *out = spec;
  const int64_t start_s = start_ms / core::kMillisPerSecond;
  if (out->has_created_at()) out->set_created_at(start_s + out->created_at());
  if (out->has_last_checkpoint_at()) {
    out->set_last_checkpoint_at(start_s + out->last_checkpoint_at());
  }
}

WorkTracker::Spec WorkSpec(const v1::JobSpec& spec) {
  WorkTracker::Spec work;
  if (spec.has_run_s()) work.work_ms = spec.run_s() * core::kMillisPerSecond;
  if (spec.has_checkpoint_interval_s()) {
    work.checkpoint_interval_ms = spec.checkpoint_interval_s() * core::kMillisPerSecond;
  }
  return work;
}

// One simulation's state. Not reusable: construct, Run once.
class Run {
 public:
  Run(const v1::Scenario& scenario, const SimOptions& options, Time start,
      std::unique_ptr<core::Broker> broker, std::vector<std::string> leaves,
      std::vector<std::string> gpus)
      : scenario_(scenario),
        options_(options),
        start_(start),
        now_(start),
        broker_(std::move(broker)),
        leaves_(std::move(leaves)),
        gpus_(std::move(gpus)),
        summary_(leaves_, gpus_, start) {}

  absl::StatusOr<SimResult> Go();

 private:
  void BuildInputs();
  void RefreshGuarantees();
  void RefreshCapacity();
  void AdvanceTo(Time t);
  void Apply(const internal::v1::Command& command);
  void Handle(const core::Event& event);
  absl::Status RunDue();
  void RunInstant(size_t begin, size_t end);
  void Submit(const v1::JobSpec& spec, const WorkTracker::Spec& work);
  void CheckExpectations(size_t index);

  const v1::Scenario& scenario_;
  const SimOptions& options_;
  const Time start_;
  Time now_;
  Time end_ = 0;
  std::unique_ptr<core::Broker> broker_;
  std::vector<std::string> leaves_;
  std::vector<std::string> gpus_;

  TracePlan trace_;
  std::vector<Input> inputs_;
  std::vector<int> expect_order_;  // indices into scenario_.expect(), by `at`.

  JobStates states_;
  WorkTracker work_;
  SummaryBuilder summary_;
  // (by, victim) of the preempt records at now_.
  std::vector<std::pair<std::string, std::string>> instant_victims_;
  // Elastic jobs' max replicas (their progress rate is replicas / max).
  absl::flat_hash_map<std::string, int64_t> elastic_max_;
  // Resize requests the simulated frameworks will ack (policy.sim_ack_delay_s).
  struct PendingAck {
    Time at;
    uint64_t seq;
    std::string job;
    int64_t epoch;
    int64_t replicas;
    bool operator>(const PendingAck& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };
  std::priority_queue<PendingAck, std::vector<PendingAck>, std::greater<>> acks_;
  uint64_t ack_seq_ = 0;
  void NoteElastic(const v1::JobSpec& spec) {
    if (spec.elastic().max() > 0) elastic_max_[spec.job()] = spec.elastic().max();
  }
  void SetRate(const std::string& job, int64_t replicas, Time t) {
    auto it = elastic_max_.find(job);
    if (it != elastic_max_.end()) work_.SetRate(job, t, replicas, it->second);
  }
  SimResult result_;
  int next_progress_tenth_ = 1;
  // The next periodic tick (policy.tick_s after the previous one, from start).
  Time next_tick_ = kNever;
  Time tick_ms_ = 0;
};

void Run::BuildInputs() {
  for (const v1::ScenarioEvent& event : scenario_.events()) {
    inputs_.push_back(Input{start_ + event.at() * core::kMillisPerSecond, &event, nullptr});
  }
  std::stable_sort(inputs_.begin(), inputs_.end(),
                   [](const Input& a, const Input& b) { return a.at < b.at; });
  if (options_.trace != nullptr) {
    absl::flat_hash_set<std::string> teams;
    for (const v1::Team& team : scenario_.teams()) teams.insert(team.name());
    trace_ = PlanTrace(*options_.trace, teams, scenario_.clusters(0).name());
    std::vector<Input> rows;
    rows.reserve(trace_.submits.size());
    for (const TraceSubmit& row : trace_.submits) {
      rows.push_back(Input{start_ + row.offset_ms, nullptr, &row});
    }
    std::vector<Input> merged;
    merged.reserve(inputs_.size() + rows.size());
    // Same time: scenario events first, then trace rows in file order.
    std::merge(inputs_.begin(), inputs_.end(), rows.begin(), rows.end(),
               std::back_inserter(merged),
               [](const Input& a, const Input& b) { return a.at < b.at; });
    inputs_ = std::move(merged);
    result_.summary.trace = trace_.stats;
    result_.unknown_trace_teams = trace_.unknown_teams;
  }
  for (int i = 0; i < scenario_.expect_size(); ++i) expect_order_.push_back(i);
  std::stable_sort(expect_order_.begin(), expect_order_.end(), [&](int a, int b) {
    return scenario_.expect(a).at() < scenario_.expect(b).at();
  });

  Time last = start_;
  if (!inputs_.empty()) last = std::max(last, inputs_.back().at);
  if (!expect_order_.empty()) {
    last = std::max(last, start_ + scenario_.expect(expect_order_.back()).at() *
                                       core::kMillisPerSecond);
  }
  end_ = scenario_.has_until() ? start_ + scenario_.until() * core::kMillisPerSecond : last;
}

void Run::RefreshGuarantees() {
  for (const std::string& leaf : leaves_) {
    std::optional<core::TeamView> team = broker_->GetTeam(leaf);
    if (!team) continue;
    for (const core::TeamResourceView& r : team->resources) {
      summary_.SetGuaranteed(leaf, r.resource, r.guaranteed, now_);
    }
  }
}

void Run::RefreshCapacity() {
  for (const std::string& gpu : gpus_) {
    summary_.SetCapacity(gpu, broker_->TotalCapacity(gpu), now_);
  }
}

void Run::AdvanceTo(Time t) {
  if (t == now_) return;
  now_ = t;
  instant_victims_.clear();
  if (options_.on_progress && end_ > start_) {
    while (next_progress_tenth_ <= 10 &&
           (now_ - start_) * 10 >= (end_ - start_) * next_progress_tenth_) {
      options_.on_progress(next_progress_tenth_ / 10.0, result_.records);
      ++next_progress_tenth_;
    }
  }
}

void Run::Handle(const core::Event& e) {
  using core::EventType;
  states_.Apply(e);
  summary_.OnRecord(e);
  switch (e.type) {
    case EventType::kAdmit:
      SetRate(e.job, e.replicas, e.at);
      work_.Start(e.job, e.at);
      break;
    case EventType::kResize:
      SetRate(e.job, e.to, e.at);
      if (e.reason != "deadline" && e.reason != "ack") {
        const Time delay = scenario_.policy().sim_ack_delay_s() * core::kMillisPerSecond;
        acks_.push(PendingAck{e.at + delay, ack_seq_++, e.job, e.epoch, e.to});
      }
      break;
    case EventType::kPreempt:
      summary_.AddLostWork(e.job, work_.Stop(e.job, e.at));
      instant_victims_.emplace_back(e.by, e.job);
      break;
    case EventType::kEnd:
    case EventType::kReject: work_.End(e.job); break;
    default: break;
  }
  ++result_.records;
  if (options_.on_record) options_.on_record(e, start_);
}

void Run::Apply(const internal::v1::Command& command) {
  const uint64_t quota_generation = broker_->QuotaGeneration();
  for (const core::Event& event : broker_->Apply(command, now_)) Handle(event);
  // A tide boundary (or any config change) moves the guarantees the summary
  // measures borrowing against.
  if (broker_->QuotaGeneration() != quota_generation) RefreshGuarantees();
}

absl::Status Run::RunDue() {
  int stuck = 0;
  std::optional<Time> last_deadline;
  while (true) {
    // Acks first: an ack at a deadline's instant is in time.
    if (!acks_.empty() && acks_.top().at <= now_) {
      const PendingAck ack = acks_.top();
      acks_.pop();
      // The framework answers only a request that is still the latest.
      std::optional<core::JobView> job = broker_->GetJob(ack.job);
      if (!job || job->resize_from < 0 || job->epoch != ack.epoch) continue;
      internal::v1::Command command;
      command.mutable_ack_resize()->set_job(ack.job);
      command.mutable_ack_resize()->set_epoch(ack.epoch);
      command.mutable_ack_resize()->set_replicas(ack.replicas);
      Apply(command);
      continue;
    }
    std::optional<Time> deadline = broker_->NextDeadline();
    if (deadline && *deadline <= now_) {
      stuck = (deadline == last_deadline) ? stuck + 1 : 0;
      if (stuck > kMaxStuckTicks) {
        return absl::InternalError(absl::StrCat(
            "core: NextDeadline() stays at ", *deadline, " ms after Apply(Tick, ", now_, ")"));
      }
      last_deadline = deadline;
      internal::v1::Command tick;
      tick.mutable_tick();
      Apply(tick);
      continue;
    }
    if (std::optional<std::string> job = work_.PopDue(now_)) {
      internal::v1::Command finish;
      finish.set_finish(*job);
      Apply(finish);
      continue;
    }
    return absl::OkStatus();
  }
}

void Run::Submit(const v1::JobSpec& spec, const WorkTracker::Spec& work) {
  work_.Register(spec.job(), work);
  NoteElastic(spec);
  summary_.OnSubmit(spec, now_);
  internal::v1::Command command;
  CoreSpec(spec, start_, command.mutable_submit());
  Apply(command);
}

void Run::RunInstant(size_t begin, size_t end) {
  // All adopts of the instant first, together, as one command.
  internal::v1::Command adopt;
  for (size_t i = begin; i < end; ++i) {
    const v1::ScenarioEvent* event = inputs_[i].event;
    if (event == nullptr || !event->has_adopt()) continue;
    work_.Register(event->adopt().job(), WorkSpec(event->adopt()));
    NoteElastic(event->adopt());
    summary_.OnAdopt(event->adopt());
    CoreSpec(event->adopt(), start_, adopt.mutable_adopt()->add_jobs());
  }
  if (adopt.has_adopt()) {
    Apply(adopt);
    for (const v1::JobSpec& spec : adopt.adopt().jobs()) {
      if (!spec.draining()) continue;
      // Already being evicted: it holds capacity but makes no progress.
      std::optional<core::JobView> job = broker_->GetJob(spec.job());
      if (job && job->state == v1::JOB_STATE_DRAINING) {
        states_.SetState(spec.job(), v1::JOB_STATE_DRAINING);
        work_.Stop(spec.job(), now_);
      }
    }
  }
  for (size_t i = begin; i < end; ++i) {
    const Input& input = inputs_[i];
    if (input.row != nullptr) {
      WorkTracker::Spec work;
      work.work_ms = input.row->run_ms;
      Submit(input.row->spec, work);
      continue;
    }
    const v1::ScenarioEvent& event = *input.event;
    internal::v1::Command command;
    switch (event.kind_case()) {
      case v1::ScenarioEvent::kSubmit:
        Submit(event.submit(), WorkSpec(event.submit()));
        break;
      case v1::ScenarioEvent::kAdopt:
        break;  // done above.
      case v1::ScenarioEvent::kCheckpoint:
        work_.Checkpoint(event.checkpoint(), now_);
        command.set_checkpoint(event.checkpoint());
        Apply(command);
        break;
      case v1::ScenarioEvent::kFinish:
        command.set_finish(event.finish());
        Apply(command);
        break;
      case v1::ScenarioEvent::kSetQuota:
        *command.mutable_set_quota() = event.set_quota();
        Apply(command);
        RefreshGuarantees();
        break;
      case v1::ScenarioEvent::kSetCapacity:
        *command.mutable_set_capacity() = event.set_capacity();
        Apply(command);
        RefreshCapacity();
        break;
      case v1::ScenarioEvent::KIND_NOT_SET:
        break;  // rejected by ValidateScenario.
    }
  }
}

void Run::CheckExpectations(size_t index) {
  const int i = expect_order_[index];
  const v1::Expectation& e = scenario_.expect(i);
  if (!e.by().empty()) {
    std::vector<std::string> victims;
    for (const auto& [by, victim] : instant_victims_) {
      if (by == e.by()) victims.push_back(victim);
    }
    result_.expectations.push_back(CheckVictimExpectation(e, i, std::move(victims)));
  } else {
    result_.expectations.push_back(CheckJobExpectation(e, i, states_.Find(e.job())));
  }
}

absl::StatusOr<SimResult> Run::Go() {
  BuildInputs();
  RefreshGuarantees();
  RefreshCapacity();
  // docs/policy.md §4: a cycle runs on every tick too (lost work, and with it the
  // victim order, moves with time alone). As the service: tick_s 0 is 1 s.
  const int64_t tick_s = scenario_.policy().has_tick_s() ? scenario_.policy().tick_s() : 10;
  tick_ms_ = std::max<int64_t>(1, tick_s) * core::kMillisPerSecond;
  next_tick_ = start_ + tick_ms_;
  size_t next_input = 0;
  size_t next_expect = 0;
  auto expect_at = [&](size_t k) {
    return start_ + scenario_.expect(expect_order_[k]).at() * core::kMillisPerSecond;
  };
  while (true) {
    Time next = kNever;
    if (next_input < inputs_.size()) next = std::min(next, inputs_[next_input].at);
    if (next_expect < expect_order_.size()) next = std::min(next, expect_at(next_expect));
    if (std::optional<Time> deadline = broker_->NextDeadline()) {
      next = std::min(next, std::max(*deadline, now_));
    }
    if (std::optional<Time> done = work_.NextCompletion()) {
      next = std::min(next, std::max(*done, now_));
    }
    if (!acks_.empty()) next = std::min(next, std::max(acks_.top().at, now_));
    next = std::min(next, next_tick_);  // never past end_: see the break.
    if (next == kNever || next > end_) break;
    AdvanceTo(next);
    if (absl::Status s = RunDue(); !s.ok()) return s;
    size_t group_end = next_input;
    while (group_end < inputs_.size() && inputs_[group_end].at == now_) ++group_end;
    if (group_end > next_input) {
      RunInstant(next_input, group_end);
      next_input = group_end;
      if (absl::Status s = RunDue(); !s.ok()) return s;
    }
    if (now_ == next_tick_) {
      // After the instant's events, so that adopts still come before any cycle.
      internal::v1::Command tick;
      tick.mutable_tick();
      Apply(tick);
      if (absl::Status s = RunDue(); !s.ok()) return s;
      next_tick_ += tick_ms_;
    }
    while (next_expect < expect_order_.size() && expect_at(next_expect) == now_) {
      CheckExpectations(next_expect++);
    }
  }
  AdvanceTo(std::max(end_, now_));
  result_.events_after_until = static_cast<int64_t>(inputs_.size() - next_input);
  for (; next_expect < expect_order_.size(); ++next_expect) {
    const int i = expect_order_[next_expect];
    result_.expectations.push_back(NotReached(scenario_.expect(i), i, scenario_.until()));
  }
  std::stable_sort(result_.expectations.begin(), result_.expectations.end(),
                   [](const ExpectationResult& a, const ExpectationResult& b) {
                     return a.index < b.index;
                   });
  std::optional<TraceStats> trace = result_.summary.trace;
  result_.summary = summary_.Finish(now_, states_.Count(v1::JOB_STATE_QUEUED));
  result_.summary.trace = trace;
  result_.start_ms = start_;
  result_.end_ms = now_;
  return std::move(result_);
}

}  // namespace

int SimResult::FailedExpectations() const {
  return static_cast<int>(std::count_if(expectations.begin(), expectations.end(),
                                        [](const ExpectationResult& r) { return !r.passed; }));
}

absl::StatusOr<SimResult> Simulate(const v1::Scenario& scenario, const SimOptions& options) {
  if (absl::Status s = ValidateScenario(scenario); !s.ok()) return s;
  absl::StatusOr<Time> start = ParseStart(scenario.start());
  if (!start.ok()) return start.status();
  if (options.trace != nullptr && scenario.clusters_size() == 0) {
    return absl::InvalidArgumentError("clusters: --trace needs at least one cluster");
  }
  absl::StatusOr<std::unique_ptr<core::Broker>> broker =
      core::Broker::Create(ScenarioConfig(scenario), *start);
  if (!broker.ok()) return broker.status();

  std::vector<std::string> leaves;
  for (const std::string& name : (*broker)->TeamNames()) {
    std::optional<core::TeamView> team = (*broker)->GetTeam(name);
    if (team && team->leaf) leaves.push_back(name);
  }
  std::vector<std::string> gpus;
  for (const std::string& resource : (*broker)->ResourceNames()) {
    if (IsGpuResource(resource)) gpus.push_back(resource);
  }
  Run run(scenario, options, *start, *std::move(broker), std::move(leaves), std::move(gpus));
  return run.Go();
}

}  // namespace tidegate::sim
