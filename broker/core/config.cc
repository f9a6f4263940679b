#include "broker/core/config.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "broker/core/tide.h"
#include "broker/core/names.h"

namespace tidegate::core {
namespace {

absl::Status Invalid(const std::string& what) { return absl::InvalidArgumentError(what); }

// Exact weight from the shortest decimal that round-trips the double, so
// `weight: 1.01` is 101/100, not the nearest binary fraction.
absl::StatusOr<Fraction> ExactWeight(double w, const std::string& team) {
  if (!std::isfinite(w) || w < 0) {
    return Invalid(absl::StrCat("team '", team, "': weight ", w, " must be a non-negative number"));
  }
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, w, std::chars_format::fixed);
  if (ec != std::errc()) return Invalid(absl::StrCat("team '", team, "': weight ", w, " is out of range"));
  std::string text(buf, end - buf);
  u128 num = 0, den = 1;
  bool after_point = false;
  int digits = 0;
  for (char c : text) {
    if (c == '.') { after_point = true; continue; }
    if (++digits > 36) return Invalid(absl::StrCat("team '", team, "': weight ", w, " has too many digits"));
    num = num * 10 + static_cast<u128>(c - '0');
    if (after_point) den *= 10;
  }
  return Fraction{num, den};
}

int ResourceId(CompiledConfig& c, const std::string& name) {
  auto [it, inserted] = c.resource_index.try_emplace(name, c.num_resources());
  if (inserted) {
    c.resources.push_back(name);
    c.is_gpu.push_back(IsGpuResource(name));
  }
  return it->second;
}

absl::Status CheckQuantity(Quantity q, const std::string& what) {
  if (q < 0) return Invalid(absl::StrCat(what, ": ", q, " must be >= 0"));
  return absl::OkStatus();
}

TeamPolicy CompilePolicy(const v1::Team& t) {
  TeamPolicy p;
  const auto& pre = t.preemption();
  if (pre.within_team() != v1::WITHIN_TEAM_UNSPECIFIED) p.within_team = pre.within_team();
  if (pre.reclaim() != v1::RECLAIM_UNSPECIFIED) p.reclaim = pre.reclaim();
  const auto& bwc = pre.borrow_within_cohort();
  if (bwc.policy() != v1::BORROW_WITHIN_COHORT_POLICY_UNSPECIFIED) p.borrow_within_cohort = bwc.policy();
  if (bwc.has_max_priority()) p.max_priority = bwc.max_priority();
  p.strict_fifo = t.queueing() == v1::QUEUEING_STRICT_FIFO;
  return p;
}

absl::Status CompilePolicyOptions(const v1::Policy& in, PolicyOptions* out) {
  out->fair_sharing = in.fair_sharing();
  out->least_lost_work = in.victim_order() != v1::VICTIM_ORDER_NEWEST_FIRST;
  auto non_negative = [](std::optional<int64_t> v, int64_t dflt, const std::string& field,
                         int64_t* dst) -> absl::Status {
    if (v && *v < 0) return Invalid(absl::StrCat("policy.", field, ": ", *v, " must be >= 0"));
    *dst = v.value_or(dflt);
    return absl::OkStatus();
  };
  auto opt = [](bool has, int64_t v) { return has ? std::optional<int64_t>(v) : std::nullopt; };
  if (auto s = non_negative(opt(in.has_default_grace_s(), in.default_grace_s()), 30, "default_grace_s", &out->default_grace_s); !s.ok()) return s;
  if (auto s = non_negative(opt(in.has_tide_lead_s(), in.tide_lead_s()), 600, "tide_lead_s", &out->tide_lead_s); !s.ok()) return s;
  if (auto s = non_negative(opt(in.has_tick_s(), in.tick_s()), 10, "tick_s", &out->tick_s); !s.ok()) return s;
  if (auto s = non_negative(opt(in.has_requeue_backoff_s(), in.requeue_backoff_s()), 60, "requeue_backoff_s", &out->requeue_backoff_s); !s.ok()) return s;
  if (auto s = non_negative(opt(in.has_resize_timeout_s(), in.resize_timeout_s()), 60, "resize_timeout_s", &out->resize_timeout_s); !s.ok()) return s;
  if (out->resize_timeout_s == 0) return Invalid("policy.resize_timeout_s: 0 must be > 0 (a grow needs time to be acked)");
  if (auto s = non_negative(opt(in.has_sim_ack_delay_s(), in.sim_ack_delay_s()), 0, "sim_ack_delay_s", &out->sim_ack_delay_s); !s.ok()) return s;
  if (auto s = non_negative(opt(in.has_ended_job_retention_s(), in.ended_job_retention_s()), kDefaultEndedJobRetentionS,
                            "ended_job_retention_s", &out->ended_job_retention_s);
      !s.ok()) {
    return s;
  }
  if (!CheckedMul(out->ended_job_retention_s, kMillisPerSecond)) {
    return Invalid(absl::StrCat("policy.ended_job_retention_s: ", out->ended_job_retention_s, " is out of range"));
  }
  const auto& st = in.fair_sharing_strategies();
  using v1::FAIR_SHARING_STRATEGY_LESS_THAN_INITIAL_SHARE;
  using v1::FAIR_SHARING_STRATEGY_LESS_THAN_OR_EQUAL_TO_FINAL_SHARE;
  if (st.empty() || (st.size() == 2 && st[0] == FAIR_SHARING_STRATEGY_LESS_THAN_OR_EQUAL_TO_FINAL_SHARE &&
                     st[1] == FAIR_SHARING_STRATEGY_LESS_THAN_INITIAL_SHARE)) {
    out->strategy_lte_final = out->strategy_lt_initial = true;
  } else if (st.size() == 1 && st[0] == FAIR_SHARING_STRATEGY_LESS_THAN_OR_EQUAL_TO_FINAL_SHARE) {
    out->strategy_lte_final = true;
    out->strategy_lt_initial = false;
  } else if (st.size() == 1 && st[0] == FAIR_SHARING_STRATEGY_LESS_THAN_INITIAL_SHARE) {
    out->strategy_lte_final = false;
    out->strategy_lt_initial = true;
  } else {
    std::vector<std::string> names;
    for (int s : st) names.push_back(v1::FairSharingStrategy_Name(static_cast<v1::FairSharingStrategy>(s)));
    return Invalid(absl::StrCat(
        "policy.fair_sharing_strategies: [", absl::StrJoin(names, ", "),
        "] is not one of [less_than_or_equal_to_final_share, less_than_initial_share], "
        "[less_than_or_equal_to_final_share], [less_than_initial_share]"));
  }
  return absl::OkStatus();
}

// Bounds on the config's size, checked before anything is built from it.
absl::Status CheckSizes(const v1::Config& config) {
  if (config.teams_size() > kMaxTeams) {
    return Invalid(absl::StrCat("teams: ", config.teams_size(), " teams; at most ", kMaxTeams, " are supported"));
  }
  if (config.clusters_size() > kMaxClusters) {
    return Invalid(
        absl::StrCat("clusters: ", config.clusters_size(), " clusters; at most ", kMaxClusters, " are supported"));
  }
  for (const auto& t : config.teams()) {
    if (t.tide_size() > kMaxTideRulesPerTeam) {
      return Invalid(absl::StrCat("team '", t.name(), "': tide: ", t.tide_size(), " rules; at most ",
                                  kMaxTideRulesPerTeam, " are supported"));
    }
  }
  return absl::OkStatus();
}

// The tree depth-first in post-order, so children come before parents.
std::vector<int> PostOrder(const CompiledConfig& c) {
  std::vector<int> order;
  std::vector<std::pair<int, size_t>> stack{{kRootNode, 0}};
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < c.nodes[node].children.size()) {
      int child = c.nodes[node].children[next++];
      stack.push_back({child, 0});
    } else {
      order.push_back(node);
      stack.pop_back();
    }
  }
  return order;
}

