// The broker's dynamic state: jobs, per-node usage u(n) (docs/policy.md §1), per
// cluster usage, the pending queues and the timers. Plus the tree arithmetic
// every rule is written in: available, potential, slack, within_guarantee.
//
// Threading: not thread-safe; owned by Broker.
#ifndef TIDEGATE_BROKER_CORE_STATE_H_
#define TIDEGATE_BROKER_CORE_STATE_H_

#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "broker/core/job_index.h"
#include "broker/core/coming_usage.h"
#include "broker/core/config.h"
#include "broker/core/ended_jobs.h"
#include "broker/core/events.h"
#include "broker/core/types.h"
#include "tidegate/v1/config.pb.h"

namespace tidegate::core {

using ResourceMask = uint64_t;  // bit r set = the job requests resource r.

enum class Phase : uint8_t { kQueued, kAdmitted, kDraining };

// One job. Small fields sit beside each other so that no padding is kept
// per job (464 bytes with libstdc++ on x86-64; a hole costs every job).
struct Job {
  std::string id;
  // The normalized spec (defaults filled), as SpecBytes: a resubmission is
  // compared with it byte for byte (spec_bytes.h).
  std::string spec_bytes;
  int team = -1;                // leaf node.
  int cluster = -1;
  int64_t replicas = 0;          // replicas holding (or asking for) capacity.
  std::vector<Quantity> per_replica;
  std::vector<Quantity> demand;  // replicas x per_replica, per resource.
  ResourceMask requested = 0;
  Quantity gpus = 0;            // lost-work weight: GPU demand, or the largest resource.
  int32_t priority = 0;
  bool requeue = true;
  Time created_at = 0;          // queue order.
  Time grace_ms = 0;
  Time checkpoint_interval_ms = 0;
  Time last_checkpoint = -1;

  Phase phase = Phase::kQueued;
  bool borrowing = false;
  // Per resource: its part above its team's guarantee at its latest admit or
  // resize; empty when nothing was borrowed (so most jobs allocate nothing).
  std::vector<Quantity> borrowed;
  int running_slot = -1;        // index in its team's running list.
  Time admitted_at = -1;
  Time last_admitted_at = -1;   // the latest admission, kept when requeued.

  // Draining: chosen as a victim for job `drain_for` (-1: adopted already
  // draining and not yet chosen), leaving at drain_deadline.
  Time drain_deadline = -1;
  int drain_for = -1;

  // Queued, waiting for the victims it chose (docs/policy.md §4).
  int victims_left = 0;
  std::vector<int> victims;      // victims still draining for it.
  struct Hold {
    int leaf;
    int cluster;
    std::vector<Quantity> amount;
  };
  std::vector<Hold> holds;      // capacity its departed victims left, held for it.
  Time requeued_at = -1;        // backoff: no victims before requeued_at + backoff.
  std::string preempted_by;     // the job it was last evicted for ("" if none), for its reason.
  uint64_t parked_stamp = 0;    // see State::change_stamp.
  // The instant its victim search last found none. With least_lost_work the
  // candidate order moves with time, so the search is tried again at a later
  // instant (a tick) even when nothing else changed (State::Parked).
  Time search_failed_at = -1;
  std::string reason;           // why it waits.

  // Elastic (elastic_max > 0): admitted with elastic_min replicas as a gang,
  // then grows and shrinks one replica at a time (docs/design.md §5).
  int64_t elastic_min = 0;
  int64_t elastic_max = 0;
  // The resize request not yet acknowledged: epoch, replicas before it and
  // its target. A grow reserves its target at once (replicas == resize_to);
  // a shrink keeps resize_from until the ack or the deadline.
  int64_t epoch = 0;
  int64_t resize_from = -1;     // -1: nothing pending.
  int64_t resize_to = 0;
  Time resize_deadline = -1;
  std::string resize_reason;
  // A grow that was not acked, or acked short, is not retried before this
  // (the framework could not form more replicas just now).
  Time grow_backoff_until = -1;
  int shrink_for = -1;          // the waiting job a pending shrink frees capacity for.
  bool growable = false;        // in its team's growable set (State::UpdateGrowable).

  bool exceeds_max = false;     // parked until the config changes.
  bool announced = false;       // a queue/reclaim/admit record was written for it.
  uint64_t gen = 0;             // slot generation, for timers.

