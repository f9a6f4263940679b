// Property tests of the core: shared vocabulary. Our own model of the quota
// tree (docs/policy.md §1), the job and elastic state we follow from the events,
// usage recomputed from scratch, and what the streams exercised (Coverage).
// The checker (property_checker.h), the generator (property_generator.h),
// the shrinker (property_shrink.h) and the tests (property_test.cc) build on it.
#ifndef TIDEGATE_BROKER_CORE_PROPERTY_SUPPORT_H_
#define TIDEGATE_BROKER_CORE_PROPERTY_SUPPORT_H_

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "broker/core/broker.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace tidegate::core::property {

inline constexpr Time kSec = kMillisPerSecond;
inline constexpr Time kStart = 1'700'000'000 * kSec;
inline constexpr int kSteps = 300;

// Seeds 1..200 by default; TIDEGATE_PROPERTY_SEEDS=N runs N seeds (more or
// fewer) and TIDEGATE_PROPERTY_FIRST_SEED=S starts at S (to replay one).
inline int Seeds() {
  const char* env = std::getenv("TIDEGATE_PROPERTY_SEEDS");
  return env ? std::atoi(env) : 200;
}
inline uint64_t FirstSeed() {
  const char* env = std::getenv("TIDEGATE_PROPERTY_FIRST_SEED");
  return env ? std::strtoull(env, nullptr, 10) : 1;
}

using Rng = std::mt19937_64;
inline int64_t Uniform(Rng& rng, int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }
inline bool Chance(Rng& rng, double p) { return std::bernoulli_distribution(p)(rng); }
template <typename T>
inline const T& Pick(Rng& rng, const std::vector<T>& v) { return v[Uniform(rng, 0, static_cast<int64_t>(v.size()) - 1)]; }

inline std::string Text(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::TextFormat::Printer p;
  p.SetSingleLineMode(true);
  p.PrintToString(m, &out);
  return out;
}

// Every field of an event, for byte-for-byte comparison.
inline std::string Serialize(const Event& e) {
  std::vector<std::string> borrowed;
  for (const auto& [r, q] : e.borrowed) borrowed.push_back(absl::StrCat(r, "=", q));
  return absl::StrCat(EventTypeName(e.type), "|", e.at, "|", e.job, "|", e.team, "|", e.replicas, "|",
                      absl::StrJoin(borrowed, ","), "|", e.adopted, "|", e.reason, "|", e.requeued, "|", e.by, "|",
                      static_cast<int>(e.decision), "|", absl::StrJoin(e.victims, ","), "|", e.from, "|", e.to, "|",
                      e.epoch, "|", e.deadline);
}

// ---------------------------------------------------------------- the model

// Our own reading of the quota tree (docs/policy.md §1), from the config we built.
struct Model {
  struct Node {
    std::string parent;  // "" = top level
    std::vector<std::string> children;
  };
  std::vector<std::string> resources;
  std::map<std::string, std::map<std::string, Quantity>> capacity;  // cluster -> r -> q
  std::map<std::string, Node> nodes;
  std::vector<std::string> top;
  std::map<std::string, std::map<std::string, v1::ResourceQuota>> quota;  // team -> r -> entry
  std::map<std::string, std::vector<std::string>> paths;                   // team -> top-level ... team
  // Derived.
  // docs/policy.md §1's g, b and p, per node and resource.
  std::map<std::string, std::map<std::string, Quantity>> guaranteed, borrow_limit, private_part;

  static Model From(const v1::Config& c) {
    Model m;
    std::set<std::string> rs;
    for (const auto& cl : c.clusters()) {
      m.capacity[cl.name()];  // a cluster may have no capacity at all
      for (const auto& [r, q] : cl.capacity()) {
        rs.insert(r);
        m.capacity[cl.name()][r] = q;
      }
    }
    for (const auto& t : c.teams()) {
      m.nodes[t.name()].parent = t.parent();
      for (const auto& [r, q] : t.quota()) m.quota[t.name()][r] = q;
    }
    for (const auto& t : c.teams()) {
      if (t.parent().empty()) {
        m.top.push_back(t.name());
      } else {
        m.nodes[t.parent()].children.push_back(t.name());
      }
    }
    m.resources.assign(rs.begin(), rs.end());
    for (const auto& [n, node] : m.nodes) {
      auto& path = m.paths[n];
      for (std::string a = n; !a.empty(); a = m.nodes.at(a).parent) path.push_back(a);
      std::reverse(path.begin(), path.end());
    }
    EXPECT_TRUE(m.Derive());
    return m;
  }
  bool leaf(const std::string& n) const { return nodes.at(n).children.empty(); }
  const std::vector<std::string>& Path(const std::string& n) const { return paths.at(n); }  // top-level ... n
  Quantity TotalCapacity(const std::string& r) const {
    Quantity total = 0;
    for (const auto& [k, cap] : capacity) total += cap.contains(r) ? cap.at(r) : 0;
    return total;
  }