// The quota entries of the config's i-th team (`quota`: its entries, or
// those in force under tide rules), per resource id; nullptr where none.
absl::StatusOr<std::vector<const v1::ResourceQuota*>> QuotaRow(const CompiledConfig& c, const v1::Config& config, int i,
                                                              const QuotaEntries& quota) {
  std::vector<const v1::ResourceQuota*> row(c.num_resources(), nullptr);
  for (const auto& [name, q] : quota) {
    // The field's name is built only for an error: a tide boundary
    // compiles a team's entries again.
    auto check = [&](const char* field, Quantity v) {
      return v < 0 ? CheckQuantity(v, absl::StrCat("team '", config.teams(i).name(), "' quota.", name, field))
                   : absl::OkStatus();
    };
    if (q.has_guaranteed()) if (auto s = check(".guaranteed", q.guaranteed()); !s.ok()) return s;
    if (q.has_borrow_limit()) if (auto s = check(".borrow_limit", q.borrow_limit()); !s.ok()) return s;
    if (q.has_lend_limit()) if (auto s = check(".lend_limit", q.lend_limit()); !s.ok()) return s;
    row[c.resource_index.at(name)] = &q;
  }
  return row;
}

// One node's g, b, l, p and share_resource from its own entries and its
// children's (already derived). The fleet root takes only share_resource
// here (DeriveRoot does the rest).
absl::Status DeriveNodeQuota(CompiledConfig& c, int id, const std::vector<const v1::ResourceQuota*>& entries) {
  const int R = c.num_resources();
  NodeConfig& n = c.nodes[id];
  n.guaranteed.assign(R, 0);
  n.borrow_limit.assign(R, kInfinite);
  n.lend_limit.assign(R, kInfinite);
  n.private_part.assign(R, 0);
  n.share_resource.assign(R, false);
  for (int r = 0; r < R; ++r) {
    Quantity child_sum = 0;
    for (int ch : n.children) {
      auto sum = CheckedAdd(child_sum, c.nodes[ch].guaranteed[r]);
      if (!sum) return Invalid(absl::StrCat("team '", n.name, "': guarantees of its children overflow int64 for ", c.resources[r]));
      child_sum = *sum;
      if (c.nodes[ch].share_resource[r]) n.share_resource[r] = true;
    }
    if (id == kRootNode) continue;  // DeriveRoot
    const v1::ResourceQuota* e = entries[r];
    if (e) n.share_resource[r] = true;
    if (e && e->has_guaranteed()) {
      n.guaranteed[r] = e->guaranteed();
      if (!n.leaf && child_sum > n.guaranteed[r]) {
        return Invalid(absl::StrCat("team '", n.name, "': children's guarantees for ", c.resources[r], " (",
                                    child_sum, ") exceed its own guaranteed ", n.guaranteed[r]));
      }
    } else {
      n.guaranteed[r] = n.leaf ? 0 : child_sum;
    }
    if (e && e->has_borrow_limit()) n.borrow_limit[r] = e->borrow_limit();
    if (e && e->has_lend_limit()) {
      n.lend_limit[r] = e->lend_limit();
      n.private_part[r] = std::max<Quantity>(0, n.guaranteed[r] - n.lend_limit[r]);
    }
  }
  return absl::OkStatus();
}