  bool elastic() const { return elastic_max > 0; }
  bool resize_pending() const { return resize_from >= 0; }
  bool shrink_pending() const { return resize_from >= 0 && resize_to < resize_from; }
};

// A pending job's place in queue order: priority high first, then
// created_at, then id (docs/policy.md §4).
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
  std::vector<Quantity> usage;     // u(n) (docs/policy.md §1).
  std::vector<int> running;        // leaf: jobs holding capacity (admitted, draining).
  std::set<QueueKey> pending;      // leaf: queued jobs in queue order.
  std::vector<Quantity> queued;    // leaf: demand of its queued jobs.
  // leaf: per resource, the demands of its queued jobs, so the cycle can skip
  // a team none of whose jobs can fit in O(R) (docs/policy.md §4 cost rule).
  std::vector<std::multiset<Quantity>> pending_demand;
  std::set<QueueKey> growable;     // leaf: elastic jobs that may grow, queue order.
  // leaf: the last cycle found that none of its queued jobs could fit or
  // choose victims and tried none; their reasons are computed when read
  // (ReasonNow, reasons.h).
  bool stuck = false;
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
  int num_resources() const { return config_.num_resources(); }
  const NodeConfig& node(int n) const { return config_.nodes[n]; }
  NodeState& node_state(int n) { return nodes_[n]; }
  const NodeState& node_state(int n) const { return nodes_[n]; }
  Job& job(int j) { return jobs_[j]; }
  const Job& job(int j) const { return jobs_[j]; }

  // ---- jobs
  int FindJob(std::string_view id) const;  // -1 when unknown.
  int NewJob(Job job);                     // takes a free slot.
  void DropJob(int j);                     // forgets an ended job.
  size_t job_count() const { return job_index_.size(); }

  // ---- ended and rejected jobs (EndedJob), by id. A live job and an ended
  // one never share an id. Bounded: the retention window, and at most
  // kMaxEndedKept ended and kMaxRejectedKept rejected ones (oldest go first).
  static constexpr size_t kMaxEndedKept = 200000;
  static constexpr size_t kMaxRejectedKept = 10000;
  const EndedJob* FindEnded(std::string_view id) const;
  void RememberEnded(std::string id, EndedJob ended);
  void ForgetEnded(const std::string& id);
  // Forgets those that ended at or before now - retention.
  void PruneEnded(Time now, Time retention_ms);
  // Every retained record, sorted by id.
  std::vector<std::pair<const std::string*, const EndedJob*>> EndedById() const { return ended_.SortedById(); }
  size_t ended_count() const { return ended_.size(); }
  // Ids whose view changed with no event naming them (a reason recomputed,
  // a retained record dropped) since ClearQuietChanges(): readers re-read them.
  const std::vector<std::string>& quiet_changes() const { return forgotten_; }
  void NoteQuietChange(const std::string& id) { forgotten_.push_back(id); }
  void ClearQuietChanges() { forgotten_.clear(); }

