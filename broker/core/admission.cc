#include "broker/core/admission.h"

#include <algorithm>
#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "broker/core/fair_share.h"
#include "broker/core/names.h"
#include "broker/core/tide.h"
#include "google/protobuf/util/message_differencer.h"

namespace tidegate::core {

// Why a job that fits now waits between a tide lead and its change.
constexpr char kNoRoomUnderComingTide[] = "tide: no room under the quota of the coming tide change";

void Admission::Emit(Event e) {
  e.at = s_.now();
  s_.out().push_back(std::move(e));
}

Event RejectEvent(const v1::JobSpec& spec, const absl::Status& why, Time now) {
  Event e;
  e.type = EventType::kReject;
  e.job = spec.job();
  e.team = spec.team();
  e.reason = std::string(why.message());
  e.at = now;
  return e;
}

std::string EndedDifferentSpecReason(const std::string& id, const EndedJob& ended, int64_t retention_s) {
  return absl::StrCat("job '", id, "' already exists: it ended at ", ended.ended_at,
                      " ms with a different spec, and its id stays taken for ", retention_s, " s after it ended");
}

std::string DifferentSpecReason(const std::string& id) {
  return absl::StrCat("job '", id, "' already exists with a different spec");
}

absl::StatusOr<Job> ParseSubmit(const CompiledConfig& config, const v1::JobSpec& spec, Time now) {
  if (spec.draining()) {
    return absl::InvalidArgumentError("draining: only adopt may record a job that is already draining");
  }
  if (absl::Status bounds = CheckSubmitBounds(spec, /*adopt=*/false); !bounds.ok()) return bounds;
  return ParseJobSpec(config, spec, now);
}

void Admission::Reject(const v1::JobSpec& spec, const absl::Status& why) {
  Emit(RejectEvent(spec, why, s_.now()));
}

void Admission::Error(const std::string& job, std::string reason) {
  Event e;
  e.type = EventType::kError;
  e.job = job;
  e.reason = std::move(reason);
  Emit(std::move(e));
}

// ---------------------------------------------------------------- commands

absl::StatusOr<Job> ParseJobSpec(const CompiledConfig& c, const v1::JobSpec& in, Time now) {
  const int R = c.num_resources();
  auto bad = [](auto&&... parts) { return absl::InvalidArgumentError(absl::StrCat(parts...)); };
  if (in.job().empty()) return bad("job: the job id is empty");
  Job job;
  job.id = in.job();
  auto team = c.node_index.find(in.team());
  if (team == c.node_index.end()) return bad("team: '", in.team(), "' is not a team");
  if (!c.nodes[team->second].leaf) return bad("team: '", in.team(), "' is not a leaf team (jobs belong to leaf teams)");
  job.team = team->second;
  if (in.cluster().empty()) {
    if (c.clusters.size() != 1) return bad("cluster: required when there are several clusters");
    job.cluster = 0;
  } else {
    auto cl = c.cluster_index.find(in.cluster());
    if (cl == c.cluster_index.end()) return bad("cluster: '", in.cluster(), "' is not a cluster");
    job.cluster = cl->second;
  }
  const bool elastic = in.elastic().min() != 0 || in.elastic().max() != 0;
  if (elastic) {
    if (in.has_replicas()) return bad("replicas: ", in.replicas(), " is for rigid jobs; an elastic job sets elastic.min and elastic.max");
    if (in.elastic().min() <= 0) return bad("elastic.min: ", in.elastic().min(), " must be > 0");
    if (in.elastic().max() < in.elastic().min()) {
      return bad("elastic.max: ", in.elastic().max(), " must be >= elastic.min (", in.elastic().min(), ")");
    }
    job.elastic_min = in.elastic().min();
    job.elastic_max = in.elastic().max();
    job.replicas = job.elastic_min;  // the gang it is admitted with.
  } else {
    job.replicas = in.has_replicas() ? in.replicas() : 1;
    if (job.replicas <= 0) return bad("replicas: ", job.replicas, " must be > 0");
  }
  const int64_t most_replicas = elastic ? job.elastic_max : job.replicas;
  if (in.per_replica().empty()) return bad("per_replica: no resources requested");
  job.demand.assign(R, 0);
  job.per_replica.assign(R, 0);
  for (const auto& [name, q] : in.per_replica()) {
    auto r = c.resource_index.find(name);
    if (r == c.resource_index.end()) return bad("per_replica.", name, ": unknown resource '", name, "'");
    if (q < 0) return bad("per_replica.", name, ": ", q, " must be >= 0");
    auto d = CheckedMul(q, most_replicas);
    if (!d) return bad("per_replica.", name, ": ", most_replicas, " replicas x ", q, " overflows int64");
    job.per_replica[r->second] = q;
    job.demand[r->second] = q * job.replicas;
    job.requested |= ResourceMask{1} << r->second;
  }
  Quantity gpus = 0, largest = 0;
  for (int r = 0; r < R; ++r) {
    if (c.is_gpu[r]) gpus = SatAdd(gpus, job.demand[r]);
    largest = std::max(largest, job.demand[r]);
  }
  job.gpus = gpus > 0 ? gpus : largest;
  job.priority = in.priority();
  const int64_t grace_s = in.has_grace_s() ? in.grace_s() : c.policy.default_grace_s;
  if (grace_s < 0) return bad("grace_s: ", grace_s, " must be >= 0");
  auto grace = CheckedMul(grace_s, kMillisPerSecond);
  if (!grace) return bad("grace_s: ", grace_s, " is out of range");
  job.grace_ms = *grace;
  job.requeue = in.has_requeue() ? in.requeue() : true;
  // Seconds to milliseconds, checked: a wrapped time would reorder queues
  // and lost work.
  auto millis = [&](const char* field, int64_t seconds) -> absl::StatusOr<Time> {
    if (seconds < 0) return bad(field, ": ", seconds, " must be >= 0");
    auto ms = CheckedMul(seconds, kMillisPerSecond);
    if (!ms) return bad(field, ": ", seconds, " is out of range (at most ", kInfinite / kMillisPerSecond, " s)");
    return *ms;
  };
  if (in.has_checkpoint_interval_s()) {
    auto ms = millis("checkpoint_interval_s", in.checkpoint_interval_s());
    if (!ms.ok()) return ms.status();
    job.checkpoint_interval_ms = *ms;
  }
  if (in.has_last_checkpoint_at()) {
    auto ms = millis("last_checkpoint_at", in.last_checkpoint_at());
    if (!ms.ok()) return ms.status();
    job.last_checkpoint = *ms;
  }
  if (in.has_created_at()) {
    auto ms = millis("created_at", in.created_at());
    if (!ms.ok()) return ms.status();
    job.created_at = *ms;
  } else {
    job.created_at = now;
  }
  if (in.has_run_s()) {
    auto ms = millis("run_s", in.run_s());
    if (!ms.ok()) return ms.status();
  }

  // The normalized spec: defaults filled in, so resubmissions compare equal.
  job.spec = in;
  job.spec.set_cluster(c.clusters[job.cluster].name);
  if (!elastic) job.spec.set_replicas(job.replicas);
  job.spec.set_grace_s(grace_s);
  job.spec.set_requeue(job.requeue);
  job.spec.clear_created_at();
  job.spec.clear_draining();
  return job;
}

absl::Status CheckSubmitBounds(const v1::JobSpec& in, bool adopt) {
  if (auto st = ValidateName("job", in.job()); !st.ok()) return st;
  if (auto st = ValidateLabels("labels", in.labels()); !st.ok()) return st;
  if (in.has_elastic() && in.elastic().min() == 0 && in.elastic().max() == 0) {
    return absl::InvalidArgumentError(
        "elastic: {min: 0, max: 0} is no range; omit elastic for a rigid job, or set 1 <= min <= max");
  }
  bool positive = false, negative = false;
  for (const auto& [name, q] : in.per_replica()) {
    positive |= q > 0;
    negative |= q < 0;  // ParseJobSpec names it.
  }
  // adopt records what already runs, without quota checks (DESIGN.md §9).
  if (!adopt && !in.per_replica().empty() && !positive && !negative) {
    return absl::InvalidArgumentError(
        "per_replica: every quantity is 0; a job must ask for a positive amount of some resource");
  }
  return absl::OkStatus();
}

absl::Status Admission::CheckSummable(const Job& job) const {
  const std::vector<Quantity> most = State::MaxDemand(job);
  for (int r = 0; r < s_.R(); ++r) {
    if (most[r] == 0) continue;
    const Quantity capacity = s_.node(kRootNode).g[r];
    const Quantity others = s_.known_demand(r);
    auto total = CheckedAdd(capacity, others);
    if (total) total = CheckedAdd(*total, most[r]);
    if (!total || *total > State::kMaxSummable) {
      const std::string& res = s_.config().resources[r];
      return absl::InvalidArgumentError(absl::StrCat(
          "per_replica.", res, ": ", job.per_replica[r], " x ", most[r] / std::max<Quantity>(1, job.per_replica[r]),
          " replicas = ", most[r], " ", res, " cannot be counted with the fleet's ", capacity, " ", res,
          " of capacity and ", others, " asked by other jobs (the sum must stay below ", State::kMaxSummable, ")"));
    }
  }
  return absl::OkStatus();
}

void Admission::RememberEnded(const Job& job, std::string reason) {
  const Time retention = s_.config().policy.ended_job_retention_s * kMillisPerSecond;
  if (retention <= 0) return;
  EndedJob e;
  e.spec = job.spec;
  e.state = v1::JOB_STATE_ENDED;
  e.team = s_.node(job.team).name;
  e.cluster = s_.config().clusters[job.cluster].name;
  e.created_at = job.created_at;
  e.last_admitted_at = job.last_admitted_at;
  e.ended_at = s_.now();
  e.reason = std::move(reason);
  e.replicas = job.replicas;
  e.demand = s_.Named(job.demand, job.requested);
  s_.RememberEnded(job.id, std::move(e));
}

void Admission::RememberRejected(const v1::JobSpec& spec, const absl::Status& why) {
  const Time retention = s_.config().policy.ended_job_retention_s * kMillisPerSecond;
  // Only a printable id is worth keeping, and a rejection never hides a job
  // that exists or ended.
  if (retention <= 0 || !ValidateName("job", spec.job()).ok() || s_.FindJob(spec.job()) >= 0) return;
  if (const EndedJob* old = s_.FindEnded(spec.job()); old && old->state == v1::JOB_STATE_ENDED) return;
  EndedJob e;
  e.spec = spec;
  e.state = v1::JOB_STATE_REJECTED;
  e.team = spec.team();
  e.cluster = spec.cluster();
  e.created_at = s_.now();
  e.ended_at = s_.now();
  e.reason = std::string(why.message());
  s_.RememberEnded(spec.job(), std::move(e));
}

void Admission::Submit(const v1::JobSpec& spec) {
  auto parsed = ParseSubmit(s_.config(), spec, s_.now());
  if (!parsed.ok()) {
    Reject(spec, parsed.status());
    RememberRejected(spec, parsed.status());
    return;
  }
  const int existing = s_.FindJob(parsed->id);
  if (existing >= 0) {
    if (!google::protobuf::util::MessageDifferencer::Equals(s_.job(existing).spec, parsed->spec)) {
      Error(parsed->id, DifferentSpecReason(parsed->id));
    }
    return;  // same id, same spec: idempotent.
  }
  if (const EndedJob* ended = s_.FindEnded(parsed->id); ended && ended->state == v1::JOB_STATE_ENDED) {
    // A retried request never starts finished work again.
    if (!google::protobuf::util::MessageDifferencer::Equals(ended->spec, parsed->spec)) {
      Error(parsed->id, EndedDifferentSpecReason(parsed->id, *ended, s_.config().policy.ended_job_retention_s));
    }
    return;  // same spec: its final state stands.
  }
  if (absl::Status sum = CheckSummable(*parsed); !sum.ok()) {
    Reject(spec, sum);
    RememberRejected(spec, sum);
    return;
  }
  const int j = s_.NewJob(*std::move(parsed));
  s_.Enqueue(j);
  submitted_.push_back(j);
}

namespace {

// An adopted job as ParseJobSpec builds it, except that an elastic job found
// running may state its current size in `replicas`: it is recorded at that
// size, even outside [min, max] (adopt has no checks; DESIGN.md §9), and the
// ordinary rules grow or shrink it from there.
absl::StatusOr<Job> ParseAdopted(const CompiledConfig& c, const v1::JobSpec& in, Time now) {
  const bool elastic = in.elastic().min() != 0 || in.elastic().max() != 0;
  if (!elastic || !in.has_replicas()) return ParseJobSpec(c, in, now);
  v1::JobSpec gang = in;
  gang.clear_replicas();
  absl::StatusOr<Job> job = ParseJobSpec(c, gang, now);
  if (!job.ok()) return job;
  const int64_t replicas = in.replicas();
  if (replicas <= 0) return absl::InvalidArgumentError(absl::StrCat("replicas: ", replicas, " must be > 0"));
  Quantity gpus = 0, largest = 0;
  for (int r = 0; r < c.num_resources(); ++r) {
    auto d = CheckedMul(job->per_replica[r], replicas);
    if (!d) {
      return absl::InvalidArgumentError(absl::StrCat("per_replica.", c.resources[r], ": ", replicas, " replicas x ",
                                                     job->per_replica[r], " overflows int64"));
    }
    job->demand[r] = *d;
    if (c.is_gpu[r]) gpus = SatAdd(gpus, *d);
    largest = std::max(largest, *d);
  }
  job->replicas = replicas;
  job->gpus = gpus > 0 ? gpus : largest;
  return job;
}

}  // namespace

void Admission::Adopt(const v1::AdoptJobs& batch) {
  for (const v1::JobSpec& spec : batch.jobs()) {
    const absl::Status bounds = CheckSubmitBounds(spec, /*adopt=*/true);
    auto parsed = bounds.ok() ? ParseAdopted(s_.config(), spec, s_.now()) : absl::StatusOr<Job>(bounds);
    if (parsed.ok()) {
      if (absl::Status sum = CheckSummable(*parsed); !sum.ok()) parsed = sum;
    }
    if (!parsed.ok()) {
      Reject(spec, parsed.status());
      continue;
    }
    if (s_.FindJob(parsed->id) >= 0) {
      Error(parsed->id, absl::StrCat("adopt: job '", parsed->id, "' already exists"));
      continue;
    }
    if (const EndedJob* ended = s_.FindEnded(parsed->id); ended && ended->state == v1::JOB_STATE_ENDED) {
      Error(parsed->id, absl::StrCat("adopt: job '", parsed->id, "' already ended at ", ended->ended_at, " ms"));
      continue;
    }
    const int j = s_.NewJob(*std::move(parsed));
    Job& job = s_.job(j);
    Event e;
    e.type = EventType::kAdmit;
    e.job = job.id;
    e.team = s_.node(job.team).name;
    e.replicas = job.replicas;
    e.adopted = true;
    std::vector<Quantity> borrowed(s_.R(), 0);
    for (int r = 0; r < s_.R(); ++r) {
      const Quantity over = s_.ns(job.team).u[r] + job.demand[r] - s_.node(job.team).g[r];
      borrowed[r] = std::min(job.demand[r], std::max<Quantity>(0, over));
      if (borrowed[r] > 0) job.borrowing = true;
    }
    e.borrowed = s_.Named(borrowed, job.requested);
    job.phase = spec.draining() ? Phase::kDraining : Phase::kAdmitted;
    job.admitted_at = s_.now();
    job.last_admitted_at = s_.now();
    job.announced = true;
    s_.AddRunning(j);
    Emit(std::move(e));
  }
}

void Admission::Finish(const std::string& id) {
  const int j = s_.FindJob(id);
  if (j < 0) {
    if (s_.FindEnded(id)) return;  // it already ended: finishing it again changes nothing.
    Error(id, absl::StrCat("finish: unknown job '", id, "'"));
    return;
  }
  Job& job = s_.job(j);
  const char* how = job.phase == Phase::kQueued ? "released while queued" : "finished";
  switch (job.phase) {
    case Phase::kDraining:
      Leave(j, /*ended=*/true);
      return;
    case Phase::kAdmitted:
      // A shrink it owed a waiting job is given: the job's capacity is free.
      if (job.shrink_pending()) CompleteResize(j, job.resize_to);
      s_.RemoveRunning(j);
      break;
    case Phase::kQueued:
      // It no longer waits: its victims stay draining (or shrinking) but for
      // nobody, and what they already freed is released.
      for (const auto& hold : job.holds) s_.AddUsage(hold.leaf, hold.cluster, hold.amount, -1);
      job.holds.clear();
      for (int v : job.victims) {
        if (s_.job(v).drain_for == j) s_.job(v).drain_for = -1;
        if (s_.job(v).shrink_for == j) s_.job(v).shrink_for = -1;
      }
      s_.Dequeue(j);
      s_.Changed();
      break;
  }
  Event e;
  e.type = EventType::kEnd;
  e.job = job.id;
  e.team = s_.node(job.team).name;
  Emit(std::move(e));
  RememberEnded(job, how);
  s_.DropJob(j);
  ResolveDeferred();  // a shrink it owed: the waiter is tested now it is gone.
}

void Admission::Checkpoint(const std::string& id) {
  const int j = s_.FindJob(id);
  if (j < 0) {
    if (s_.FindEnded(id)) return;  // a late report of an ended job changes nothing.
    Error(id, absl::StrCat("checkpoint: unknown job '", id, "'"));
    return;
  }
  s_.job(j).last_checkpoint = s_.now();
}

void Admission::SetQuota(const v1::SetQuota& set) {
  v1::Config next = s_.source();
  v1::Team* team = nullptr;
  for (auto& t : *next.mutable_teams()) {
    if (t.name() == set.team()) team = &t;
  }
  if (!team) {
    Error("", absl::StrCat("set_quota.team: '", set.team(), "' is not a team"));
    return;
  }
  for (const auto& [name, q] : set.quota()) (*team->mutable_quota())[name] = q;
  Reconfigure(next);
}

void Admission::SetCapacity(const v1::SetCapacity& set) {
  v1::Config next = s_.source();
  v1::Cluster* cluster = nullptr;
  for (auto& c : *next.mutable_clusters()) {
    if (c.name() == set.cluster()) cluster = &c;
  }
  if (!cluster) {
    Error("", absl::StrCat("set_capacity.cluster: '", set.cluster(), "' is not a cluster"));
    return;
  }
  for (const auto& [name, q] : set.capacity()) (*cluster->mutable_capacity())[name] = q;
  Reconfigure(next);
}

void Admission::Reconfigure(const v1::Config& next) {
  // The base config must be valid, and so must the quota in force now.
  auto compiled = CompileConfig(next);
  if (compiled.ok() && HasTide(next)) compiled = CompileAt(next, s_.now());
  if (!compiled.ok()) {
    Error("", std::string(compiled.status().message()));
    return;
  }
  // Jobs must keep naming resources, leaf teams and clusters the new config
  // knows; team and cluster indices must not move under them.
  for (const auto& name : s_.config().resources) {
    if (!compiled->resource_index.contains(name)) {
      Error("", absl::StrCat("config: the new config drops resource '", name, "'"));
      return;
    }
  }
  // Every job's team must stay a leaf and its cluster must stay.
  std::string refused;
  s_.ForEachJob([&](int j) {
    const Job& job = s_.job(j);
    auto team = compiled->node_index.find(s_.node(job.team).name);
    if (refused.empty() && (team == compiled->node_index.end() || !compiled->nodes[team->second].leaf)) {
      refused = absl::StrCat("config: team '", s_.node(job.team).name, "' has job '", job.id,
                             "' and must stay a leaf team");
    }
    for (const auto& hold : job.holds) {
      auto held = compiled->node_index.find(s_.node(hold.leaf).name);
      if (refused.empty() && (held == compiled->node_index.end() || !compiled->nodes[held->second].leaf)) {
        refused = absl::StrCat("config: team '", s_.node(hold.leaf).name, "' holds capacity and must stay a leaf team");
      }
    }
    if (refused.empty() && !compiled->cluster_index.contains(s_.config().clusters[job.cluster].name)) {
      refused = absl::StrCat("config: cluster '", s_.config().clusters[job.cluster].name, "' has job '", job.id,
                             "' and must stay");
    }
  });
  if (!refused.empty()) {
    Error("", refused);
    return;
  }
  s_.Reconfigure(*std::move(compiled), next);
  ResetTide(s_);
  // Reasons named the old limits; say what binds under the new config
  // (the cycle that follows may not retry jobs of a stuck team).
  s_.ForEachJob([&](int j) {
    Job& job = s_.job(j);
    if (job.phase != Phase::kQueued || job.victims_left > 0) return;
    job.exceeds_max = ExceedsMax(job);
    SetReason(job, job.exceeds_max ? ExceedsMaxReason(job) : BindingReason(job, Contested(job)));
  });
}

// ---------------------------------------------------------------- time

bool Admission::TimerLive(const Timer& timer) const {
  const Job& job = s_.job(timer.job);
  if (job.gen != timer.gen) return false;  // the slot was reused.
  if (job.resize_pending() && job.resize_deadline == timer.at) return true;
  if (job.phase == Phase::kAdmitted && job.grow_backoff_until == timer.at) return true;
  if (job.phase == Phase::kDraining) return job.drain_deadline == timer.at;
  return job.phase == Phase::kQueued && job.requeued_at >= 0 &&
         job.requeued_at + s_.config().policy.requeue_backoff_s * kMillisPerSecond == timer.at;
}

void Admission::DropStaleTimers() {
  // So NextDeadline() reports only real work, the same in a restored core.
  auto& timers = s_.timers();
  while (!timers.empty() && !TimerLive(timers.top())) timers.pop();
}

void Admission::RunDue(Time now) {
  auto& timers = s_.timers();
  for (;;) {
    const std::optional<Time> tide = NextTideEvent();
    const bool job_due = !timers.empty() && timers.top().at <= now;
    const bool tide_due = tide && *tide <= now;
    if (!job_due && !tide_due) break;
    const Time t = !job_due ? *tide : !tide_due ? timers.top().at : std::min(*tide, timers.top().at);
    s_.set_now(std::max(t, s_.now()));
    bool any = tide_due && *tide == t && RunTide(t);
    while (!timers.empty() && timers.top().at == t) {
      const Timer timer = timers.top();
      timers.pop();
      if (!TimerLive(timer)) continue;
      Job& job = s_.job(timer.job);
      if (job.resize_pending() && job.resize_deadline == timer.at) {
        // No ack in time: a shrink is enforced (the agent stops the extra
        // replicas), a grow withdrawn.
        const int64_t asked = job.resize_to;
        const int64_t to = job.shrink_pending() ? asked : job.resize_from;
        Event e;
        e.type = EventType::kResize;
        e.job = job.id;
        e.team = s_.node(job.team).name;
        e.from = job.shrink_pending() ? job.resize_from : asked;
        e.to = to;
        e.replicas = to;
        e.reason = "deadline";
        e.epoch = job.epoch;
        const bool grow = !job.shrink_pending();
        e.borrowed = BorrowedAt(timer.job, to);
        CompleteResize(timer.job, to);
        if (grow) BackOffGrowth(timer.job);
        Emit(std::move(e));
        ResolveDeferred();
      } else if (job.phase == Phase::kAdmitted && job.grow_backoff_until == timer.at) {
        job.grow_backoff_until = -1;  // it may grow again.
        s_.Changed();
      } else if (job.phase == Phase::kDraining) {
        Leave(timer.job, /*ended=*/false);
      } else {
        job.parked_stamp = 0;  // its backoff is over: it may choose victims now.
      }
      any = true;
    }
    if (any) Cycle();
  }
  DropStaleTimers();
  s_.set_now(std::max(now, s_.now()));
}

// ---------------------------------------------------------------- cycle

std::vector<int> Admission::Waiters() {
  std::vector<int> out;
  for (auto it = s_.waiters().begin(); it != s_.waiters().end();) {
    const Job& job = s_.job(*it);
    if (job.phase == Phase::kQueued && job.victims_left > 0) {
      out.push_back(*it++);
    } else {
      it = s_.waiters().erase(it);
    }
  }
  // Queue order, not slot order: a restored core numbers its slots anew.
  auto key = [&](int j) {
    const Job& job = s_.job(j);
    return QueueKey{-job.priority, job.created_at, &job.id, j};
  };
  std::sort(out.begin(), out.end(), [&](int a, int b) { return key(a) < key(b); });
  return out;
}

void Admission::AdmitWaitersThatFit() {
  for (const int j : Waiters()) {
    Job& job = s_.job(j);
    // Tested as §2 would test it with what its departed victims freed.
    // Between a tide lead and its change it must also fit under the coming
    // quota (POLICY.md §6), else it keeps waiting for its victims.
    for (const auto& hold : job.holds) s_.AddUsage(hold.leaf, hold.cluster, hold.amount, -1);
    InvalidateGuardUsage();  // usage moved without a change stamp.
    const bool fits = Contested(job) == 0 && FitsGuards(job, job.demand);
    if (!fits) {
      for (const auto& hold : job.holds) s_.AddUsage(hold.leaf, hold.cluster, hold.amount, +1);
      InvalidateGuardUsage();
      continue;
    }
    // It fits before all its victims have gone: admitted now; the others
    // still leave (or shrink), for nobody.
    job.holds.clear();
    for (const int v : job.victims) {
      if (s_.job(v).drain_for == j) s_.job(v).drain_for = -1;
      if (s_.job(v).shrink_for == j) s_.job(v).shrink_for = -1;
    }
    job.victims.clear();
    job.victims_left = 0;
    s_.Changed();
    Admit(j);
  }
}

void Admission::Cycle() {
  // A reclaimer is admitted at the first cycle in which it fits, before any
  // other pending job, even if some of its victims are still leaving.
  AdmitWaitersThatFit();
  // Victims that leave at once (grace 0) free capacity mid-pass, beyond what
  // their reclaimer may need, and are requeued; jobs already passed over (or
  // teams judged stuck) may fit now, so run another pass while that happens.
  for (int round = 0; round < 16; ++round) {
    freed_ = false;
    if (s_.config().policy.fair_sharing) {
      FairSharePass();
    } else {
      ClassicalPass();
    }
    if (!freed_) break;
  }
  GrowPass();
}

bool Admission::TeamStuck(int team) const {
  const NodeState& n = s_.ns(team);
  const NodeConfig& nc = s_.node(team);
  std::vector<Quantity> avail;
  s_.Available(team, &avail);
  bool direct_impossible = false;
  for (int r = 0; r < s_.R() && !direct_impossible; ++r) {
    if (n.pending_demand[r].empty()) continue;
    const Quantity smallest = *n.pending_demand[r].begin();
    if (smallest == 0) continue;
    Quantity most_free = 0;
    for (size_t k = 0; k < s_.config().clusters.size(); ++k) {
      most_free = std::max(most_free, s_.free_capacity(static_cast<int>(k), r));
    }
    if (smallest > std::max<Quantity>(0, std::min(avail[r], most_free))) direct_impossible = true;
  }
  if (!direct_impossible) return false;
  // No job can fit directly; can any choose victims? Only a cheap, sound
  // test: same-team preemption off, and other teams' jobs reachable only as
  // reclaim-without-borrowing candidates, which every pass skips, because the
  // team and all its ancestors are at or above their guarantee on a resource
  // every waiting job needs.
  if (s_.config().policy.fair_sharing) return false;
  if (nc.policy.within_team != v1::WITHIN_TEAM_NEVER) return false;
  if (nc.policy.reclaim == v1::RECLAIM_NEVER) return true;
  if (nc.policy.borrow_within_cohort != v1::BORROW_WITHIN_COHORT_POLICY_NEVER) return false;
  for (int r = 0; r < s_.R(); ++r) {
    if (n.pending_demand[r].empty() || *n.pending_demand[r].begin() == 0) continue;
    bool all_full = true;
    for (int a = team; a != kRootNode && all_full; a = s_.node(a).parent) {
      if (s_.ns(a).u[r] < s_.node(a).g[r]) all_full = false;
    }
    if (all_full) return true;
  }
  return false;
}

void Admission::ClassicalPass() {
  struct Cursor {
    std::set<QueueKey>::const_iterator it, end;
    int team;
  };
  auto later = [](const Cursor& a, const Cursor& b) { return *b.it < *a.it; };
  std::vector<Cursor> heap;
  for (int n : s_.teams_with_pending()) {
    if (TeamStuck(n)) {
      RefreshStuckHead(n);
      continue;
    }
    const NodeState& ns = s_.ns(n);
    heap.push_back({ns.pending.begin(), ns.pending.end(), n});
  }
  std::make_heap(heap.begin(), heap.end(), later);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    Cursor c = heap.back();
    heap.pop_back();
    const int j = c.it->job;
    ++c.it;
    Job& job = s_.job(j);
    bool blocked;
    if (job.victims_left > 0 || job.exceeds_max || s_.Parked(job)) {
      blocked = true;
    } else {
      blocked = TryAdmit(j) != Outcome::kAdmitted;
    }
    if (blocked && s_.node(c.team).policy.strict_fifo) {  // it blocks its team.
      MarkBehindHead(j, c.it, c.end);
      continue;
    }
    if (c.it != c.end) {
      heap.push_back(c);
      std::push_heap(heap.begin(), heap.end(), later);
    }
  }
}

