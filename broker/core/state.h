// The broker's dynamic state: jobs, per-node usage u(n) (POLICY.md §1), per
// cluster usage, the pending queues and the timers. Plus the tree arithmetic
// every rule is written in: available, potential, slack, within_guarantee.
//
// Threading: not thread-safe; owned by Broker.
#ifndef TIDEGATE_BROKER_CORE_STATE_H_
#define TIDEGATE_BROKER_CORE_STATE_H_

#include <cstdint>
#include <deque>
#include <queue>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "broker/core/config.h"
#include "broker/core/events.h"
#include "broker/core/types.h"
#include "tidegate/v1/config.pb.h"

namespace tidegate::core {

using ResourceMask = uint64_t;  // bit r set = the job requests resource r.

enum class Phase { kQueued, kAdmitted, kDraining };

struct Job {
  std::string id;
  v1::JobSpec spec;             // normalized (defaults filled), for idempotency.
  int team = -1;                // leaf node.
  int cluster = -1;
  int64_t replicas = 0;
  std::vector<Quantity> demand;  // replicas x per_replica, per resource.
  ResourceMask requested = 0;
  Quantity gpus = 0;            // lost-work weight: GPU demand, or the largest resource.
  int32_t priority = 0;
  Time created_at = 0;          // queue order.
  Time grace_ms = 0;
  bool requeue = true;
  Time checkpoint_interval_ms = 0;
  Time last_checkpoint = -1;

  Phase phase = Phase::kQueued;
  Time admitted_at = -1;
  bool borrowing = false;
  int running_slot = -1;        // index in its team's running list.

  // Draining: chosen as a victim for job `drain_for` (-1: adopted already
  // draining and not yet chosen), leaving at drain_deadline.
  int drain_for = -1;
  Time drain_deadline = -1;

  // Queued, waiting for the victims it chose (POLICY.md §4).
  int victims_left = 0;
  std::vector<int> victims;      // victims still draining for it.
  struct Hold {
    int leaf;
    int cluster;
    std::vector<Quantity> amount;
  };
  std::vector<Hold> holds;      // capacity its departed victims left, held for it.
  Time requeued_at = -1;        // backoff: no victims before requeued_at + backoff.
  bool exceeds_max = false;     // parked until the config changes.
  uint64_t parked_stamp = 0;    // see State::change_stamp.
  std::string reason;           // why it waits.
  bool announced = false;       // a queue/reclaim/admit record was written for it.
  uint64_t gen = 0;             // slot generation, for timers.
};

// A pending job's place in queue order: priority high first, then
// created_at, then id (POLICY.md §4).
struct QueueKey {
  int32_t neg_priority;
  Time created_at;
  const std::string* id;
  int job;
  bool operator<(const QueueKey& o) const {
    if (neg_priority != o.neg_priority) return neg_priority < o.neg_priority;
    if (created_at != o.created_at) return created_at < o.created_at;
    return *id < *o.id;
  }
};

struct NodeState {
  std::vector<Quantity> u;         // usage u(n).
  std::vector<int> running;        // leaf: jobs holding capacity (admitted, draining).
  std::set<QueueKey> pending;      // leaf: queued jobs in queue order.
  std::vector<Quantity> queued;    // leaf: demand of its queued jobs.
  // leaf: per resource, the demands of its queued jobs, so the cycle can skip
  // a team none of whose jobs can fit in O(R) (POLICY.md §4 cost rule).
  std::vector<std::multiset<Quantity>> pending_demand;
};

// Due work at `at` for one job. Ordered by (time, job id) so that a state
// restored from a snapshot processes simultaneous deadlines in the same order
// as the original.
struct Timer {
  Time at;
  std::string id;
  int job;
  uint64_t gen;
  bool operator>(const Timer& o) const { return std::tie(at, id) > std::tie(o.at, o.id); }
};

class State {
 public:
  explicit State(CompiledConfig config, v1::Config source);

