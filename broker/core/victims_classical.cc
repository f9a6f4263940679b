#include "broker/core/victims_classical.h"

#include <algorithm>
#include <optional>

#include "absl/container/flat_hash_map.h"

namespace tidegate::core {

bool SameTeamAllowed(const TeamPolicy& pol, const Job& J, const Job& c) {
  switch (pol.within_team) {
    case v1::WITHIN_TEAM_LOWER_PRIORITY:
      return c.priority < J.priority;
    case v1::WITHIN_TEAM_LOWER_OR_NEWER_EQUAL_PRIORITY:
      return c.priority < J.priority || (c.priority == J.priority && J.created_at < c.created_at);
    default:
      return false;
  }
}

namespace {

// One candidate of docs/policy.md §3: a job of the preemptor's team, or of
// another team met at ancestor `meeting`. Built by the two named
// constructors, so no call site lists bools by position.
struct Candidate {
  int job;
  int meeting;                     // the ancestor A at which it was found (-1: same team).
  bool same_team;
  bool reclaim_without_borrowing;  // other team, and only a pass without borrowing may take it.
  CandidateKey key;

  static Candidate SameTeam(int job, CandidateKey key) {
    return Candidate{job, /*meeting=*/-1, /*same_team=*/true, /*reclaim_without_borrowing=*/false, key};
  }
  static Candidate OtherTeam(int job, int meeting, bool reclaim_without_borrowing, CandidateKey key) {
    return Candidate{job, meeting, /*same_team=*/false, reclaim_without_borrowing, key};
  }
};

// A list sorted lazily, since a pass usually stops after a few victims and
// 10,000 candidates need not be fully sorted: the first is found by one scan
// for the smallest, and only a look past it orders the rest into a heap,
// popped on demand. Keys are compared packed (PackedCandidateKey: the id
// strings are read only when all else and their first 8 bytes tie). The
// keys are a strict total order (the id and the part decide), so the order
// is the one a full sort would give.
class LazySorted {
 public:
  explicit LazySorted(std::vector<Candidate> items) : items_(std::move(items)) {
    rest_.reserve(items_.size());
    for (size_t i = 0; i < items_.size(); ++i) rest_.push_back({PackedCandidateKey::Of(items_[i].key), i});
  }
  // The i-th smallest, or nullptr past the end.
  const Candidate* At(size_t i) {
    while (sorted_.size() <= i && !rest_.empty()) {
      if (sorted_.empty()) {
        auto first = std::min_element(rest_.begin(), rest_.end(), Less);
        sorted_.push_back(first->item);
        *first = rest_.back();
        rest_.pop_back();
        continue;
      }
      if (!heaped_) {
        std::make_heap(rest_.begin(), rest_.end(), Greater);
        heaped_ = true;
      }
      std::pop_heap(rest_.begin(), rest_.end(), Greater);
      sorted_.push_back(rest_.back().item);
      rest_.pop_back();
    }
    return i < sorted_.size() ? &items_[sorted_[i]] : nullptr;
  }

 private:
  struct Keyed {
    PackedCandidateKey key;
    size_t item;
  };
  static bool Less(const Keyed& a, const Keyed& b) { return a.key < b.key; }
  static bool Greater(const Keyed& a, const Keyed& b) { return b.key < a.key; }
  std::vector<Candidate> items_;
  std::vector<Keyed> rest_;     // not yet taken: unordered, then a heap.
  std::vector<size_t> sorted_;  // taken, smallest first (indexes into items_).
  bool heaped_ = false;
};

// What-if removals with undo, a number of replicas at a time (a whole rigid
// job is all its replicas).
class WhatIf {
 public:
  explicit WhatIf(State& s) : s_(s) {}
  ~WhatIf() { RestoreAll(); }
  // Removes `replicas` of job j; returns the step's index.
  size_t Remove(int j, int64_t replicas) {
    Apply(j, replicas, -1);
    steps_.push_back({j, replicas, true});
    return steps_.size() - 1;
  }
  void Restore(size_t step) {
    Step& st = steps_[step];
    if (!st.active) return;
    Apply(st.job, st.replicas, +1);
    st.active = false;
  }
  void Redo(size_t step) {
    Step& st = steps_[step];
    if (st.active) return;
    Apply(st.job, st.replicas, -1);
    st.active = true;
  }
  void RestoreAll() {
    for (size_t i = steps_.size(); i-- > 0;) Restore(i);
    steps_.clear();
  }