void Admission::FairSharePass() {
  // Descend from the root choosing the child with the lowest share at each
  // level, shares recomputed after each admission. Equal shares: the child
  // whose next job comes first in queue order (priority, created_at, id),
  // as Kueue orders its heads; then config order.
  const size_t N = s_.config().nodes.size();
  std::vector<bool> done(N, false);  // subtree has nothing left to try.
  std::vector<std::set<QueueKey>::const_iterator> cursor(N);
  std::vector<bool> eligible(N, false);  // had jobs when the pass began.
  for (int t : s_.teams_with_pending()) {
    cursor[t] = s_.ns(t).pending.begin();
    eligible[t] = true;
  }
  // The next job to try in n's subtree, or nullptr (marks n done).
  std::function<const QueueKey*(int)> head = [&](int n) -> const QueueKey* {
    if (done[n]) return nullptr;
    if (s_.node(n).leaf && n != kRootNode) {
      if (!eligible[n] || cursor[n] == s_.ns(n).pending.end()) {
        done[n] = true;
        return nullptr;
      }
      return &*cursor[n];
    }
    const QueueKey* best = nullptr;
    for (int c : s_.node(n).children) {
      const QueueKey* h = head(c);
      if (h && (!best || *h < *best)) best = h;
    }
    if (!best) done[n] = true;
    return best;
  };
  while (head(kRootNode)) {
    int n = kRootNode;
    while (!s_.node(n).leaf || n == kRootNode) {
      int best = -1;
      Share best_share;
      const QueueKey* best_head = nullptr;
      for (int c : s_.node(n).children) {
        const QueueKey* h = head(c);
        if (!h) continue;
        const Share sh = ShareOf(s_, c);
        const int cmp = best < 0 ? -1 : Compare(sh, best_share);
        if (cmp < 0 || (cmp == 0 && *h < *best_head)) {
          best = c;
          best_share = sh;
          best_head = h;
        }
      }
      n = best;
    }
    const int j = cursor[n]->job;
    ++cursor[n];
    Job& job = s_.job(j);
    bool blocked;
    if (job.victims_left > 0 || job.exceeds_max || s_.Parked(job)) {
      blocked = true;
    } else {
      blocked = TryAdmit(j) != Outcome::kAdmitted;
    }
    if (blocked && s_.node(n).policy.strict_fifo) {
      MarkBehindHead(j, cursor[n], s_.ns(n).pending.end());
      done[n] = true;
    }
  }
}