  // ---- what live jobs may ask in all, per resource: the sum of each job's
  // demand at its largest size. Every sum the core makes (usage, held
  // capacity, queued demand) is at most a small multiple of it plus the
  // fleet's capacity, so keeping it below kMaxSummable keeps them exact.
  static constexpr Quantity kMaxSummable = std::numeric_limits<Quantity>::max() / 4;
  Quantity known_demand(int r) const { return known_demand_[r]; }
  static std::vector<Quantity> MaxDemand(const Job& job);
  template <typename F> void ForEachJob(F f) const {
    job_index_.ForEachSlot(f);
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

  // ---- tree arithmetic (docs/policy.md §1), all O(depth x R) or better.
  // available(n) for every resource, into out (size R).
  void Available(int n, std::vector<Quantity>* out) const;
  Quantity Slack(int n, int r) const {
    return std::max<Quantity>(0, node(n).private_part[r] - nodes_[n].usage[r]);
  }
  bool Borrowing(int n, int r) const { return nodes_[n].usage[r] > node(n).guaranteed[r]; }
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
  // Sets a job's replicas, moving its usage when it holds capacity.
  void SetReplicas(int j, int64_t replicas);
  // Puts an elastic job in its team's growable set, or takes it out: in when
  // admitted, below max and with no resize pending.
  void UpdateGrowable(int j);
  const std::set<int>& teams_with_growable() const { return teams_with_growable_; }

  // ---- timers (grace deadlines, backoff expiries); lazily invalidated.
  void AddTimer(Time at, int job) { timers_.push(Timer{at, jobs_[job].id, job, jobs_[job].gen}); }
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>>& timers() { return timers_; }
  const std::priority_queue<Timer, std::vector<Timer>, std::greater<>>& timers() const { return timers_; }

  // A counter bumped whenever anything that can change an admission outcome
  // changes (usage, config, claims); a queued job that failed at stamp s
  // need not be retried while the stamp is still s.
  uint64_t change_stamp() const { return change_stamp_; }
  void Changed() { ++change_stamp_; }
  // Need a cycle not try `job` again? It failed at this stamp, and not in a
  // victim search whose order has moved with time since (docs/policy.md §3 key 5
  // makes lost work, and so the search, depend on now).
  bool Parked(const Job& job) const {
    if (job.parked_stamp != change_stamp_) return false;
    return !(config_.policy.least_lost_work && job.search_failed_at >= 0 && job.search_failed_at < now_);
  }

  Time now() const { return now_; }
  void set_now(Time t) { now_ = t; }

  // Queued jobs that chose victims and wait for them (victims_left > 0). May
  // hold stale slots (a job that ended, was admitted or reused); users check.
  std::set<int>& waiters() { return waiters_; }

  std::vector<Event>& out() { return out_; }

  // ---- tide (tide.h, docs/policy.md §6). Boundaries up to apply_cursor are in
  // force; leads of boundaries up to lead_cursor have run. A guard is the
  // compiled quota coming at a boundary whose lead ran but which is not yet
  // in force: admission and growth must fit it too.
  struct TideGuard {
    Time boundary;
    std::shared_ptr<const CompiledConfig> config;  // shared with Tide::compiled: no copy.
  };
  struct Tide {
    bool enabled = false;  // some team has rules.
    Time apply_cursor = 0;
    Time lead_cursor = 0;
    std::optional<Time> next_apply;  // the next boundary after apply_cursor.
    std::optional<Time> next_lead;   // the next boundary after lead_cursor.
    std::vector<TideGuard> guards;
    // Usage under each guard, valid while change_stamp == guard_usage_stamp.
    std::vector<ComingUsage> guard_usage;
    uint64_t guard_usage_stamp = 0;
    // Caches of what the base config and its calendar give, so a boundary
    // costs one compile, not one per question: the calendar's windows, and
    // the last few compiles of the base config under a set of active rules
    // (the quota in force is a function of that set alone). Cleared when
    // the base config changes (Reconfigure).
    TideIndex index;
    struct Compiled {
      TideActive active;
      std::shared_ptr<const absl::StatusOr<CompiledConfig>> config;
    };
    std::vector<Compiled> compiled;
  };
  // The change_stamp at which a growth pass last found nothing to grow.
  uint64_t grow_idle_stamp = 0;

  Tide& tide() { return tide_; }
  const Tide& tide() const { return tide_; }

  // Replaces the config (set_quota, set_capacity); remaps jobs' resource
  // vectors by name and recomputes usage.
  void Reconfigure(CompiledConfig config, v1::Config source);
  // The same for a new quota of the same base config (a tide boundary): the
  // source and the tide caches stay.
  void ReconfigureQuota(CompiledConfig config);
  // The same when `config` differs from the one in force only in its quota
  // figures (same resources, teams and clusters in the same order: a tide
  // boundary), without copying names and indexes or remapping every job.
  void ReplaceQuota(const CompiledConfig& config);

  NamedQuantities Named(const std::vector<Quantity>& v, ResourceMask mask) const;
  uint64_t quota_generation() const { return quota_generation_; }

 private:
  CompiledConfig config_;
  v1::Config source_;
  std::vector<NodeState> nodes_;
  std::vector<std::vector<Quantity>> cluster_used_;
  EndedJobs ended_{kMaxEndedKept, kMaxRejectedKept};
  std::vector<std::string> forgotten_;
  std::vector<Quantity> known_demand_;
  std::deque<Job> jobs_;  // deque: QueueKey points at ids, so slots never move.
  std::vector<int> free_slots_;
  JobIndex job_index_;
  std::set<int> teams_with_pending_;
  std::set<int> teams_with_growable_;
  std::set<int> waiters_;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers_;
  uint64_t job_gen_ = 0;
  uint64_t change_stamp_ = 1;
  uint64_t quota_generation_ = 0;  // bumped by Reconfigure.
  Time now_ = 0;
  std::vector<Event> out_;
  Tide tide_;
};

}  // namespace tidegate::core

#endif  // TIDEGATE_BROKER_CORE_STATE_H_
