// The commands of one Apply call that change jobs or the config: submit,
// adopt, finish, checkpoint, set_quota, set_capacity, apply_config, and the
// records they write when refused. Deciding what runs is the cycle's work
// (admission_cycle.cc); these only record and release.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "broker/core/decider.h"
#include "broker/core/job_spec.h"
#include "broker/core/names.h"
#include "broker/core/spec_bytes.h"
#include "broker/core/tide.h"
#include "broker/core/tide_reclaim.h"

namespace tidegate::core {

void Decider::Emit(Event e) {
  e.at = s_.now();
  s_.out().push_back(std::move(e));
}

void Decider::Reject(const v1::JobSpec& spec, const absl::Status& why) {
  Emit(RejectEvent(spec, why, s_.now()));
}

void Decider::Error(const std::string& job, std::string reason) {
  Event e;
  e.type = EventType::kError;
  e.job = job;
  e.reason = std::move(reason);
  Emit(std::move(e));
}

absl::Status Decider::CheckSummable(const Job& job) const {
  const std::vector<Quantity> most = State::MaxDemand(job);
  for (int r = 0; r < s_.num_resources(); ++r) {
    if (most[r] == 0) continue;
    const Quantity capacity = s_.node(kRootNode).guaranteed[r];
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

void Decider::RememberEnded(Job& job, std::string reason) {
  const Time retention = s_.config().policy.ended_job_retention_s * kMillisPerSecond;
  if (retention <= 0) return;
  EndedJob e;
  e.spec_bytes = std::move(job.spec_bytes);  // the job is dropped next.
  e.state = v1::JOB_STATE_ENDED;
  e.priority = job.priority;
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

void Decider::RememberRejected(const v1::JobSpec& spec, const absl::Status& why) {
  const Time retention = s_.config().policy.ended_job_retention_s * kMillisPerSecond;
  // Only a printable id is worth keeping, and a rejection never hides a job
  // that exists or ended.
  if (retention <= 0 || !ValidateName("job", spec.job()).ok() || s_.FindJob(spec.job()) >= 0) return;
  if (const EndedJob* old = s_.FindEnded(spec.job()); old && old->state == v1::JOB_STATE_ENDED) return;
  EndedJob e;
  e.spec_bytes = SpecBytes(spec);
  e.state = v1::JOB_STATE_REJECTED;
  e.priority = spec.priority();
  e.team = spec.team();
  e.cluster = spec.cluster();
  e.created_at = s_.now();
  e.ended_at = s_.now();
  e.reason = std::string(why.message());
  s_.RememberEnded(spec.job(), std::move(e));
}

void Decider::Submit(const v1::JobSpec& spec) {
  auto parsed = ParseSubmit(s_.config(), spec, s_.now());
  if (!parsed.ok()) {
    Reject(spec, parsed.status());
    RememberRejected(spec, parsed.status());
    return;
  }
  const int existing = s_.FindJob(parsed->id);
  if (existing >= 0) {
    if (s_.job(existing).spec_bytes != parsed->spec_bytes) {
      Error(parsed->id, DifferentSpecReason(parsed->id));
    }
    return;  // same id, same spec: idempotent.
  }
  if (const EndedJob* ended = s_.FindEnded(parsed->id); ended && ended->state == v1::JOB_STATE_ENDED) {
    // A retried request never starts finished work again.
    if (ended->spec_bytes != parsed->spec_bytes) {
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
  submitted_.push_back({j, s_.job(j).gen});
}

void Decider::Adopt(const internal::v1::AdoptJobs& batch) {
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
    std::vector<Quantity> borrowed(s_.num_resources(), 0);
    for (int r = 0; r < s_.num_resources(); ++r) {
      const Quantity over = s_.node_state(job.team).usage[r] + job.demand[r] - s_.node(job.team).guaranteed[r];
      borrowed[r] = std::min(job.demand[r], std::max<Quantity>(0, over));
    }
    e.borrowed = s_.Named(borrowed, job.requested);
    SetBorrowed(job, std::move(borrowed));
    job.phase = spec.draining() ? Phase::kDraining : Phase::kAdmitted;
    if (job.phase == Phase::kDraining) {
      // No victim of ours: its cluster is ending it, and nothing here sets a deadline.
      job.reason = absl::StrCat("draining for its cluster (adopted while already leaving); it holds its capacity "
                                "until the agent of ", s_.config().clusters[job.cluster].name, " reports it gone");
    }
    job.admitted_at = s_.now();
    job.last_admitted_at = s_.now();
    job.announced = true;
    s_.AddRunning(j);
    Emit(std::move(e));
  }
}

void Decider::Finish(const std::string& id) {
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

void Decider::Checkpoint(const std::string& id) {
  const int j = s_.FindJob(id);
  if (j < 0) {
    if (s_.FindEnded(id)) return;  // a late report of an ended job changes nothing.
    Error(id, absl::StrCat("checkpoint: unknown job '", id, "'"));
    return;
  }
  s_.job(j).last_checkpoint = s_.now();
}

void Decider::SetQuota(const v1::SetQuota& set) {
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
  Reconfigure(next, /*same_tide_rules=*/true);
}

void Decider::SetCapacity(const v1::SetCapacity& set) {
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
  Reconfigure(next, /*same_tide_rules=*/true);
}

void Decider::Reconfigure(const v1::Config& next, bool same_tide_rules) {
  // The base config must be valid, and so must the quota in force now.
  auto compiled = same_tide_rules ? CompileConfig(next, s_.config().tide) : CompileConfig(next);
  if (compiled.ok() && HasTide(next)) {
    const TideCalendar tide = compiled->tide;
    compiled = CompileAt(next, tide, s_.now());
  }
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
  // Every job's team must stay a leaf and its cluster must stay. The refusal
  // is about the least job id among those in the way, not the first in the
  // index's hash order, so the same refusal reads the same on every run.
  std::string refused;
  const std::string* refused_job = nullptr;
  auto refuse = [&](const std::string& job, auto why) {
    if (refused_job != nullptr && *refused_job <= job) return;
    refused_job = &job;
    refused = why();
  };
  s_.ForEachJob([&](int j) {
    const Job& job = s_.job(j);
    auto team = compiled->node_index.find(s_.node(job.team).name);
    if (team == compiled->node_index.end() || !compiled->nodes[team->second].leaf) {
      refuse(job.id, [&] {
        return absl::StrCat("config: team '", s_.node(job.team).name, "' has job '", job.id,
                            "' and must stay a leaf team");
      });
      return;
    }
    for (const auto& hold : job.holds) {
      auto held = compiled->node_index.find(s_.node(hold.leaf).name);
      if (held == compiled->node_index.end() || !compiled->nodes[held->second].leaf) {
        refuse(job.id, [&] {
          return absl::StrCat("config: team '", s_.node(hold.leaf).name, "' holds capacity and must stay a leaf team");
        });
        return;
      }
    }
    if (!compiled->cluster_index.contains(s_.config().clusters[job.cluster].name)) {
      refuse(job.id, [&] {
        return absl::StrCat("config: cluster '", s_.config().clusters[job.cluster].name, "' has job '", job.id,
                            "' and must stay");
      });
    }
  });
  if (!refused.empty()) {
    Error("", refused);
    return;
  }
  s_.Reconfigure(*std::move(compiled), next);
  ResetTide(s_);
  RefreshQueuedReasons();
}

void Decider::ApplyTideBoundary() {
  // Reconfigure(source, same rules) less what cannot change: the base config
  // passed every check when it was installed and is unchanged, and tide
  // rules change quota fields only, so the teams, resources and clusters
  // (and every job's team and cluster) stay as they are.
  auto compiled = CompiledQuotaAt(s_, s_.now());
  if (!compiled->ok()) {
    Error("", std::string(compiled->status().message()));
    ResetTide(s_);
    return;
  }
  s_.ReplaceQuota(**compiled);
  ResetTide(s_);
  RefreshQueuedReasons();
}

void Decider::RefreshQueuedReasons() {
  // Reasons named the old limits; say what binds under the new config
  // (the cycle that follows may not retry jobs of a stuck team).
  s_.ForEachJob([&](int j) {
    Job& job = s_.job(j);
    if (job.phase != Phase::kQueued || job.victims_left > 0) return;
    job.exceeds_max = ExceedsMax(job);
    SetReason(job, job.exceeds_max ? ExceedsMaxReason(job) : BindingReason(job, Contested(job)));
  });
}

}  // namespace tidegate::core