void Admission::MarkBehindHead(int head, std::set<QueueKey>::const_iterator it,
                               std::set<QueueKey>::const_iterator end) {
  // Bounded: a cycle must not cost O(queue) for a long strict queue; jobs
  // further back keep the reason they were announced with.
  constexpr int kMarked = 1000;
  const std::string reason = BehindHeadReason(s_.job(head));
  for (int n = 0; it != end && n < kMarked; ++it, ++n) {
    Job& job = s_.job(it->job);
    if (job.victims_left == 0 && !job.exceeds_max) SetReason(job, reason);
  }
}

// ---------------------------------------------------------------- one job

ResourceMask Admission::Contested(const Job& job) const {
  std::vector<Quantity> avail;
  s_.Available(job.team, &avail);
  ResourceMask contested = 0;
  for (int r = 0; r < s_.R(); ++r) {
    if (!(job.requested >> r & 1)) continue;
    const Quantity headroom = std::max<Quantity>(0, std::min(avail[r], s_.free_capacity(job.cluster, r)));
    if (job.demand[r] > headroom) contested |= ResourceMask{1} << r;
  }
  return contested;
}

bool Admission::ExceedsMax(const Job& job) const {
  for (int r = 0; r < s_.R(); ++r) {
    if (!(job.requested >> r & 1)) continue;
    if (job.demand[r] > s_.node(job.team).potential[r] ||
        job.demand[r] > s_.config().clusters[job.cluster].capacity[r]) {
      return true;
    }
  }
  return false;
}

