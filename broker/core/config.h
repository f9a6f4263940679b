// The compiled configuration: the quota tree, clusters and policy options with
// every derived quantity of docs/policy.md §1 and §5 precomputed, indexed densely
// (resources, clusters and nodes by small integers) for the hot path.
#ifndef TIDEGATE_BROKER_CORE_CONFIG_H_
#define TIDEGATE_BROKER_CORE_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "broker/core/fraction.h"
#include "broker/core/tide.h"
#include "broker/core/types.h"
#include "tidegate/v1/config.pb.h"

namespace tidegate::core {

inline constexpr int kRootNode = 0;  // the implicit fleet root.
inline constexpr int kMaxResources = 64;
// Bounds on the size of a config (docs/limits.md): generous for any real
// fleet, small enough that a hostile or mistaken config cannot make every
// decision (which walks a team's path) or the compile itself slow.
inline constexpr int kMaxTeams = 10000;
inline constexpr int kMaxTeamDepth = 16;  // top-level teams are at depth 1.
inline constexpr int kMaxTideRulesPerTeam = 64;
inline constexpr int kMaxClusters = 1000;
inline constexpr int64_t kDefaultEndedJobRetentionS = 7 * 24 * 3600;

struct ClusterConfig {
  std::string name;
  v1::ClusterKind kind = v1::CLUSTER_KIND_UNSPECIFIED;
  std::vector<Quantity> capacity;  // per resource.
};

struct TeamPolicy {
  v1::WithinTeam within_team = v1::WITHIN_TEAM_NEVER;
  v1::Reclaim reclaim = v1::RECLAIM_ANY;
  v1::BorrowWithinCohortPolicy borrow_within_cohort = v1::BORROW_WITHIN_COHORT_POLICY_NEVER;
  std::optional<int32_t> max_priority;  // borrow_within_cohort.max_priority
  bool strict_fifo = false;
};

// One node of the quota tree. Per-resource vectors are indexed by resource id.
struct NodeConfig {
  std::string name;         // "" for the fleet root.
  int parent = -1;          // -1 for the root; kRootNode for top-level teams.
  std::vector<int> children;  // config order.
  std::vector<int> path;    // root ... this node.
  bool leaf = true;
  TeamPolicy policy;
  Fraction weight{1, 1};    // exact; may be 0.
  double weight_value = 1;  // for display.

  // docs/policy.md §1 names these g, b, l and p.
  std::vector<Quantity> guaranteed;    // g: guaranteed (subtree).
  std::vector<Quantity> borrow_limit;  // b: kInfinite when unset.
  std::vector<Quantity> lend_limit;    // l: kInfinite when unset.
  std::vector<Quantity> private_part;  // p = max(0, g - l), 0 when l unset.
  std::vector<Quantity> potential;  // available(n) with every usage 0.
  std::vector<Quantity> lendable;   // docs/policy.md §5 lendable_r(n) = P(parent(n)).
  std::vector<bool> share_resource; // n or its subtree has a quota entry for r.
};

struct PolicyOptions {
  bool fair_sharing = false;
  bool least_lost_work = true;      // victim_order; false = newest_first.
  int64_t default_grace_s = 30;
  int64_t tide_lead_s = 600;
  int64_t tick_s = 10;
  int64_t requeue_backoff_s = 60;
  int64_t resize_timeout_s = 60;  // a grow not acked by then is withdrawn.
  int64_t sim_ack_delay_s = 0;    // simulator: frameworks ack resizes after this.
  // Ended and rejected jobs stay known this long after they end.
  int64_t ended_job_retention_s = kDefaultEndedJobRetentionS;
  // fair_sharing_strategies: the first is always
  // less_than_or_equal_to_final_share unless only less_than_initial_share is
  // given; a second one is always less_than_initial_share.
  bool strategy_lte_final = true;
  bool strategy_lt_initial = true;
};

struct CompiledConfig {
  std::vector<std::string> resources;
  absl::flat_hash_map<std::string, int> resource_index;
  std::vector<bool> is_gpu;  // counts as a GPU in lost-work and summaries.
  std::vector<ClusterConfig> clusters;
  absl::flat_hash_map<std::string, int> cluster_index;
  std::vector<NodeConfig> nodes;  // [kRootNode] is the fleet root, then teams in config order.
  absl::flat_hash_map<std::string, int> node_index;
  PolicyOptions policy;
  std::vector<std::string> warnings;  // e.g. guarantees above capacity.
  TideCalendar tide;  // the config's tide rules, resolved (tide.h).

  int num_resources() const { return static_cast<int>(resources.size()); }
};

// Validates (docs/policy.md §1) and compiles. INVALID_ARGUMENT naming the team,
// cluster or field and the value. Tide rules are validated and resolved
// (time zones loaded) into `tide`, not applied: compile
// EffectiveConfig(config, tide, t) (tide.h) for the quota in force at t.
absl::StatusOr<CompiledConfig> CompileConfig(const v1::Config& config);

// The same for a config whose tide rules are those `tide` was resolved from
// (an effective config, or a quota or capacity change): the calendar is
// reused, so nothing is loaded.
absl::StatusOr<CompiledConfig> CompileConfig(const v1::Config& config, const TideCalendar& tide);

// The same as CompileConfig(config with the i-th team's quota entries
// replaced by quotas[i] where set, tide): the quota in force under a set of
// tide rules (ActiveQuotas, tide.h) without copying the config.
absl::StatusOr<CompiledConfig> CompileConfig(const v1::Config& config, const TideCalendar& tide,
                                             const std::vector<std::optional<QuotaEntries>>& quotas);

// CompileConfig(config, from.tide, quotas), derived from `from`: a compile of
// the same config under quota entries that differ from `quotas` only for the
// teams (config indices) in `changed`. Only those teams and their ancestors
// are derived again, then every node's potential and lendable (they depend
// on the tree above); names, indexes and clusters are copied. The same
// result as the full compile (tide_test compares them over a calendar's
// boundaries). An error when the patched quota is invalid; the full compile
// then names the check that fails first.
absl::StatusOr<CompiledConfig> PatchQuota(const CompiledConfig& from, const v1::Config& config,
                                         const std::vector<std::optional<QuotaEntries>>& quotas,
                                         const std::vector<int>& changed);

// A GPU-like resource: any whose name after the last '/' is not cpu, memory,
// ephemeral-storage or pods (docs/decisions.md).
bool IsGpuResource(const std::string& name);

}  // namespace tidegate::core

#endif  // TIDEGATE_BROKER_CORE_CONFIG_H_
