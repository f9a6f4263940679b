// The admission cycle (docs/policy.md §4): waiting reclaimers first, then every
// pending job in queue order (or fair-share order, §5), each admitted, given
// victims (victims_classical.cc, victims_fair_share.cc), or left waiting with
// a reason; growth last (growth.cc).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "broker/core/decider.h"
#include "broker/core/reasons.h"
#include "broker/core/fair_share.h"
#include "broker/core/victims_classical.h"
#include "broker/core/victims_fair_share.h"

namespace tidegate::core {

std::vector<int> Decider::Waiters() {
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

void Decider::AdmitWaitersThatFit() {
  for (const int j : Waiters()) {
    Job& job = s_.job(j);
    // Tested as §2 would test it with what its departed victims freed.
    // Between a tide lead and its change it must also fit under the coming
    // quota (docs/policy.md §6), else it keeps waiting for its victims.
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

void Decider::Cycle() {
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

Time Decider::MayPreemptAgainAt(Time requeued_at) const {
  return requeued_at + std::max<Time>(1, s_.config().policy.requeue_backoff_s * kMillisPerSecond);
}

bool Decider::TeamStuck(int team) const {
  const NodeState& n = s_.node_state(team);
  const NodeConfig& nc = s_.node(team);
  std::vector<Quantity> avail;
  s_.Available(team, &avail);
  bool direct_impossible = false;
  for (int r = 0; r < s_.num_resources() && !direct_impossible; ++r) {
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
  // test: no same-team candidate for any waiting job, and other teams' jobs
  // reachable only as reclaim-without-borrowing candidates, which every pass
  // skips, because the team and all its ancestors are at or above their
  // guarantee on a resource every waiting job needs.
  if (s_.config().policy.fair_sharing) return false;
  if (nc.policy.within_team != v1::WITHIN_TEAM_NEVER && AnySameTeamCandidate(team)) return false;
  if (nc.policy.reclaim == v1::RECLAIM_NEVER) return true;
  if (nc.policy.borrow_within_cohort != v1::BORROW_WITHIN_COHORT_POLICY_NEVER) return false;
  for (int r = 0; r < s_.num_resources(); ++r) {
    if (n.pending_demand[r].empty() || *n.pending_demand[r].begin() == 0) continue;
    bool all_full = true;
    for (int a = team; a != kRootNode && all_full; a = s_.node(a).parent) {
      if (s_.node_state(a).usage[r] < s_.node(a).guaranteed[r]) all_full = false;
    }
    if (all_full) return true;
  }
  return false;
}

bool Decider::AnySameTeamCandidate(int team) const {
  // The queue head has the highest priority and, among equals, the earliest
  // creation: a running job that may not yield to it (SameTeamAllowed) may
  // not yield to any job behind it either. One scan of the team's running
  // jobs instead of one victim search per waiting job.
  const NodeState& n = s_.node_state(team);
  if (n.pending.empty()) return false;
  const Job& head = s_.job(n.pending.begin()->job);
  for (int r : n.running) {
    if (SameTeamAllowed(s_.node(team).policy, head, s_.job(r))) return true;
  }
  return false;
}

void Decider::ClassicalPass() {
  struct Cursor {
    std::set<QueueKey>::const_iterator it, end;
    int team;
  };
  auto later = [](const Cursor& a, const Cursor& b) { return *b.it < *a.it; };
  std::vector<Cursor> heap;
  for (int n : s_.teams_with_pending()) {
    s_.node_state(n).stuck = TeamStuck(n);
    if (s_.node_state(n).stuck) {
      RefreshStuckHead(n);
      continue;
    }
    const NodeState& ns = s_.node_state(n);
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

void Decider::FairSharePass() {
  // Each job comes from the lowest-share leaf (LowestShareLeaf), shares
  // recomputed after each admission; equal shares go to the child whose
  // next job comes first in queue order, as Kueue orders its heads.
  const size_t N = s_.config().nodes.size();
  std::vector<bool> done(N, false);  // subtree has nothing left to try.
  std::vector<std::set<QueueKey>::const_iterator> cursor(N);
  std::vector<bool> eligible(N, false);  // had jobs when the pass began.
  for (int t : s_.teams_with_pending()) {
    cursor[t] = s_.node_state(t).pending.begin();
    eligible[t] = true;
    s_.node_state(t).stuck = false;  // every team is tried.
  }
  // The next job to try in n's subtree, or nullptr (marks n done).
  SubtreeHead head = [&](int n) -> const QueueKey* {
    if (done[n]) return nullptr;
    if (s_.node(n).leaf && n != kRootNode) {
      if (!eligible[n] || cursor[n] == s_.node_state(n).pending.end()) {
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
    const int n = LowestShareLeaf(s_, head);
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
      MarkBehindHead(j, cursor[n], s_.node_state(n).pending.end());
      done[n] = true;
    }
  }
}

void Decider::MarkBehindHead(int head, std::set<QueueKey>::const_iterator it,
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

ResourceMask Decider::Contested(const Job& job) const {
  std::vector<Quantity> avail;
  s_.Available(job.team, &avail);
  ResourceMask contested = 0;
  for (int r = 0; r < s_.num_resources(); ++r) {
    if (!(job.requested >> r & 1)) continue;
    const Quantity headroom = std::max<Quantity>(0, std::min(avail[r], s_.free_capacity(job.cluster, r)));
    if (job.demand[r] > headroom) contested |= ResourceMask{1} << r;
  }
  return contested;
}

bool Decider::ExceedsMax(const Job& job) const {
  for (int r = 0; r < s_.num_resources(); ++r) {
    if (!(job.requested >> r & 1)) continue;
    if (job.demand[r] > s_.node(job.team).potential[r] ||
        job.demand[r] > s_.config().clusters[job.cluster].capacity[r]) {
      return true;
    }
  }
  return false;
}

bool Decider::PassesGate(const Job& job, ResourceMask contested) const {
  const TeamPolicy& pol = s_.node(job.team).policy;
  if (pol.borrow_within_cohort != v1::BORROW_WITHIN_COHORT_POLICY_NEVER) return true;  // (c)
  if (s_.config().policy.fair_sharing && pol.reclaim != v1::RECLAIM_NEVER) return true;  // (c)
  const int t = job.team;
  const int domain = s_.Domain(t, contested);
  for (int r = 0; r < s_.num_resources(); ++r) {
    if (!(contested >> r & 1)) continue;
    if (job.demand[r] <= s_.node(t).guaranteed[r]) continue;  // (a)
    bool ok = false;                                 // (b)
    Quantity remaining = job.demand[r] - s_.Slack(t, r);
    for (int a = s_.node(t).parent; a != domain && a > kRootNode; a = s_.node(a).parent) {
      if (s_.node_state(a).usage[r] + remaining <= s_.node(a).guaranteed[r]) {
        ok = true;
        break;
      }
      remaining -= s_.Slack(a, r);
    }
    if (!ok) return false;
  }
  return true;
}

Decider::Outcome Decider::TryAdmit(int j) {
  Job& job = s_.job(j);
  const ResourceMask contested = Contested(job);
  if (contested == 0) {
    if (!FitsGuards(job, job.demand)) {
      // Between a tide lead and its change only what the coming quota also
      // holds is admitted (docs/policy.md §6).
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
  if (job.requeued_at >= 0 && s_.now() < MayPreemptAgainAt(job.requeued_at)) {
    const Time until = MayPreemptAgainAt(job.requeued_at);
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

void Decider::Admit(int j) {
  Job& job = s_.job(j);
  Event e;
  e.type = EventType::kAdmit;
  e.job = job.id;
  e.team = s_.node(job.team).name;
  e.replicas = job.replicas;
  std::vector<Quantity> borrowed(s_.num_resources(), 0);
  for (int r = 0; r < s_.num_resources(); ++r) {
    const Quantity over = s_.node_state(job.team).usage[r] + job.demand[r] - s_.node(job.team).guaranteed[r];
    borrowed[r] = std::min(job.demand[r], std::max<Quantity>(0, over));
  }
  e.borrowed = s_.Named(borrowed, job.requested);
  SetBorrowed(job, std::move(borrowed));
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

void Decider::AnnounceQueued() {
  for (const auto& [j, gen] : submitted_) {
    Job& job = s_.job(j);
    if (job.gen != gen || job.phase != Phase::kQueued || job.announced) continue;
    if (job.reason.empty()) {
      const NodeState& team = s_.node_state(job.team);
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