// The fleet root: g = total capacity, b = 0; the warnings (all about the
// top-level guarantees).
absl::Status DeriveRoot(CompiledConfig& c) {
  NodeConfig& root = c.nodes[kRootNode];
  c.warnings.clear();
  for (int r = 0; r < c.num_resources(); ++r) {
    Quantity total = 0;
    for (const auto& cl : c.clusters) {
      auto sum = CheckedAdd(total, cl.capacity[r]);
      if (!sum) return Invalid(absl::StrCat("clusters: total capacity of ", c.resources[r], " overflows int64"));
      total = *sum;
    }
    root.guaranteed[r] = total;
    root.borrow_limit[r] = 0;
    Quantity top = 0;
    for (int ch : root.children) top = SatAdd(top, c.nodes[ch].guaranteed[r]);
    if (top > total) {
      c.warnings.push_back(absl::StrCat("top-level guarantees for ", c.resources[r], " (", top,
                                        ") exceed total capacity ", total,
                                        ": guarantees hold only as far as capacity goes"));
    }
  }
  return absl::OkStatus();
}

// potential and lendable of every node (`order`: the tree in post-order).
void DerivePotentials(CompiledConfig& c, const std::vector<int>& order) {
  const size_t R = static_cast<size_t>(c.num_resources());
  // u0(n): usage with every leaf at 0, where inner nodes still count their
  // children's private parts. potential(n) is available(n) in that state.
  std::vector<Quantity> u0(c.nodes.size() * R, 0);
  for (int id : order) {
    for (int ch : c.nodes[id].children) {
      for (size_t r = 0; r < R; ++r) u0[id * R + r] = SatAdd(u0[id * R + r], std::max(u0[ch * R + r], c.nodes[ch].private_part[r]));
    }
  }
  // Top-down (the reversed post-order puts a parent before its children).
  std::vector<Quantity> pool_p(c.nodes.size() * R, 0);  // P(A)
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int id = *it;
    NodeConfig& n = c.nodes[id];
    n.potential.assign(R, 0);
    n.lendable.assign(R, 0);
    for (size_t r = 0; r < R; ++r) {
      Quantity sum_child_p = 0;
      for (int ch : n.children) sum_child_p = SatAdd(sum_child_p, c.nodes[ch].private_part[r]);
      const Quantity q = n.guaranteed[r] - sum_child_p;  // Q(A)
      const Quantity u = u0[id * R + r];
      if (id == kRootNode) {
        n.potential[r] = std::max<Quantity>(0, n.guaranteed[r] - u);
        pool_p[id * R + r] = q;
        continue;
      }
      const NodeConfig& parent = c.nodes[n.parent];
      const Quantity slack0 = std::max<Quantity>(0, n.private_part[r] - u);
      n.potential[r] = std::min(SatSub(SatAdd(n.guaranteed[r], n.borrow_limit[r]), u), SatAdd(slack0, parent.potential[r]));
      n.lendable[r] = pool_p[n.parent * R + r];
      const Quantity l_pool = n.lend_limit[r] != kInfinite ? std::max<Quantity>(0, n.private_part[r] - sum_child_p) : 0;  // L(A)
      pool_p[id * R + r] = std::min(SatAdd(q, n.borrow_limit[r]), SatAdd(l_pool, pool_p[n.parent * R + r]));
    }
  }
}

}  // namespace

