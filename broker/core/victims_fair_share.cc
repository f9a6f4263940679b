#include "broker/core/victims_fair_share.h"

#include <algorithm>
#include <map>

#include "broker/core/fair_share.h"

namespace tidegate::core {

namespace {

bool IsAncestor(const State& s, int a, int n) {
  for (int x = n; x >= 0; x = s.node(x).parent) {
    if (x == a) return true;
  }
  return false;
}

// The child of `lca` on the path to n.
int SideOf(const State& s, int lca, int n) {
  int x = n;
  while (s.node(x).parent != lca) x = s.node(x).parent;
  return x;
}

int Lca(const State& s, int a, int b) {
  const auto& pa = s.node(a).path;
  const auto& pb = s.node(b).path;
  size_t i = 0;
  while (i < pa.size() && i < pb.size() && pa[i] == pb[i]) ++i;
  return pa[i - 1];
}

struct FsCandidate {
  int job;
  PackedCandidateKey key;  // CandidateKey's order, compared faster.
};

// One team's candidates, taken smallest key first. Not a sorted list: a
// search takes few of them, and sorting all (10,000 keys whose ties fall
// through to the id) was most of its cost. Loaded unordered; the first front
// is one scan for the smallest (most searches take one victim per team), and
// only a look past the first take orders the rest into a binary heap. Keys
// are a strict total order (the id decides), so the order taken is the
// sorted one.
class CandidateQueue {
 public:
  bool empty() const { return heap_.empty(); }
  const FsCandidate& front() {
    if (!heaped_ && taken_) {
      std::make_heap(heap_.begin(), heap_.end(), Later);
      heaped_ = true;
    } else if (!heaped_ && !min_first_) {
      auto min = std::min_element(heap_.begin(), heap_.end(),
                                  [](const FsCandidate& a, const FsCandidate& b) { return a.key < b.key; });
      std::iter_swap(heap_.begin(), min);
      min_first_ = true;
    }
    return heap_.front();
  }
  void pop_front() {
    front();  // orders what this take needs
    if (heaped_) {
      std::pop_heap(heap_.begin(), heap_.end(), Later);
      heap_.pop_back();
      return;
    }
    heap_.front() = heap_.back();
    heap_.pop_back();
    min_first_ = false;
    taken_ = true;  // the next front orders the rest into a heap.
  }
  void push_back(const FsCandidate& c) {
    heap_.push_back(c);
    if (heaped_) {
      std::push_heap(heap_.begin(), heap_.end(), Later);
    } else {
      min_first_ = false;
    }
  }
  void clear() { *this = CandidateQueue(); }
  // Bulk load, unordered.
  void Append(const FsCandidate& c) { push_back(c); }
  void Reserve(size_t n) { heap_.reserve(n); }

 private:
  static bool Later(const FsCandidate& a, const FsCandidate& b) { return b.key < a.key; }
  std::vector<FsCandidate> heap_;
  bool heaped_ = false;     // heap_ is a heap (from the second take on)
  bool taken_ = false;      // one was taken while unordered
  bool min_first_ = false;  // unordered, but the smallest is in front
};

// The teams victims are taken from, in the target order of docs/policy.md §5
// (highest share first), each with its queue of candidates.
class TargetTeams {
 public:
  TargetTeams(const State& s, int domain, int preemptor_team, std::map<int, CandidateQueue> cands)
      : s_(s), domain_(domain), t_(preemptor_team), cands_(std::move(cands)), dropped_(s.config().nodes.size(), false) {}

  CandidateQueue& of(int team) { return cands_[team]; }

  // The next target leaf, or -1 when the domain itself is dropped.
  int Next() {
    while (!dropped_[domain_]) {
      int n = domain_;
      while (true) {
        int best = -1;
        Share best_share;
        for (int c : s_.node(n).children) {
          if (dropped_[c]) continue;
          if (!Keep(c)) {
            dropped_[c] = true;
            continue;
          }
          const Share sh = ShareOf(s_, c);
          if (best < 0 || Better(c, sh, best, best_share)) {
            best = c;
            best_share = sh;
          }
        }
        if (best < 0) {
          dropped_[n] = true;
          break;  // descend again from the domain.
        }
        if (s_.node(best).leaf) return best;
        n = best;
      }
    }
    return -1;
  }

