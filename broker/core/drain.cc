// Drain and holds (docs/policy.md §4): chosen victims drain for their grace
// period, and what they free is held for the job that waits for them until
// it is admitted or gives up.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "broker/core/decider.h"
#include "broker/core/reasons.h"

namespace tidegate::core {

void Decider::ChooseVictims(int j, const std::vector<Victim>& victims) {
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

void Decider::Vacate(const std::string& id) {
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

void Decider::Leave(int v, bool ended) {
  Job& victim = s_.job(v);
  const int waiting = victim.drain_for;
  s_.RemoveRunning(v);
  if (waiting >= 0) {
    // What it frees is held for the job that waits for it (docs/policy.md §4).
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
    victim.borrowed.clear();
    victim.requeued_at = s_.now();
    victim.parked_stamp = 0;
    victim.preempted_by = waiting >= 0 ? s_.job(waiting).id : "";
    SetReason(victim, absl::StrCat("requeued after preemption", waiting >= 0 ? " by " + s_.job(waiting).id : "",
                                   " at ", ReasonTime(s_.now()), "; may preempt again from ",
                                   ReasonTime(MayPreemptAgainAt(s_.now()))));
    s_.Enqueue(v);
    e.type = EventType::kQueue;
    e.requeued = true;
    e.reason = "requeued";
    Emit(std::move(e));
    s_.AddTimer(MayPreemptAgainAt(s_.now()), v);
  }
  freed_ = true;
  if (waiting >= 0 && s_.job(waiting).victims_left == 0) ResolveWaiting(waiting);
}

void Decider::ResolveWaiting(int j) {
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
    // Between a tide lead and its change (docs/policy.md §6), as in TryAdmit.
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

}  // namespace tidegate::core