bool Admission::PassesGate(const Job& job, ResourceMask contested) const {
  const TeamPolicy& pol = s_.node(job.team).policy;
  if (pol.borrow_within_cohort != v1::BORROW_WITHIN_COHORT_POLICY_NEVER) return true;  // (c)
  if (s_.config().policy.fair_sharing && pol.reclaim != v1::RECLAIM_NEVER) return true;  // (c)
  const int t = job.team;
  const int domain = s_.Domain(t, contested);
  for (int r = 0; r < s_.R(); ++r) {
    if (!(contested >> r & 1)) continue;
    if (job.demand[r] <= s_.node(t).g[r]) continue;  // (a)
    bool ok = false;                                 // (b)
    Quantity remaining = job.demand[r] - s_.Slack(t, r);
    for (int a = s_.node(t).parent; a != domain && a > kRootNode; a = s_.node(a).parent) {
      if (s_.ns(a).u[r] + remaining <= s_.node(a).g[r]) {
        ok = true;
        break;
      }
      remaining -= s_.Slack(a, r);
    }
    if (!ok) return false;
  }
  return true;
}

Admission::Outcome Admission::TryAdmit(int j) {
  Job& job = s_.job(j);
  const ResourceMask contested = Contested(job);
  if (contested == 0) {
    if (!FitsGuards(job, job.demand)) {
      // Between a tide lead and its change only what the coming quota also
      // holds is admitted (POLICY.md §6).
      job.parked_stamp = s_.change_stamp();
      SetReason(job, kNoRoomUnderComingTide);
      return Outcome::kQueued;
    }
    Admit(j);
    return Outcome::kAdmitted;
  }
  if (ExceedsMax(job)) {
    job.exceeds_max = true;
    SetReason(job, ExceedsMaxReason(job));
    return Outcome::kQueued;
  }
  job.parked_stamp = s_.change_stamp();
  job.search_failed_at = -1;
  if (!PassesGate(job, contested)) {
    SetReason(job, BindingReason(job, contested));
    return Outcome::kQueued;
  }
  const PolicyOptions& opt = s_.config().policy;
  if (job.requeued_at >= 0 && s_.now() < job.requeued_at + opt.requeue_backoff_s * kMillisPerSecond) {
    const Time until = job.requeued_at + opt.requeue_backoff_s * kMillisPerSecond;
    SetReason(job, absl::StrCat(BindingReason(job, contested), "; requeue backoff: requeued after preemption",
                                job.preempted_by.empty() ? "" : " by " + job.preempted_by, " at ",
                                ReasonTime(job.requeued_at), ", may preempt again from ", ReasonTime(until)));
    return Outcome::kQueued;
  }
  const std::vector<Victim> victims =
      opt.fair_sharing ? FairShareVictims(s_, j, contested) : ClassicalVictims(s_, j, contested);
  if (victims.empty()) {
    job.search_failed_at = s_.now();
    SetReason(job, BindingReason(job, contested));
    return Outcome::kQueued;
  }
  ChooseVictims(j, victims);
  return s_.job(j).phase == Phase::kAdmitted ? Outcome::kAdmitted : Outcome::kWaiting;
}