bool IsGpuResource(const std::string& name) {
  std::string_view base = name;
  if (auto slash = base.rfind('/'); slash != std::string_view::npos) base = base.substr(slash + 1);
  return base != "cpu" && base != "memory" && base != "ephemeral-storage" && base != "pods";
}

// `resolved`: the tide calendar to reuse, or nullptr to resolve it here.
// `quotas`: when given, quotas[i] (where set) replaces the i-th team's quota
// entries, as if the config said so; nothing else of the config is read
// differently.
// Long (about 130 lines) on purpose: one pass over the config in the order
// docs/policy.md §1 derives its quantities (resources, clusters, the tree, quota
// entries, sums, then potential and lendable), each step reading what the
// previous ones built; the steps are marked by comments. The quota steps are
// functions of their own, which PatchQuota runs again for a few teams.
static absl::StatusOr<CompiledConfig> CompileConfigWith(const v1::Config& config, const TideCalendar* resolved,
                                                        const std::vector<std::optional<QuotaEntries>>* quotas) {
  auto quota_of = [&](int i) -> const QuotaEntries& {
    return quotas && (*quotas)[i] ? *(*quotas)[i] : config.teams(i).quota();
  };
  CompiledConfig c;
  if (config.clusters().empty()) return Invalid("clusters: at least one cluster is required");
  if (auto s = CheckSizes(config); !s.ok()) return s;

  // Resources in order of first appearance: cluster capacities, then quotas.
  for (const auto& cl : config.clusters()) {
    std::vector<std::string> names;
    for (const auto& [name, q] : cl.capacity()) names.push_back(name);
    std::sort(names.begin(), names.end());  // proto maps are unordered.
    for (const auto& n : names) ResourceId(c, n);
  }
  if (resolved) {
    c.tide = *resolved;
  } else {
    absl::StatusOr<TideCalendar> tide = ResolveTide(config);
    if (!tide.ok()) return tide.status();
    c.tide = *std::move(tide);
  }
  for (int i = 0; i < config.teams_size(); ++i) {
    const v1::Team& t = config.teams(i);
    std::vector<std::string> names;
    // Names already indexed are left out: ResourceId would skip them, and
    // the new ones keep their sorted order.
    for (const auto& [name, q] : quota_of(i)) {
      if (!c.resource_index.contains(name)) names.push_back(name);
    }
    // Tide rules may name resources the base quota does not; every effective
    // config must index the same resources.
    for (const auto& rule : t.tide()) {
      for (const auto& [name, q] : rule.quota()) {
        if (!c.resource_index.contains(name) && !quota_of(i).contains(name)) names.push_back(name);
      }
    }
    std::sort(names.begin(), names.end());
    for (const auto& n : names) ResourceId(c, n);
  }
  if (c.num_resources() > kMaxResources) {
    return Invalid(absl::StrCat("config names ", c.num_resources(), " resources; at most ", kMaxResources, " are supported"));
  }
  const int R = c.num_resources();

  // Clusters.
  for (const auto& cl : config.clusters()) {
    if (cl.name().empty()) return Invalid("clusters: a cluster has no name");
    if (auto s = ValidateName("clusters.name", cl.name()); !s.ok()) return s;
    if (!c.cluster_index.try_emplace(cl.name(), static_cast<int>(c.clusters.size())).second) {
      return Invalid(absl::StrCat("clusters: duplicate cluster name '", cl.name(), "'"));
    }
    ClusterConfig cc{cl.name(), cl.kind(), std::vector<Quantity>(R, 0)};
    for (const auto& [name, q] : cl.capacity()) {
      if (auto s = CheckQuantity(q, absl::StrCat("cluster '", cl.name(), "' capacity.", name)); !s.ok()) return s;
      cc.capacity[c.resource_index[name]] = q;
    }
    c.clusters.push_back(std::move(cc));
  }

  // Nodes: the fleet root, then teams in config order.
  c.nodes.emplace_back();
  for (const auto& t : config.teams()) {
    if (t.name().empty()) return Invalid("teams: a team has no name");
    if (auto s = ValidateName("teams.name", t.name()); !s.ok()) return s;
    if (!c.node_index.try_emplace(t.name(), static_cast<int>(c.nodes.size())).second) {
      return Invalid(absl::StrCat("teams: duplicate team name '", t.name(), "'"));
    }
    NodeConfig n;
    n.name = t.name();
    n.policy = CompilePolicy(t);
    double w = t.has_weight() ? t.weight() : 1.0;
    auto weight = ExactWeight(w, t.name());
    if (!weight.ok()) return weight.status();
    n.weight = *weight;
    n.weight_value = w;
    c.nodes.push_back(std::move(n));
  }
  // Parents, and no cycles.
  for (int i = 0; i < config.teams_size(); ++i) {
    const auto& t = config.teams(i);
    NodeConfig& n = c.nodes[i + 1];
    if (t.parent().empty()) {
      n.parent = kRootNode;
    } else {
      auto it = c.node_index.find(t.parent());
      if (it == c.node_index.end()) {
        return Invalid(absl::StrCat("team '", t.name(), "': parent '", t.parent(), "' is not a team"));
      }
      n.parent = it->second;
    }
  }
  for (size_t i = 1; i < c.nodes.size(); ++i) {
    // Walk up; more steps than nodes means a cycle.
    int steps = 0;
    for (int a = static_cast<int>(i); a != kRootNode; a = c.nodes[a].parent) {
      if (++steps > static_cast<int>(c.nodes.size())) {
        return Invalid(absl::StrCat("team '", c.nodes[i].name, "': the parent chain forms a cycle"));
      }
    }
    if (steps > kMaxTeamDepth) {
      return Invalid(absl::StrCat("team '", c.nodes[i].name, "': at depth ", steps, " of the tree; at most ",
                                  kMaxTeamDepth, " levels are supported"));
    }
  }
  for (size_t i = 1; i < c.nodes.size(); ++i) {
    c.nodes[c.nodes[i].parent].children.push_back(static_cast<int>(i));
  }
  for (auto& n : c.nodes) n.leaf = n.children.empty();
  c.nodes[kRootNode].leaf = false;

  // Per-resource quota entries.
  std::vector<std::vector<const v1::ResourceQuota*>> entries(c.nodes.size());
  entries[kRootNode].assign(R, nullptr);
  for (int i = 0; i < config.teams_size(); ++i) {
    auto row = QuotaRow(c, config, i, quota_of(i));
    if (!row.ok()) return row.status();
    entries[i + 1] = *std::move(row);
  }

  const std::vector<int> order = PostOrder(c);
  for (int id : order) {
    if (auto s = DeriveNodeQuota(c, id, entries[id]); !s.ok()) return s;
  }
  if (auto s = DeriveRoot(c); !s.ok()) return s;
  // Paths, top-down (the reversed post-order puts a parent before its children).
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    NodeConfig& n = c.nodes[*it];
    n.path = *it == kRootNode ? std::vector<int>{} : c.nodes[n.parent].path;
    n.path.push_back(*it);
  }
  DerivePotentials(c, order);
  if (auto s = CompilePolicyOptions(config.policy(), &c.policy); !s.ok()) return s;
  return c;
}

