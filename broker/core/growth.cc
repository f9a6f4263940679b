// Elastic jobs: growth into free capacity (docs/policy.md §4 "Growth") and the
// resize protocol (docs/design.md §5): every size change is a request with an
// epoch; a grow reserves capacity at the request, a shrink frees it at the
// ack or at its deadline.
#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "broker/core/decider.h"
#include "broker/core/fair_share.h"

namespace tidegate::core {

NamedQuantities Decider::BorrowedPart(const Job& job, std::vector<Quantity>* by_resource) const {
  // The job's own part above its team's guarantee, with the job counted.
  std::vector<Quantity> borrowed(s_.num_resources(), 0);
  for (int r = 0; r < s_.num_resources(); ++r) {
    const Quantity over = s_.node_state(job.team).usage[r] - s_.node(job.team).guaranteed[r];
    borrowed[r] = std::min(job.demand[r], std::max<Quantity>(0, over));
  }
  NamedQuantities named = s_.Named(borrowed, job.requested);
  if (by_resource) *by_resource = std::move(borrowed);
  return named;
}

void Decider::SetBorrowed(Job& job, std::vector<Quantity> by_resource) {
  job.borrowing = std::any_of(by_resource.begin(), by_resource.end(), [](Quantity q) { return q > 0; });
  job.borrowed = job.borrowing ? std::move(by_resource) : std::vector<Quantity>();
}

NamedQuantities Decider::BorrowedAt(int j, int64_t replicas, std::vector<Quantity>* by_resource) {
  // Before the capacity a shrink frees is held for its waiter (which is
  // charged to the same team until the waiter is admitted).
  Job& job = s_.job(j);
  const int64_t held = job.replicas;
  s_.SetReplicas(j, replicas);
  NamedQuantities out = BorrowedPart(job, by_resource);
  s_.SetReplicas(j, held);
  return out;
}

bool Decider::GrowFits(const Job& job) const {
  if (job.grow_backoff_until > s_.now()) return false;
  std::vector<Quantity> avail;
  s_.Available(job.team, &avail);
  for (int r = 0; r < s_.num_resources(); ++r) {
    const Quantity d = job.per_replica[r];
    if (d == 0) continue;
    if (d > std::max<Quantity>(0, avail[r]) || d > std::max<Quantity>(0, s_.free_capacity(job.cluster, r))) {
      return false;
    }
  }
  return FitsGuards(job, job.per_replica);
}

// About 90 lines: the held paths, the candidate counts and the descent share
// local state that one pass builds and consumes.
void Decider::GrowPass() {
  if (s_.teams_with_growable().empty() || s_.grow_idle_stamp == s_.change_stamp()) return;
  // While a job waits for its victims, the capacity its victim search
  // counted on is its too: its cluster's free capacity and the headroom of
  // the nodes on its path. Growing into it would leave it short when its
  // victims are gone, and it would reclaim again, round after round. Growth
  // elsewhere (another cluster, a disjoint subtree) goes on. The root is on
  // every path; its headroom is the clusters' free capacity, which the
  // cluster rule already keeps.
  const size_t N = s_.config().nodes.size();
  std::vector<bool> held_node(N, false);
  std::vector<bool> held_cluster(s_.config().clusters.size(), false);
  for (const int w : Waiters()) {
    held_cluster[s_.job(w).cluster] = true;
    for (int a : s_.node(s_.job(w).team).path) {
      if (a != kRootNode) held_node[a] = true;
    }
  }
  auto held = [&](const Job& job) {
    if (held_cluster[job.cluster]) return true;
    for (int a : s_.node(job.team).path) {
      if (held_node[a]) return true;
    }
    return false;
  };
  // Candidate leaves, and how many lie in each subtree, for the descent.
  std::vector<int> in_subtree(N, 0);
  std::vector<bool> candidate(N, false);
  for (int t : s_.teams_with_growable()) {
    candidate[t] = true;
    for (int a : s_.node(t).path) ++in_subtree[a];
  }
  auto drop = [&](int t) {
    candidate[t] = false;
    for (int a : s_.node(t).path) --in_subtree[a];
  };
  auto head = [&](int leaf) -> const QueueKey* {
    const auto& g = s_.node_state(leaf).growable;
    return g.empty() ? nullptr : &*g.begin();
  };
  // The first job of each leaf's subtree in queue order, for share ties.
  std::function<const QueueKey*(int)> first = [&](int n) -> const QueueKey* {
    if (s_.node(n).leaf && n != kRootNode) return candidate[n] ? head(n) : nullptr;
    const QueueKey* best = nullptr;
    for (int c : s_.node(n).children) {
      if (in_subtree[c] == 0) continue;
      const QueueKey* h = first(c);
      if (h && (!best || *h < *best)) best = h;
    }
    return best;
  };

  std::vector<std::pair<int, int64_t>> grown;  // job, replicas before, in first-grown order.
  absl::flat_hash_map<int, size_t> grown_index;
  while (in_subtree[kRootNode] > 0) {
    // The leaf with the lowest share among those with a candidate.
    const int n = LowestShareLeaf(s_, [&](int c) { return in_subtree[c] == 0 ? nullptr : first(c); });
    // Its first job (queue order) that one more replica fits.
    int pick = -1;
    for (const QueueKey& k : s_.node_state(n).growable) {
      if (!held(s_.job(k.job)) && GrowFits(s_.job(k.job))) {
        pick = k.job;
        break;
      }
    }
    if (pick < 0) {
      drop(n);
      continue;
    }
    Job& job = s_.job(pick);
    if (grown_index.try_emplace(pick, grown.size()).second) grown.emplace_back(pick, job.replicas);
    s_.SetReplicas(pick, job.replicas + 1);
    if (job.replicas >= job.elastic_max) {
      s_.UpdateGrowable(pick);  // full: out of the set.
      if (s_.node_state(n).growable.empty()) drop(n);
    }
  }
  if (grown.empty()) {
    s_.grow_idle_stamp = s_.change_stamp();
    return;
  }
  // One request per job for what it gained in this pass.
  for (const auto& [j, before] : grown) {
    Job& job = s_.job(j);
    const int64_t after = job.replicas;
    s_.SetReplicas(j, before);  // RequestResize reserves it again.
    RequestResize(j, after, "grow", -1);
  }
}

void Decider::RequestResize(int j, int64_t target, const std::string& reason, int for_job, const std::string& by) {
  Job& job = s_.job(j);
  const int64_t from = job.replicas;
  ++job.epoch;
  job.resize_from = from;
  job.resize_to = target;
  job.resize_reason = by.empty() ? reason : by;
  job.shrink_for = target < from ? for_job : -1;
  const Time wait = target > from ? s_.config().policy.resize_timeout_s * kMillisPerSecond : job.grace_ms;
  job.resize_deadline = s_.now() + wait;
  if (target > from) s_.SetReplicas(j, target);  // a grow reserves at once.
  s_.UpdateGrowable(j);

  Event e;
  e.type = EventType::kResize;
  e.job = job.id;
  e.team = s_.node(job.team).name;
  e.from = from;
  e.to = target;
  e.replicas = target;
  e.reason = reason;
  e.epoch = job.epoch;
  e.deadline = job.resize_deadline;
  e.by = for_job >= 0 ? s_.job(for_job).id : by;
  std::vector<Quantity> borrowed;
  e.borrowed = BorrowedAt(j, target, &borrowed);
  SetBorrowed(job, std::move(borrowed));
  Emit(std::move(e));
  // Even at `now` (resize_timeout_s 0): the next Apply withdraws it.
  s_.AddTimer(job.resize_deadline, j);
}

void Decider::CompleteResize(int j, int64_t replicas) {
  Job& job = s_.job(j);
  const int64_t before = job.replicas;
  const int waiting = job.shrink_for;
  job.resize_from = -1;
  job.resize_deadline = -1;
  job.shrink_for = -1;
  s_.SetReplicas(j, replicas);
  s_.UpdateGrowable(j);
  s_.Changed();
  if (replicas < before) freed_ = true;
  std::vector<Quantity> borrowed;
  BorrowedPart(job, &borrowed);  // at the size it now runs, before any hold.
  SetBorrowed(job, borrowed);
  if (waiting >= 0) {
    // What the shrink freed is held for the job that waits for it (§4).
    Job& w = s_.job(waiting);
    std::vector<Quantity> freed(s_.num_resources(), 0);
    for (int r = 0; r < s_.num_resources(); ++r) freed[r] = job.per_replica[r] * std::max<int64_t>(0, before - replicas);
    s_.AddUsage(job.team, job.cluster, freed, +1);
    w.holds.push_back({job.team, job.cluster, std::move(freed)});
    w.victims.erase(std::find(w.victims.begin(), w.victims.end(), j));
    // Resolved by the caller once its records are out (ResolveDeferred), so
    // the waiter's admit follows the record of what made room for it.
    if (--w.victims_left == 0) deferred_.push_back(waiting);
  }
}

void Decider::ResolveDeferred() {
  std::vector<int> due;
  due.swap(deferred_);
  for (int w : due) ResolveWaiting(w);
}

void Decider::BackOffGrowth(int j) {
  Job& job = s_.job(j);
  job.grow_backoff_until = s_.now() + s_.config().policy.resize_timeout_s * kMillisPerSecond;
  if (job.grow_backoff_until > s_.now()) s_.AddTimer(job.grow_backoff_until, j);
}

void Decider::DropGrowRequest(int j) {
  Job& job = s_.job(j);
  if (!job.resize_pending() || job.shrink_pending()) return;
  // The job leaves whole with what it holds, the reserved replicas too: all
  // of it drains and is then held for the job that waits (an ack of the grow
  // is now stale).
  job.resize_from = -1;
  job.resize_deadline = -1;
  s_.UpdateGrowable(j);
}

void Decider::AckResize(const internal::v1::AckResize& ack) {
  const int j = s_.FindJob(ack.job());
  if (j < 0) {
    Error(ack.job(), absl::StrCat("ack_resize.job: unknown job '", ack.job(), "'"));
    return;
  }
  Job& job = s_.job(j);
  if (!job.elastic()) {
    Error(ack.job(), absl::StrCat("ack_resize.job: job '", ack.job(), "' is not elastic"));
    return;
  }
  if (!job.resize_pending() || ack.epoch() != job.epoch) {
    Error(ack.job(), absl::StrCat("ack_resize.epoch: ", ack.epoch(), " is stale; job '", ack.job(), "' ",
                                  job.resize_pending() ? absl::StrCat("waits for an ack of epoch ", job.epoch)
                                                       : std::string("has no resize pending")));
    return;
  }
  const int64_t lo = job.shrink_pending() ? job.elastic_min : job.resize_from;
  const int64_t hi = job.resize_to;
  if (ack.replicas() < lo || ack.replicas() > hi) {
    Error(ack.job(), absl::StrCat("ack_resize.replicas: ", ack.replicas(), " is outside [", lo, ", ", hi,
                                  "] for epoch ", job.epoch, " (", job.resize_from, " -> ", job.resize_to, ")"));
    return;
  }
  const int64_t asked = job.resize_to;
  const bool short_grow = !job.shrink_pending() && ack.replicas() < asked;
  const NamedQuantities borrowed = BorrowedAt(j, ack.replicas());
  CompleteResize(j, ack.replicas());
  if (short_grow) BackOffGrowth(j);
  if (ack.replicas() == asked) {
    ResolveDeferred();
    return;
  }
  {
    // The framework re-formed at another size than asked: say so.
    Event e;
    e.type = EventType::kResize;
    e.job = job.id;
    e.team = s_.node(job.team).name;
    e.from = asked;
    e.to = ack.replicas();
    e.replicas = ack.replicas();
    e.reason = "ack";
    e.epoch = job.epoch;
    e.borrowed = borrowed;
    Emit(std::move(e));
  }
  ResolveDeferred();
}

}  // namespace tidegate::core