void Admission::Admit(int j) {
  Job& job = s_.job(j);
  Event e;
  e.type = EventType::kAdmit;
  e.job = job.id;
  e.team = s_.node(job.team).name;
  e.replicas = job.replicas;
  std::vector<Quantity> borrowed(s_.R(), 0);
  job.borrowing = false;
  for (int r = 0; r < s_.R(); ++r) {
    const Quantity over = s_.ns(job.team).u[r] + job.demand[r] - s_.node(job.team).g[r];
    borrowed[r] = std::min(job.demand[r], std::max<Quantity>(0, over));
    if (borrowed[r] > 0) job.borrowing = true;
  }
  e.borrowed = s_.Named(borrowed, job.requested);
  s_.Dequeue(j);
  job.phase = Phase::kAdmitted;
  job.admitted_at = s_.now();
  job.last_admitted_at = s_.now();
  job.exceeds_max = false;
  SetReason(job, "");
  job.announced = true;
  s_.AddRunning(j);
  Emit(std::move(e));
}

void Admission::ChooseVictims(int j, const std::vector<Victim>& victims) {
  Job& job = s_.job(j);
  Event reclaim;
  reclaim.type = EventType::kReclaim;
  reclaim.job = job.id;
  reclaim.team = s_.node(job.team).name;
  reclaim.decision = v1::DECISION_PREEMPTING;
  std::vector<int> leaving_now;
  job.victims_left = static_cast<int>(victims.size());
  s_.waiters().insert(j);
  for (const Victim& v : victims) {
    Job& victim = s_.job(v.job);
    const char* why = v.kind == VictimKind::kReclaim ? "reclaim" : v.kind == VictimKind::kPriority ? "priority" : "fair_share";
    if (victim.team != job.team) reclaim.decision = v1::DECISION_RECLAIMING;
    reclaim.victims.push_back(victim.id);
    job.victims.push_back(v.job);
    if (v.shrink_to >= 0) {
      // A shrink: a resize request; its capacity is freed at the ack, or
      // at its deadline with a `deadline` record, even when that is now
      // (grace 0): an ack at the deadline's instant is still in time.
      RequestResize(v.job, v.shrink_to, why, j);
      continue;
    }
    DropGrowRequest(v.job);
    victim.phase = Phase::kDraining;
    s_.UpdateGrowable(v.job);
    victim.drain_for = j;
    const Time deadline = s_.now() + victim.grace_ms;
    if (victim.drain_deadline < 0 || deadline < victim.drain_deadline) victim.drain_deadline = deadline;
    Event e;
    e.type = EventType::kPreempt;
    e.job = victim.id;
    e.team = s_.node(victim.team).name;
    e.by = job.id;
    e.reason = why;
    SetReason(victim, absl::StrCat("draining for ", job.id, " (", why, ") until ", ReasonTime(victim.drain_deadline),
                                   " at the latest"));
    Emit(std::move(e));
    if (victim.drain_deadline <= s_.now()) {
      leaving_now.push_back(v.job);
    } else {
      s_.AddTimer(victim.drain_deadline, v.job);
    }
  }
  {
    std::vector<std::string> names;
    Time last = s_.now();
    for (const Victim& v : victims) {
      names.push_back(s_.job(v.job).id);
      last = std::max({last, s_.job(v.job).drain_deadline, s_.job(v.job).resize_deadline});
    }
    if (names.size() > 5) names.resize(5), names.push_back("...");
    SetReason(job, absl::StrCat("reclaiming: waiting for ", victims.size(), " victim(s) to drain (",
                                absl::StrJoin(names, ", "), "), the last by ", ReasonTime(last)));
  }
  job.announced = true;
  Emit(std::move(reclaim));
  s_.Changed();
  for (int v : leaving_now) Leave(v, /*ended=*/false);
}

