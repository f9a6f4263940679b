// Broker::Snapshot and Broker::Restore: the core's whole state as a proto, so
// the ledger can start from a snapshot plus the journal tail.
#include <algorithm>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "broker/core/broker.h"
#include "broker/core/job_spec.h"
#include "broker/core/spec_bytes.h"
#include "broker/core/state.h"
#include "broker/core/tide.h"
#include "broker/core/tide_reclaim.h"

namespace tidegate::core {
namespace {

v1::JobState StateOf(Phase p) {
  switch (p) {
    case Phase::kQueued: return v1::JOB_STATE_QUEUED;
    case Phase::kAdmitted: return v1::JOB_STATE_ADMITTED;
    case Phase::kDraining: return v1::JOB_STATE_DRAINING;
  }
  return v1::JOB_STATE_UNSPECIFIED;
}

}  // namespace

Time Broker::Now() const { return state_->now(); }

const v1::Config& Broker::Config() const { return state_->source(); }

internal::v1::CoreSnapshot Broker::Snapshot() const {
  const State& s = *state_;
  internal::v1::CoreSnapshot out;
  *out.mutable_config() = s.source();
  out.set_now_ms(s.now());
  std::vector<int> jobs;
  s.ForEachJob([&](int j) { jobs.push_back(j); });
  std::sort(jobs.begin(), jobs.end(), [&](int a, int b) { return s.job(a).id < s.job(b).id; });
  for (int j : jobs) {
    const Job& job = s.job(j);
    internal::v1::JobSnapshot* js = out.add_jobs();
    js->mutable_spec()->ParseFromString(job.spec_bytes);
    js->set_created_at_ms(job.created_at);
    js->set_state(StateOf(job.phase));
    js->set_admitted_at_ms(job.admitted_at);
    js->set_last_admitted_at_ms(job.last_admitted_at);
    js->set_borrowing(job.borrowing);
    if (!job.borrowed.empty()) {
      for (const auto& [name, q] : s.Named(job.borrowed, job.requested)) {
        if (q > 0) (*js->mutable_borrowed())[name] = q;
      }
    }
    if (job.drain_for >= 0) js->set_drain_for(s.job(job.drain_for).id);
    js->set_drain_deadline_ms(job.drain_deadline);
    std::vector<std::string> victims;
    for (int v : job.victims) victims.push_back(s.job(v).id);
    std::sort(victims.begin(), victims.end());
    for (auto& v : victims) js->add_victims(v);
    for (const auto& hold : job.holds) {
      internal::v1::HeldCapacity* h = js->add_holds();
      h->set_team(s.node(hold.leaf).name);
      h->set_cluster(s.config().clusters[hold.cluster].name);
      for (int r = 0; r < s.num_resources(); ++r) {
        if (hold.amount[r] != 0) (*h->mutable_amount())[s.config().resources[r]] = hold.amount[r];
      }
    }
    js->set_requeued_at_ms(job.requeued_at);
    js->set_exceeds_max(job.exceeds_max);
    js->set_last_checkpoint_ms(job.last_checkpoint);
    js->set_reason(job.reason);
    js->set_replicas(job.replicas);
    js->set_epoch(job.epoch);
    js->set_resize_from(job.resize_from);
    js->set_resize_to(job.resize_to);
    js->set_resize_deadline_ms(job.resize_deadline);
    js->set_resize_reason(job.resize_reason);
    if (job.shrink_for >= 0) js->set_shrink_for(s.job(job.shrink_for).id);
    js->set_grow_backoff_until_ms(job.grow_backoff_until);
    js->set_parked(s.Parked(job));
    js->set_search_failed_at_ms(job.search_failed_at);
  }
  out.set_tide_lead_cursor_ms(s.tide().lead_cursor);
  out.set_tide_apply_cursor_ms(s.tide().apply_cursor);
  for (const auto& [id_ptr, e_ptr] : s.EndedById()) {
    const std::string& id = *id_ptr;
    const EndedJob& e = *e_ptr;
    internal::v1::EndedJobSnapshot* es = out.add_ended_jobs();
    es->mutable_spec()->ParseFromString(e.spec_bytes);
    es->mutable_spec()->set_job(id);
    es->set_state(e.state);
    es->set_team(e.team);
    es->set_cluster(e.cluster);
    es->set_created_at_ms(e.created_at);
    es->set_last_admitted_at_ms(e.last_admitted_at);
    es->set_ended_at_ms(e.ended_at);
    es->set_reason(e.reason);
    es->set_replicas(e.replicas);
    for (const auto& [name, q] : e.demand) (*es->mutable_demand())[name] = q;
  }
  return out;
}

// Long on purpose: it rebuilds every part of State that Snapshot wrote, in
// the order the parts depend on each other (config, jobs, holds, timers,
// ended jobs, tide), and reads best as that one sequence.
absl::StatusOr<std::unique_ptr<Broker>> Broker::Restore(const internal::v1::CoreSnapshot& snap) {
  auto compiled = CompileConfig(snap.config());
  if (compiled.ok() && HasTide(snap.config())) {
    const TideCalendar tide = compiled->tide;
    compiled = CompileConfig(EffectiveConfig(snap.config(), tide, snap.now_ms()), tide);
  }
  if (!compiled.ok()) return compiled.status();
  auto state = std::make_unique<State>(*std::move(compiled), snap.config());
  State& s = *state;
  s.set_now(snap.now_ms());
  auto bad = [](auto&&... parts) { return absl::InvalidArgumentError(absl::StrCat("snapshot: ", parts...)); };
  for (const internal::v1::JobSnapshot& js : snap.jobs()) {
    auto parsed = ParseJobSpec(s.config(), js.spec(), js.created_at_ms());
    if (!parsed.ok()) return bad("job '", js.spec().job(), "': ", std::string(parsed.status().message()));
    if (s.FindJob(parsed->id) >= 0) return bad("duplicate job '", parsed->id, "'");
    Job job = *std::move(parsed);
    job.created_at = js.created_at_ms();
    job.admitted_at = js.admitted_at_ms();
    // Snapshots from before the field existed: the current admission.
    job.last_admitted_at = js.has_last_admitted_at_ms() ? js.last_admitted_at_ms() : js.admitted_at_ms();
    job.borrowing = js.borrowing();
    if (!js.borrowed().empty()) {
      job.borrowed.assign(s.num_resources(), 0);
      for (const auto& [name, q] : js.borrowed()) {
        auto r = s.config().resource_index.find(name);
        if (r == s.config().resource_index.end()) return bad("job '", js.spec().job(), "': borrows unknown resource '", name, "'");
        job.borrowed[r->second] = q;
      }
    }
    job.drain_deadline = js.drain_deadline_ms();
    job.requeued_at = js.requeued_at_ms();
    job.exceeds_max = js.exceeds_max();
    job.last_checkpoint = js.last_checkpoint_ms();
    job.reason = js.reason();
    job.announced = true;
    if (job.elastic()) {
      // An adopted job may run outside [min, max] (adopt has no checks).
      if (js.replicas() <= 0) return bad("job '", job.id, "' has ", js.replicas(), " replicas");
      for (Quantity q : job.per_replica) {
        if (!CheckedMul(q, js.replicas())) {
          return bad("job '", job.id, "' has ", js.replicas(), " replicas: its demand overflows int64");
        }
      }
      job.epoch = js.epoch();
      job.resize_from = js.resize_from();
      job.resize_to = js.resize_to();
      job.resize_deadline = js.resize_deadline_ms();
      job.resize_reason = js.resize_reason();
      job.grow_backoff_until = js.grow_backoff_until_ms() == 0 ? -1 : js.grow_backoff_until_ms();
    }
    const int j = s.NewJob(std::move(job));
    if (s.job(j).elastic()) s.SetReplicas(j, js.replicas());  // not holding capacity yet.
    switch (js.state()) {
      case v1::JOB_STATE_QUEUED: s.Enqueue(j); break;
      case v1::JOB_STATE_ADMITTED: s.job(j).phase = Phase::kAdmitted; s.AddRunning(j); break;
      case v1::JOB_STATE_DRAINING: s.job(j).phase = Phase::kDraining; s.AddRunning(j); break;
      default: return bad("job '", js.spec().job(), "' has state ", v1::JobState_Name(js.state()));
    }
  }
  // Links between jobs, held capacity and timers.
  const Time backoff = s.config().policy.requeue_backoff_s * kMillisPerSecond;
  for (const internal::v1::JobSnapshot& js : snap.jobs()) {
    const int j = s.FindJob(js.spec().job());
    Job& job = s.job(j);
    if (!js.drain_for().empty()) {
      job.drain_for = s.FindJob(js.drain_for());
      if (job.drain_for < 0) return bad("job '", job.id, "' drains for unknown job '", js.drain_for(), "'");
    }
    for (const auto& v : js.victims()) {
      const int vj = s.FindJob(v);
      if (vj < 0) return bad("job '", job.id, "' waits for unknown victim '", v, "'");
      job.victims.push_back(vj);
    }
    job.victims_left = static_cast<int>(job.victims.size());
    if (job.victims_left > 0) s.waiters().insert(j);
    for (const auto& h : js.holds()) {
      auto team = s.config().node_index.find(h.team());
      auto cluster = s.config().cluster_index.find(h.cluster());
      if (team == s.config().node_index.end() || cluster == s.config().cluster_index.end()) {
        return bad("job '", job.id, "' holds capacity of unknown team or cluster");
      }
      Job::Hold hold{team->second, cluster->second, std::vector<Quantity>(s.num_resources(), 0)};
      for (const auto& [name, q] : h.amount()) {
        auto r = s.config().resource_index.find(name);
        if (r == s.config().resource_index.end()) return bad("hold of unknown resource '", name, "'");
        hold.amount[r->second] = q;
      }
      s.AddUsage(hold.leaf, hold.cluster, hold.amount, +1);
      job.holds.push_back(std::move(hold));
    }
    if (!js.shrink_for().empty()) {
      job.shrink_for = s.FindJob(js.shrink_for());
      if (job.shrink_for < 0) return bad("job '", job.id, "' shrinks for unknown job '", js.shrink_for(), "'");
    }
    if (job.resize_pending() && job.resize_deadline >= 0) s.AddTimer(job.resize_deadline, j);
    if (job.phase == Phase::kAdmitted && job.grow_backoff_until > s.now()) s.AddTimer(job.grow_backoff_until, j);
    if (job.phase == Phase::kDraining && job.drain_deadline >= 0) s.AddTimer(job.drain_deadline, j);
    if (job.phase == Phase::kQueued && job.requeued_at >= 0 && job.requeued_at + backoff > s.now()) {
      s.AddTimer(job.requeued_at + backoff, j);
    }
  }
  // Checked in the snapshot's order, remembered in the order they would be
  // forgotten (the store queues that order cheaply; see ended_jobs.h).
  absl::flat_hash_map<absl::string_view, int> seen;
  for (const internal::v1::EndedJobSnapshot& es : snap.ended_jobs()) {
    const std::string& id = es.spec().job();
    if (id.empty() || s.FindJob(id) >= 0 || !seen.emplace(id, 0).second) {
      return bad("ended job '", id, "' is empty or a duplicate");
    }
    if (es.state() != v1::JOB_STATE_ENDED && es.state() != v1::JOB_STATE_REJECTED) {
      return bad("ended job '", id, "' has state ", v1::JobState_Name(es.state()));
    }
  }
  std::vector<const internal::v1::EndedJobSnapshot*> ended;
  ended.reserve(snap.ended_jobs_size());
  for (const internal::v1::EndedJobSnapshot& es : snap.ended_jobs()) ended.push_back(&es);
  std::sort(ended.begin(), ended.end(), [](const auto* a, const auto* b) {
    if (a->ended_at_ms() != b->ended_at_ms()) return a->ended_at_ms() < b->ended_at_ms();
    return a->spec().job() < b->spec().job();
  });
  for (const internal::v1::EndedJobSnapshot* es : ended) {
    EndedJob e;
    e.spec_bytes = SpecBytes(es->spec());
    e.state = es->state();
    e.priority = es->spec().priority();
    e.team = es->team();
    e.cluster = es->cluster();
    e.created_at = es->created_at_ms();
    e.last_admitted_at = es->last_admitted_at_ms();
    e.ended_at = es->ended_at_ms();
    e.reason = es->reason();
    e.replicas = es->replicas();
    // Config resource order, as the live core names them.
    for (const auto& r : s.config().resources) {
      if (auto it = es->demand().find(r); it != es->demand().end()) e.demand.emplace_back(r, it->second);
    }
    s.RememberEnded(es->spec().job(), std::move(e));
  }
  s.ClearQuietChanges();
  s.tide().lead_cursor = snap.tide_lead_cursor_ms();
  s.tide().apply_cursor = snap.tide_apply_cursor_ms();
  ResetTide(s);
  // Jobs that were parked stay parked until the next change, as they would
  // have in the original.
  for (const internal::v1::JobSnapshot& js : snap.jobs()) {
    Job& job = s.job(s.FindJob(js.spec().job()));
    if (js.has_search_failed_at_ms()) {
      job.search_failed_at = js.search_failed_at_ms();
    } else if (js.parked()) {
      // An older snapshot does not say whether a victim search failed: count
      // it as one; a later instant tries it again, which for any other
      // failure gives the same answer.
      job.search_failed_at = s.now();
    }
    if (js.parked()) job.parked_stamp = s.change_stamp();
  }
  return std::unique_ptr<Broker>(new Broker(std::move(state)));
}

}  // namespace tidegate::core