 private:
  struct Step {
    int job;
    int64_t replicas;
    bool active;
  };
  void Apply(int j, int64_t replicas, int sign) {
    const Job& job = s_.job(j);
    std::vector<Quantity> amount(s_.num_resources());
    for (int r = 0; r < s_.num_resources(); ++r) amount[r] = job.per_replica[r] * replicas;
    s_.AddUsage(job.team, job.cluster, amount, sign);
  }
  State& s_;
  std::vector<Step> steps_;
};

// A shrinkable elastic job is two candidates: its replicas above min (a
// shrink, ordered before whole evictions by key 5) and the rest of it (a
// whole eviction, ordered by lost work like any other).
void PushCandidate(const Job& job, Candidate cd, std::vector<Candidate>* out) {
  if (Shrinkable(job)) {
    Candidate shrink = cd;
    shrink.key.not_shrinkable = false;
    shrink.key.whole_part = false;
    out->push_back(shrink);
  }
  out->push_back(cd);  // KeyFor made it a whole part.
}

bool ClusterLacksRoom(const State& s, const Job& j) {
  for (int r = 0; r < s.num_resources(); ++r) {
    if ((j.requested >> r & 1) && j.demand[r] > std::max<Quantity>(0, s.free_capacity(j.cluster, r))) return true;
  }
  return false;
}

bool BorrowingOnAny(const State& s, int n, ResourceMask rs) {
  for (int r = 0; r < s.num_resources(); ++r) {
    if ((rs >> r & 1) && s.Borrowing(n, r)) return true;
  }
  return false;
}

}  // namespace

namespace {

CandidateKey KeyFor(const State& s, const Job& J, const Job& c, CandidateList list, bool lacks_room) {
  CandidateKey k;
  k.not_draining = c.phase != Phase::kDraining;
  k.list = list;
  k.outside_cluster = lacks_room && c.cluster != J.cluster;
  k.own_team = c.team == J.team;
  k.priority = c.priority;
  const bool least_lost_work = s.config().policy.least_lost_work;
  k.not_shrinkable = least_lost_work;  // PushCandidate sets it per part; newest_first drops key 5.
  k.whole_part = true;
  k.lost_work = least_lost_work ? LostWork(c, s.now()) : 0;
  k.neg_admitted_at = -c.admitted_at;
  k.id = &c.id;
  return k;
}

// Collects other-team candidates from the subtree of `node`, skipping
// `skip_child` and children within guarantee on the contested resources.
// Every candidate remembers `meeting`, the ancestor level being visited.
void CollectSubtree(const State& s, const Job& J, int node, int meeting, int skip_child, ResourceMask contested,
                    bool hierarchy, bool lacks_room, std::vector<Candidate>* out) {
  const TeamPolicy& pol = s.node(J.team).policy;
  const auto& bwc = pol.borrow_within_cohort;
  for (int c : s.node(node).children) {
    if (c == skip_child) continue;
    if (s.WithinGuarantee(c, contested)) continue;
    if (!s.node(c).leaf) {
      CollectSubtree(s, J, c, meeting, -1, contested, hierarchy, lacks_room, out);
      continue;
    }
    if (c == J.team || !BorrowingOnAny(s, c, contested)) continue;
    out->reserve(out->size() + s.node_state(c).running.size());
    for (int cj : s.node_state(c).running) {
      const Job& cand = s.job(cj);
      if (!Eligible(s, cand, contested)) continue;
      if (pol.reclaim == v1::RECLAIM_LOWER_PRIORITY && cand.priority >= J.priority) continue;
      const bool reclaim_without_borrowing =
          !hierarchy && (bwc == v1::BORROW_WITHIN_COHORT_POLICY_NEVER || cand.priority >= J.priority ||
                         (pol.max_priority && cand.priority > *pol.max_priority));
      const CandidateList list = hierarchy ? CandidateList::kHierarchy : CandidateList::kPriority;
      PushCandidate(cand, Candidate::OtherTeam(cj, meeting, reclaim_without_borrowing, KeyFor(s, J, cand, list, lacks_room)),
                    out);
    }
  }
}


// Skip rule (iii): some node strictly between the candidate's team and its
// meeting point is within guarantee.
bool BetweenWithinGuarantee(const State& s, const Candidate& c, ResourceMask contested) {
  for (int a = s.node(s.job(c.job).team).parent; a != c.meeting && a >= 0; a = s.node(a).parent) {
    if (s.WithinGuarantee(a, contested)) return true;
  }
  return false;
}

// Walks the levels of docs/policy.md §3's other-team search for J: calls
// f(A, prev, advantage) for each ancestor A of J's team from its parent up to
// the sharing domain D(t) inclusive, `prev` the child of A already visited
// and `advantage` as it stands when A's candidates are collected. Stops early
// when f returns false.
template <typename F>
void ForEachLevel(const State& s, const Job& J, ResourceMask contested, F f) {
  const int t = J.team;
  const int R = s.num_resources();
  const int domain = s.Domain(t, contested);
  bool advantage = true;
  std::vector<Quantity> remaining(R, 0);
  for (int r = 0; r < R; ++r) {
    if (!(J.requested >> r & 1)) continue;
    if (s.node_state(t).usage[r] + J.demand[r] > s.node(t).guaranteed[r]) advantage = false;
    remaining[r] = std::max<Quantity>(0, J.demand[r] - s.Slack(t, r));
  }
  int prev = t;
  for (int A = s.node(t).parent; A >= 0; A = s.node(A).parent) {
    if (!f(A, prev, advantage)) return;
    if (A == domain) break;
    bool fits_here = true;
    for (int r = 0; r < R; ++r) {
      if ((J.requested >> r & 1) && s.node_state(A).usage[r] + remaining[r] > s.node(A).guaranteed[r]) fits_here = false;
    }
    advantage = advantage || fits_here;
    for (int r = 0; r < R; ++r) remaining[r] = std::max<Quantity>(0, remaining[r] - s.Slack(A, r));
    prev = A;
  }
}

// The candidates of docs/policy.md §3 for job J: its own team's (when within_team
// allows), then other teams' level by level up to the sharing domain D(t).
// `any_other`: some other team's job is a candidate; `any_hierarchy`: some
// was found with the hierarchy advantage (they choose the passes).
struct Candidates {
  std::vector<Candidate> list;
  bool any_other = false;
  bool any_hierarchy = false;
};

Candidates CollectCandidates(const State& s, const Job& J, ResourceMask contested, bool lacks_room) {
  const int t = J.team;
  const TeamPolicy& pol = s.node(t).policy;
  Candidates out;
  std::vector<Candidate>& cands = out.list;
  cands.reserve(s.node_state(t).running.size());

  // Same-team candidates.
  if (pol.within_team != v1::WITHIN_TEAM_NEVER) {
    for (int cj : s.node_state(t).running) {
      const Job& c = s.job(cj);
      if (!Eligible(s, c, contested) || !SameTeamAllowed(pol, J, c)) continue;
      PushCandidate(c, Candidate::SameTeam(cj, KeyFor(s, J, c, CandidateList::kSameTeam, lacks_room)), &cands);
    }
  }
  if (pol.reclaim == v1::RECLAIM_NEVER) return out;

  // Other-team candidates, level by level up to D(t).
  ForEachLevel(s, J, contested, [&](int A, int prev, bool advantage) {
    const size_t before = cands.size();
    CollectSubtree(s, J, A, A, prev, contested, advantage, lacks_room, &cands);
    if (cands.size() > before) {
      out.any_other = true;
      if (advantage) out.any_hierarchy = true;
    }
    return true;
  });
  return out;
}

// True when no pass can find a fit, so the search may skip collecting and
// ordering the candidates (often every running job of the sharing domain,
// and retried at every tick under least_lost_work). It returns the search's
// own answer, no victims, because then:
// - within_team is never, so every candidate is another team's, and taking
//   one never lowers u(t) (t is a leaf: removals change only the
//   candidate's team and its ancestors);
// - no level is visited with the advantage, so there are no hierarchy
//   candidates, and the advantage was false from the start: u(t) + d_r >
//   g(t) on some requested r;
// - borrow_within_cohort is never, so every priority candidate is
//   reclaim-without-borrowing.
// The passes are then {with borrowing} or {without, with} (docs/policy.md
// §3). A pass with borrowing skips every candidate by rule (i), removes
// nothing and never fits. A pass without borrowing needs u(t) + d_r <= g(t)
// on every requested r, false before any removal and unchanged by them.
bool NoPassCanFit(const State& s, const Job& J, ResourceMask contested) {
  const TeamPolicy& pol = s.node(J.team).policy;
  if (pol.within_team != v1::WITHIN_TEAM_NEVER) return false;
  if (pol.borrow_within_cohort != v1::BORROW_WITHIN_COHORT_POLICY_NEVER) return false;
  if (pol.reclaim == v1::RECLAIM_NEVER) return true;  // no candidates at all.
  bool hierarchy = false;
  ForEachLevel(s, J, contested, [&](int, int, bool advantage) {
    hierarchy = hierarchy || advantage;
    return !hierarchy;
  });
  return !hierarchy;
}

// One pass of docs/policy.md §3 over the sorted candidates: remove them in order
// (what-if) until J fits (with borrowing allowed or not), then put back from
// the second-last down what is not needed. nullopt when J never fits. The
// state is unchanged on return.
std::optional<std::vector<Victim>> TryPass(State& s, const Job& J, LazySorted& sorted, bool allow_borrowing,
                                           ResourceMask contested) {
  WhatIf what_if(s);
  // Each removal is a step: one replica of a shrinking elastic job, or the
  // rest of a job (evicted whole).
  struct Chosen {
    int job;
    bool same_team;
    bool whole;
    size_t step;
  };
  std::vector<Chosen> chosen;
  bool fit = false;
  auto skip = [&](const Candidate& c) {
    if (c.same_team) return false;
    return s.WithinGuarantee(s.job(c.job).team, contested) || BetweenWithinGuarantee(s, c, contested);
  };
  absl::flat_hash_map<int, int64_t> taken;  // replicas removed so far in this pass, per job
  for (size_t i = 0; !fit; ++i) {
    const Candidate* c = sorted.At(i);
    if (!c) break;
    if (!c->same_team && c->reclaim_without_borrowing && allow_borrowing) continue;
    if (skip(*c)) continue;
    const Job& victim = s.job(c->job);
    int64_t& gone = taken[c->job];
    if (!c->key.whole_part) {
      // A shrink: one replica at a time, down to min (docs/policy.md §3).
      while (victim.replicas - gone > victim.elastic_min && !fit && !skip(*c)) {
        chosen.push_back({c->job, c->same_team, /*whole=*/false, what_if.Remove(c->job, 1)});
        ++gone;
        fit = s.Fits(J, !allow_borrowing);
      }
      continue;
    }
    const int64_t left = victim.replicas - gone;
    if (left <= 0) continue;
    chosen.push_back({c->job, c->same_team, /*whole=*/true, what_if.Remove(c->job, left)});
    gone += left;
    fit = s.Fits(J, !allow_borrowing);
  }
  if (!fit) return std::nullopt;
  // Put back from the second-last step down to the first.
  std::vector<bool> keep(chosen.size(), true);
  for (int i = static_cast<int>(chosen.size()) - 2; i >= 0; --i) {
    what_if.Restore(chosen[i].step);
    if (s.Fits(J, !allow_borrowing)) {
      keep[i] = false;
    } else {
      what_if.Redo(chosen[i].step);
    }
  }
  // One victim per job, in the order first chosen: evicted when its whole
  // step stayed, else shrunk by the replica steps that stayed.
  std::vector<Victim> victims;
  absl::flat_hash_map<int, size_t> index;
  for (size_t i = 0; i < chosen.size(); ++i) {
    if (!keep[i]) continue;
    const Chosen& ch = chosen[i];
    auto [it, inserted] = index.try_emplace(ch.job, victims.size());
    if (inserted) {
      victims.push_back({ch.job, ch.same_team ? VictimKind::kPriority : VictimKind::kReclaim,
                         s.job(ch.job).replicas});
    }
    Victim& v = victims[it->second];
    if (ch.whole) {
      v.shrink_to = -1;
    } else if (v.shrink_to > 0) {
      --v.shrink_to;
    }
  }
  return victims;  // what_if restores the state.
}

}  // namespace

std::vector<Victim> ClassicalVictims(State& s, int j, ResourceMask contested) {
  const Job& J = s.job(j);
  const int t = J.team;
  const TeamPolicy& pol = s.node(t).policy;
  const int R = s.num_resources();
  if (NoPassCanFit(s, J, contested)) return {};
  Candidates collected = CollectCandidates(s, J, contested, ClusterLacksRoom(s, J));
  if (collected.list.empty()) return {};
  const bool any_other = collected.any_other, any_hierarchy = collected.any_hierarchy;

  // Passes.
  const bool bwc_never = pol.borrow_within_cohort == v1::BORROW_WITHIN_COHORT_POLICY_NEVER;
  bool team_at_guarantee = false;
  for (int r = 0; r < R; ++r) {
    if ((contested >> r & 1) && s.node_state(t).usage[r] >= s.node(t).guaranteed[r]) team_at_guarantee = true;
  }
  std::vector<bool> passes;  // allow borrowing?
  if (!any_other || (bwc_never && team_at_guarantee)) {
    passes = {true};
  } else if (bwc_never && !any_hierarchy) {
    passes = {false, true};
  } else {
    passes = {true, false};
  }

  LazySorted sorted(std::move(collected.list));
  for (bool allow_borrowing : passes) {
    if (auto victims = TryPass(s, J, sorted, allow_borrowing, contested)) return *std::move(victims);
  }
  return {};
}

}  // namespace tidegate::core