 private:
  bool HasCandidates(int leaf) {
    auto it = cands_.find(leaf);
    return it != cands_.end() && !it->second.empty();
  }
  bool Keep(int c) {
    if (s_.node(c).leaf) {
      if (!HasCandidates(c)) return false;
      return c == t_ || FairBorrowing(s_, c);
    }
    return FairBorrowing(s_, c) || IsAncestor(s_, c, t_);
  }
  // Is child a (share sa) a better target than child b (share sb)?
  bool Better(int a, const Share& sa, int b, const Share& sb) {
    const int cmp = Compare(sa, sb);
    if (cmp != 0) return cmp > 0;  // highest share first.
    const bool la = s_.node(a).leaf, lb = s_.node(b).leaf;
    if (la && lb) return cands_[a].front().key < cands_[b].front().key;
    if (la != lb) return !la;  // inner before leaf.
    return false;              // inner vs inner: config order (b came first).
  }

  const State& s_;
  int domain_;
  int t_;
  std::map<int, CandidateQueue> cands_;
  std::vector<bool> dropped_;
};

// The candidates of docs/policy.md §5 for job J by team: its own team's
// (when within_team allows), and the running jobs of every other leaf in the
// sharing domain that borrows a contested resource (when reclaim allows).
std::map<int, CandidateQueue> CollectCandidates(const State& s, const Job& J, int domain, ResourceMask contested) {
  const int t = J.team;
  const TeamPolicy& pol = s.node(t).policy;
  const PolicyOptions& opt = s.config().policy;
  const bool lacks_room = [&] {
    for (int r = 0; r < s.num_resources(); ++r) {
      if ((J.requested >> r & 1) && J.demand[r] > std::max<Quantity>(0, s.free_capacity(J.cluster, r))) return true;
    }
    return false;
  }();
  auto key_for = [&](const Job& c) {
    CandidateKey k;
    k.not_draining = c.phase != Phase::kDraining;
    k.list = CandidateList::kHierarchy;  // one list: §5 orders by share, not by list.
    k.outside_cluster = lacks_room && c.cluster != J.cluster;
    k.own_team = c.team == t;
    k.priority = c.priority;
    k.not_shrinkable = true;  // the fair-sharing search evicts whole jobs.
    k.whole_part = true;
    k.lost_work = opt.least_lost_work ? LostWork(c, s.now()) : 0;
    k.neg_admitted_at = -c.admitted_at;
    k.id = &c.id;
    return PackedCandidateKey::Of(k);
  };

  std::map<int, CandidateQueue> by_team;
  if (pol.within_team != v1::WITHIN_TEAM_NEVER) {
    CandidateQueue* q = nullptr;  // made for the first candidate only.
    for (int cj : s.node_state(t).running) {
      const Job& c = s.job(cj);
      if (!Eligible(s, c, contested)) continue;
      const bool allowed = pol.within_team == v1::WITHIN_TEAM_LOWER_PRIORITY
                               ? c.priority < J.priority
                               : c.priority < J.priority || (c.priority == J.priority && J.created_at < c.created_at);
      if (!allowed) continue;
      if (!q) {
        q = &by_team[t];
        q->Reserve(s.node_state(t).running.size());
      }
      q->Append({cj, key_for(c)});
    }
  }
  if (pol.reclaim != v1::RECLAIM_NEVER) {
    std::vector<int> stack{domain};
    while (!stack.empty()) {
      const int n = stack.back();
      stack.pop_back();
      for (int c : s.node(n).children) {
        if (!s.node(c).leaf) {
          stack.push_back(c);
          continue;
        }
        if (c == t) continue;
        bool borrowing = false;
        for (int r = 0; r < s.num_resources(); ++r) {
          if ((contested >> r & 1) && s.Borrowing(c, r)) borrowing = true;
        }
        if (!borrowing) continue;
        CandidateQueue* q = nullptr;  // made for the first candidate only.
        for (int cj : s.node_state(c).running) {
          const Job& cand = s.job(cj);
          if (!Eligible(s, cand, contested)) continue;
          if (pol.reclaim == v1::RECLAIM_LOWER_PRIORITY && cand.priority >= J.priority) continue;
          if (!q) {
            q = &by_team[c];
            q->Reserve(s.node_state(c).running.size());
          }
          q->Append({cj, key_for(cand)});
        }
      }
    }
  }
  return by_team;
}

// Evicted jobs in `removed` (in eviction order, still removed from the
// state's usage): when J fits, put back as in §3 (borrowing allowed, J not
// counted) from the second-last down what it does not need; then undo every
// removal still applied, so the state is unchanged. The victims that stayed.
std::vector<Victim> PutBack(State& s, const Job& J, const std::vector<int>& removed, bool fit) {
  auto remove = [&](int cj) {
    const Job& c = s.job(cj);
    s.AddUsage(c.team, c.cluster, c.demand, -1);
  };
  auto restore = [&](int cj) {
    const Job& c = s.job(cj);
    s.AddUsage(c.team, c.cluster, c.demand, +1);
  };
  std::vector<bool> still_removed(removed.size(), true);
  std::vector<Victim> victims;
  if (fit) {
    for (int i = static_cast<int>(removed.size()) - 2; i >= 0; --i) {
      restore(removed[i]);
      still_removed[i] = false;
      if (!s.Fits(J, false)) {
        remove(removed[i]);
        still_removed[i] = true;
      }
    }
    for (size_t i = 0; i < removed.size(); ++i) {
      if (!still_removed[i]) continue;
      victims.push_back({removed[i], s.job(removed[i]).team == J.team ? VictimKind::kPriority : VictimKind::kFairShare});
    }
  }
  for (size_t i = 0; i < removed.size(); ++i) {
    if (still_removed[i]) restore(removed[i]);
  }
  return victims;
}

}  // namespace

// About 90 lines: the two preemption strategies of §5 run in sequence on the
// same what-if state (J counted, `removed` applied), which the lambdas share.
std::vector<Victim> FairShareVictims(State& s, int j, ResourceMask contested) {
  const Job& J = s.job(j);
  const int t = J.team;
  const PolicyOptions& opt = s.config().policy;
  const int domain = s.Domain(t, contested);
  // Candidates grouped by team, each team's taken in §3's order.
  std::map<int, CandidateQueue> by_team = CollectCandidates(s, J, domain, contested);
  if (by_team.empty()) return {};

  // Count J in its team's usage for shares and borrowing tests.
  s.AddUsage(t, J.cluster, J.demand, +1);
  std::vector<int> removed;  // in eviction order
  auto remove = [&](int cj) {
    const Job& c = s.job(cj);
    s.AddUsage(c.team, c.cluster, c.demand, -1);
  };
  auto restore = [&](int cj) {
    const Job& c = s.job(cj);
    s.AddUsage(c.team, c.cluster, c.demand, +1);
  };
  auto fits = [&] {  // §3's test with borrowing allowed, J not counted.
    s.AddUsage(t, J.cluster, J.demand, -1);
    const bool f = s.Fits(J, false);
    s.AddUsage(t, J.cluster, J.demand, +1);
    return f;
  };
  auto evict = [&](int cj) {
    remove(cj);
    removed.push_back(cj);
    return fits();
  };
  const bool within_guarantee = s.WithinGuarantee(t, contested);

  bool fit = false;
  std::map<int, CandidateQueue> waiting;  // for the second strategy
  {
    TargetTeams targets(s, domain, t, std::move(by_team));
    const bool first_lte = opt.strategy_lte_final;
    for (int T = targets.Next(); T >= 0 && !fit; T = targets.Next()) {
      auto& q = targets.of(T);
      if (T == t || within_guarantee) {
        const int cj = q.front().job;
        q.pop_front();
        fit = evict(cj);
        continue;
      }
      const int lca = Lca(s, t, T);
      const int t_side = SideOf(s, lca, t), T_side = SideOf(s, lca, T);
      const Share preemptor_new = ShareOf(s, t_side);
      const Share target_old = ShareOf(s, T_side);
      while (!q.empty()) {
        const FsCandidate c = q.front();
        q.pop_front();
        bool pass;
        if (first_lte) {
          remove(c.job);
          const Share target_new = ShareOf(s, T_side);
          restore(c.job);
          pass = preemptor_new <= target_new;
        } else {
          pass = preemptor_new < target_old;
        }
        if (pass) {
          fit = evict(c.job);
          break;
        }
        waiting[T].push_back(c);
      }
    }
  }
  if (!fit && opt.strategy_lte_final && opt.strategy_lt_initial && !waiting.empty()) {
    TargetTeams targets(s, domain, t, std::move(waiting));
    for (int T = targets.Next(); T >= 0 && !fit; T = targets.Next()) {
      auto& q = targets.of(T);
      const int lca = Lca(s, t, T);
      const Share preemptor_new = ShareOf(s, SideOf(s, lca, t));
      const Share target_old = ShareOf(s, SideOf(s, lca, T));
      if (preemptor_new < target_old) {
        const int cj = q.front().job;
        fit = evict(cj);
      }
      q.clear();  // drop the team either way.
    }
  }
  s.AddUsage(t, J.cluster, J.demand, -1);  // J no longer counted.
  return PutBack(s, J, removed, fit);
}

}  // namespace tidegate::core