  const CompiledConfig& config() const { return config_; }
  const v1::Config& source() const { return source_; }
  int R() const { return config_.num_resources(); }
  const NodeConfig& node(int n) const { return config_.nodes[n]; }
  NodeState& ns(int n) { return nodes_[n]; }
  const NodeState& ns(int n) const { return nodes_[n]; }
  Job& job(int j) { return jobs_[j]; }
  const Job& job(int j) const { return jobs_[j]; }

  // ---- jobs
  int FindJob(std::string_view id) const;  // -1 when unknown.
  int NewJob(Job job);                     // takes a free slot.
  void DropJob(int j);                     // forgets an ended job.
  size_t job_count() const { return job_index_.size(); }
  template <typename F> void ForEachJob(F f) const {
    for (const auto& [id, j] : job_index_) f(j);
  }

  // ---- usage. Deltas may be negative; u(n) of ancestors follows
  // u(p) = sum over children max(u(c), p(c)).
  void AddUsage(int leaf, int cluster, const std::vector<Quantity>& amount, int sign);
  // Recomputes every u(n) from the jobs and holds (after a config change).
  void RecomputeUsage();
  Quantity free_capacity(int cluster, int r) const {
    return config_.clusters[cluster].capacity[r] - cluster_used_[cluster][r];
  }
  Quantity cluster_used(int cluster, int r) const { return cluster_used_[cluster][r]; }

  // ---- tree arithmetic (POLICY.md §1), all O(depth x R) or better.
  // available(n) for every resource, into out (size R).
  void Available(int n, std::vector<Quantity>* out) const;
  Quantity Slack(int n, int r) const {
    return std::max<Quantity>(0, node(n).p[r] - nodes_[n].u[r]);
  }
  bool Borrowing(int n, int r) const { return nodes_[n].u[r] > node(n).g[r]; }
  bool WithinGuarantee(int n, ResourceMask rs) const;
  // Sharing domain D(t) for contested resources `rs`.
  int Domain(int leaf, ResourceMask rs) const;
  // Does d fit now: d_r <= max(0, available(t)) and <= max(0, free(k)) on
  // every requested r; with `within_guarantee`, also u(t) + d_r <= g(t).
  bool Fits(const Job& j, bool within_guarantee) const;

  // ---- pending queues
  // Leaf teams with at least one queued job, in node order, so a cycle costs
  // nothing for the teams that wait for nothing.
  const std::set<int>& teams_with_pending() const { return teams_with_pending_; }
  void Enqueue(int j);
  void Dequeue(int j);
  void AddRunning(int j);
  void RemoveRunning(int j);

  // ---- timers (grace deadlines, backoff expiries); lazily invalidated.
  void AddTimer(Time at, int job) { timers_.push(Timer{at, jobs_[job].id, job, jobs_[job].gen}); }
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>>& timers() { return timers_; }
  const std::priority_queue<Timer, std::vector<Timer>, std::greater<>>& timers() const { return timers_; }

  // A counter bumped whenever anything that can change an admission outcome
  // changes (usage, config, claims); a queued job that failed at stamp s
  // need not be retried while the stamp is still s.
  uint64_t change_stamp() const { return change_stamp_; }
  void Changed() { ++change_stamp_; }

  Time now() const { return now_; }
  void set_now(Time t) { now_ = t; }

  std::vector<Event>& out() { return out_; }

  // Replaces the config (set_quota, set_capacity); remaps jobs' resource
  // vectors by name and recomputes usage.
  void Reconfigure(CompiledConfig config, v1::Config source);

  NamedQuantities Named(const std::vector<Quantity>& v, ResourceMask mask) const;

 private:
  CompiledConfig config_;
  v1::Config source_;
  std::vector<NodeState> nodes_;
  std::vector<std::vector<Quantity>> cluster_used_;
  std::deque<Job> jobs_;  // deque: QueueKey points at ids, so slots never move.
  std::vector<int> free_slots_;
  absl::flat_hash_map<std::string, int> job_index_;
  std::set<int> teams_with_pending_;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers_;
  uint64_t job_gen_ = 0;
  uint64_t change_stamp_ = 1;
  Time now_ = 0;
  std::vector<Event> out_;
};

}  // namespace tidegate::core

#endif  // TIDEGATE_BROKER_CORE_STATE_H_