void Admission::Vacate(const std::string& id) {
  const int j = s_.FindJob(id);
  if (j < 0) {
    if (s_.FindEnded(id)) return;  // already gone.
    Error(id, absl::StrCat("vacate: unknown job '", id, "'"));
    return;
  }
  if (s_.job(j).phase != Phase::kDraining) {
    Error(id, absl::StrCat("vacate: job '", id, "' is not draining"));
    return;
  }
  Leave(j, /*ended=*/false);
}

void Admission::Leave(int v, bool ended) {
  Job& victim = s_.job(v);
  const int waiting = victim.drain_for;
  s_.RemoveRunning(v);
  if (waiting >= 0) {
    // What it frees is held for the job that waits for it (POLICY.md §4).
    Job& w = s_.job(waiting);
    s_.AddUsage(victim.team, victim.cluster, victim.demand, +1);
    w.holds.push_back({victim.team, victim.cluster, victim.demand});
    w.victims.erase(std::find(w.victims.begin(), w.victims.end(), v));
    --w.victims_left;
  }
  victim.drain_for = -1;
  victim.drain_deadline = -1;
  Event e;
  e.job = victim.id;
  e.team = s_.node(victim.team).name;
  if (ended || !victim.requeue) {
    e.type = EventType::kEnd;
    Emit(std::move(e));
    RememberEnded(victim, ended ? "finished while draining"
                                : absl::StrCat("evicted", waiting >= 0 ? " for " + s_.job(waiting).id : "",
                                               " and not requeued (requeue: false)"));
    s_.DropJob(v);
  } else {
    if (victim.elastic()) s_.SetReplicas(v, victim.elastic_min);  // back to its gang.
    victim.grow_backoff_until = -1;
    victim.resize_from = -1;
    victim.resize_deadline = -1;
    victim.admitted_at = -1;
    victim.borrowing = false;
    victim.requeued_at = s_.now();
    victim.parked_stamp = 0;
    victim.preempted_by = waiting >= 0 ? s_.job(waiting).id : "";
    SetReason(victim, absl::StrCat("requeued after preemption", waiting >= 0 ? " by " + s_.job(waiting).id : "",
                                   " at ", ReasonTime(s_.now()), "; may preempt again from ",
                                   ReasonTime(s_.now() + s_.config().policy.requeue_backoff_s * kMillisPerSecond)));
    s_.Enqueue(v);
    e.type = EventType::kQueue;
    e.requeued = true;
    e.reason = "requeued";
    Emit(std::move(e));
    const Time backoff = s_.config().policy.requeue_backoff_s * kMillisPerSecond;
    if (backoff > 0) s_.AddTimer(s_.now() + backoff, v);
  }
  freed_ = true;
  if (waiting >= 0 && s_.job(waiting).victims_left == 0) ResolveWaiting(waiting);
}