  // guaranteed, borrow_limit, private_part for every node; false when an explicit inner guarantee is below
  // its children's sum.
  bool Derive() {
    guaranteed.clear();
    borrow_limit.clear();
    private_part.clear();
    bool ok = true;
    for (const auto& t : top) ok &= DeriveNode(t);
    return ok;
  }
  bool DeriveNode(const std::string& n) {
    bool ok = true;
    std::map<std::string, Quantity> sum;
    for (const auto& c : nodes.at(n).children) {
      ok &= DeriveNode(c);
      for (const auto& r : resources) sum[r] += guaranteed[c][r];
    }
    for (const auto& r : resources) {
      const v1::ResourceQuota* e = nullptr;
      if (auto it = quota[n].find(r); it != quota[n].end()) e = &it->second;
      if (e && e->has_guaranteed()) {
        guaranteed[n][r] = e->guaranteed();
        if (!leaf(n) && sum[r] > guaranteed[n][r]) ok = false;
      } else {
        guaranteed[n][r] = leaf(n) ? 0 : sum[r];
      }
      borrow_limit[n][r] = e && e->has_borrow_limit() ? e->borrow_limit() : kInfinite;
      private_part[n][r] = e && e->has_lend_limit() ? std::max<Quantity>(0, guaranteed[n][r] - e->lend_limit()) : 0;
    }
    return ok;
  }
};

struct SpecInfo {
  std::string team, cluster;
  std::map<std::string, Quantity> demand;  // requested resources only (an elastic job: at min)
  // Elastic (docs/design.md §5): admitted at `min`, grows and shrinks within [min, max].
  bool elastic = false;
  int64_t min = 0, max = 0;
  std::map<std::string, Quantity> per_replica;
};

// An elastic job's size and its resize request, followed from the events
// (and from the acks we send) alone.
struct ElasticState {
  int64_t replicas = 0;    // replicas holding (or, queued, asking for) capacity.
  int64_t epoch = 0;       // the latest request's epoch.
  int64_t from = -1, to = 0;  // the pending request; from = -1: none.
  Time deadline = -1;
  std::string shrink_for;  // the waiting job a pending shrink frees capacity for.
  bool shrink_pending() const { return from >= 0 && to < from; }
};

// u(n) for every node, the root and every cluster, recomputed from scratch.
struct Usage {
  std::map<std::string, std::map<std::string, Quantity>> node;
  std::map<std::string, Quantity> root;
  std::map<std::string, std::map<std::string, Quantity>> cluster;
};

// What the streams exercised, summed over every checked run, so a reader can
// see the properties were not met vacuously.
struct Coverage {
  std::map<std::string, int64_t> events;  // by type ("admit", "reclaim", ...)
  int64_t steps = 0, quota_changes = 0, quota_refused = 0, steps_with_holds = 0, infeasible_steps = 0,
          max_live_jobs = 0;
  // Elastic jobs.
  int64_t grows = 0, shrinks = 0, immediate_shrinks = 0, deadline_shrinks = 0, deadline_grows = 0, acks = 0,
          acks_other_size = 0, stale_acks = 0, range_acks = 0, grow_cancelled_by_evict = 0, queue_first_checks = 0,
          shrink_holds = 0, elastic_admits = 0;
  std::string Summary() const {
    std::vector<std::string> ev;
    for (const auto& [k, v] : events) ev.push_back(absl::StrCat(k, "=", v));
    std::string out = absl::StrCat(steps, " steps; events: ", absl::StrJoin(ev, " "), "; set_quota applied=",
                                   quota_changes, " refused=", quota_refused, "; steps with held capacity=",
                                   steps_with_holds, "; steps infeasible after a quota cut=", infeasible_steps,
                                   "; most live jobs=", max_live_jobs);
    if (elastic_admits > 0) {
      absl::StrAppend(&out, "; elastic: admits=", elastic_admits, " grows=", grows, " shrinks=", shrinks,
                      " (grace 0: ", immediate_shrinks, ") deadline shrinks=", deadline_shrinks,
                      " deadline grows=", deadline_grows, " acks=", acks, " (other size: ", acks_other_size,
                      ") stale acks=", stale_acks, " out-of-range acks=", range_acks,
                      " grows withdrawn by eviction=", grow_cancelled_by_evict, " shrink holds=", shrink_holds,
                      " queue-first checks=", queue_first_checks);
    }
    return out;
  }
};
inline Coverage coverage;

}  // namespace tidegate::core::property

#endif  // TIDEGATE_BROKER_CORE_PROPERTY_SUPPORT_H_