absl::StatusOr<CompiledConfig> CompileConfig(const v1::Config& config) {
  return CompileConfigWith(config, nullptr, nullptr);
}

absl::StatusOr<CompiledConfig> CompileConfig(const v1::Config& config, const TideCalendar& tide) {
  return CompileConfigWith(config, &tide, nullptr);
}

absl::StatusOr<CompiledConfig> CompileConfig(const v1::Config& config, const TideCalendar& tide,
                                             const std::vector<std::optional<QuotaEntries>>& quotas) {
  return CompileConfigWith(config, &tide, &quotas);
}

absl::StatusOr<CompiledConfig> PatchQuota(const CompiledConfig& from, const v1::Config& config,
                                         const std::vector<std::optional<QuotaEntries>>& quotas,
                                         const std::vector<int>& changed) {
  CompiledConfig c = from;
  // The changed teams and their ancestors, deepest first: a node's children
  // are derived before it, as in the compile's post-order.
  std::vector<int> redo;
  std::vector<bool> marked(c.nodes.size(), false);
  for (const int i : changed) {
    for (int id = i + 1; id != kRootNode && !marked[id]; id = c.nodes[id].parent) {
      marked[id] = true;
      redo.push_back(id);
    }
  }
  std::sort(redo.begin(), redo.end(), [&](int a, int b) {
    const size_t da = c.nodes[a].path.size(), db = c.nodes[b].path.size();
    return da != db ? da > db : a < b;
  });
  for (const int id : redo) {
    const int i = id - 1;
    auto row = QuotaRow(c, config, i, quotas[i] ? *quotas[i] : config.teams(i).quota());
    if (!row.ok()) return row.status();
    if (auto s = DeriveNodeQuota(c, id, *row); !s.ok()) return s;
  }
  if (auto s = DeriveNodeQuota(c, kRootNode, {}); !s.ok()) return s;
  if (auto s = DeriveRoot(c); !s.ok()) return s;
  DerivePotentials(c, PostOrder(c));
  return c;
}

}  // namespace tidegate::core