void Admission::ResolveWaiting(int j) {
  Job& job = s_.job(j);
  for (const auto& hold : job.holds) s_.AddUsage(hold.leaf, hold.cluster, hold.amount, -1);
  job.holds.clear();
  job.parked_stamp = 0;
  s_.Changed();
  // Tested with §2 at once, before any other pending job; if it no longer
  // fits it returns to its place in the queue, with a record saying why.
  const ResourceMask contested = Contested(job);
  if (contested == 0 && FitsGuards(job, job.demand)) {
    Admit(j);
    return;
  }
  if (contested == 0) {
    // Between a tide lead and its change (POLICY.md §6), as in TryAdmit.
    job.parked_stamp = s_.change_stamp();
    SetReason(job, kNoRoomUnderComingTide);
  } else {
    SetReason(job, ExceedsMax(job) ? ExceedsMaxReason(job) : BindingReason(job, contested));
  }
  Event e;
  e.type = EventType::kQueue;
  e.job = job.id;
  e.team = s_.node(job.team).name;
  e.reason = job.reason;
  Emit(std::move(e));
}

void Admission::AnnounceQueued() {
  for (int j : submitted_) {
    Job& job = s_.job(j);
    if (job.phase != Phase::kQueued || job.announced) continue;
    if (job.reason.empty()) {
      const NodeState& team = s_.ns(job.team);
      const int head = team.pending.empty() ? -1 : team.pending.begin()->job;
      if (s_.node(job.team).policy.strict_fifo && head >= 0 && head != j && !ExceedsMax(job)) {
        job.reason = BehindHeadReason(s_.job(head));
      } else {
        const ResourceMask contested = Contested(job);
        job.reason = ExceedsMax(job) ? ExceedsMaxReason(job) : BindingReason(job, contested);
      }
    }
    job.announced = true;
    Event e;
    e.type = EventType::kQueue;
    e.job = job.id;
    e.team = s_.node(job.team).name;
    e.reason = job.reason;
    Emit(std::move(e));
  }
  submitted_.clear();
}

}  // namespace tidegate::core
