// The tide in the core (POLICY.md §6): at `tide_lead_s` before a boundary,
// free what the coming quota cannot hold and guard admission against it;
// at the boundary, put the new quota in force.
#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "broker/core/admission.h"
#include "broker/core/tide.h"
#include "broker/core/victims.h"

namespace tidegate::core {

// ---------------------------------------------------------------- usage under another quota

ComingUsage::ComingUsage(const CompiledConfig* config, std::vector<std::vector<Quantity>> leaf_u)
    : c_(config), R_(config->num_resources()), u_(std::move(leaf_u)) {
  Sum(kRootNode);
}

// The usage of every node under `coming`, from the state's leaf usage;
// optionally without the jobs that are draining (they leave before it).
ComingUsage UsageUnder(const State& s, const CompiledConfig& coming, bool exclude_draining) {
  const int R = s.R();
  std::vector<std::vector<Quantity>> u(coming.nodes.size(), std::vector<Quantity>(R, 0));
  for (size_t n = 1; n < coming.nodes.size(); ++n) {
    if (!coming.nodes[n].leaf) continue;
    u[n] = s.ns(static_cast<int>(n)).u;
    if (!exclude_draining) continue;
    for (int j : s.ns(static_cast<int>(n)).running) {
      const Job& job = s.job(j);
      if (job.phase != Phase::kDraining) continue;
      for (int r = 0; r < R; ++r) u[n][r] -= job.demand[r];
    }
  }
  return ComingUsage(&coming, std::move(u));
}

void ComingUsage::Sum(int n) {
  if (c_->nodes[n].leaf && n != kRootNode) return;
  std::fill(u_[n].begin(), u_[n].end(), 0);
  for (int c : c_->nodes[n].children) {
    Sum(c);
    for (int r = 0; r < R_; ++r) u_[n][r] += std::max(u_[c][r], c_->nodes[c].p[r]);
  }
}

void ComingUsage::Add(int leaf, const std::vector<Quantity>& amount, int sign) {
  for (int r = 0; r < R_; ++r) {
    Quantity delta = sign * amount[r];
    int n = leaf;
    while (delta != 0 && n != kRootNode) {
      const Quantity p = c_->nodes[n].p[r];
      const Quantity before = std::max(u_[n][r], p);
      u_[n][r] += delta;
      const Quantity after = std::max(u_[n][r], p);
      delta = after - before;
      n = c_->nodes[n].parent;
    }
    if (n == kRootNode) u_[kRootNode][r] += delta;
  }
}

bool ComingUsage::NodeFits(int n) const {
  for (int r = 0; r < R_; ++r) {
    const NodeConfig& nc = c_->nodes[n];
    const Quantity limit = n == kRootNode ? nc.g[r] : SatAdd(nc.g[r], nc.b[r]);
    if (u_[n][r] > limit) return false;
  }
  return true;
}

bool ComingUsage::PathFits(int n) const {
  for (int a : c_->nodes[n].path) {
    if (!NodeFits(a)) return false;
  }
  return true;
}

bool ComingUsage::WithinGuarantee(int n) const {
  for (int r = 0; r < R_; ++r) {
    if (u_[n][r] > c_->nodes[n].g[r]) return false;
  }
  return true;
}

Quantity ComingUsage::Available(int n, int r) const {
  const NodeConfig& nc = c_->nodes[n];
  if (n == kRootNode) return nc.g[r] - u_[n][r];
  const Quantity own = SatSub(SatAdd(nc.g[r], nc.b[r]), u_[n][r]);
  const Quantity slack = std::max<Quantity>(0, nc.p[r] - u_[n][r]);
  return std::min(own, SatAdd(slack, Available(nc.parent, r)));
}

bool ComingUsage::FitsWith(int leaf, const std::vector<Quantity>& extra) const {
  for (int r = 0; r < R_; ++r) {
    if (extra[r] > 0 && extra[r] > std::max<Quantity>(0, Available(leaf, r))) return false;
  }
  return true;
}

// ---------------------------------------------------------------- schedule

absl::StatusOr<CompiledConfig> Admission::CompileAt(const v1::Config& source, Time t) const {
  return HasTide(source) ? CompileConfig(EffectiveConfig(source, t)) : CompileConfig(source);
}

std::vector<int> RisingTeams(const v1::Config& source, const CompiledConfig& coming, Time boundary) {
  // Only a team's own rule counts: an inner node without an entry of its own
  // rises with its children's sum, but that is the child's rise, not its own.
  const v1::Config before_src = EffectiveConfig(source, boundary - 1);
  const v1::Config at_src = EffectiveConfig(source, boundary);
  auto before = CompileConfig(before_src);
  if (!before.ok()) return {};
  std::vector<int> rising;
  for (int i = 0; i < at_src.teams_size() && i < before_src.teams_size(); ++i) {
    const v1::Team& at = at_src.teams(i);
    const v1::Team& was = before_src.teams(i);
    auto n = coming.node_index.find(at.name());
    auto nb = before->node_index.find(at.name());
    if (n == coming.node_index.end() || nb == before->node_index.end()) continue;
    for (int r = 0; r < coming.num_resources(); ++r) {
      const std::string& res = coming.resources[r];
      auto rb = before->resource_index.find(res);
      if (rb == before->resource_index.end()) continue;
      auto ea = at.quota().find(res);
      auto eb = was.quota().find(res);
      const std::string a = ea == at.quota().end() ? std::string() : ea->second.SerializeAsString();
      const std::string b = eb == was.quota().end() ? std::string() : eb->second.SerializeAsString();
      if (a == b) continue;  // its own entry does not change here.
      const NodeConfig& now_n = before->nodes[nb->second];
      const NodeConfig& next_n = coming.nodes[n->second];
      if (next_n.g[r] > now_n.g[rb->second] || next_n.p[r] > now_n.p[rb->second]) {
        rising.push_back(n->second);
        break;
      }
    }
  }
  return rising;
}

void ResetTide(State& s) {
  State::Tide& tide = s.tide();
  tide.enabled = HasTide(s.source());
  tide.guards.clear();
  tide.next_apply.reset();
  tide.next_lead.reset();
  tide.guard_usage_stamp = 0;
  if (!tide.enabled) return;
  tide.next_apply = NextTideBoundary(s.source(), tide.apply_cursor);
  tide.next_lead = NextTideBoundary(s.source(), tide.lead_cursor);
  // Guards for boundaries whose lead ran but which are not in force yet.
  for (auto b = tide.next_apply; b && *b <= tide.lead_cursor; b = NextTideBoundary(s.source(), *b)) {
    auto coming = CompileConfig(EffectiveConfig(s.source(), *b));
    if (coming.ok() && !RisingTeams(s.source(), *coming, *b).empty()) {
      tide.guards.push_back({*b, *std::move(coming)});
    }
  }
}

std::optional<Time> Admission::NextTideEvent() const {
  const State::Tide& tide = s_.tide();
  if (!tide.enabled) return std::nullopt;
  std::optional<Time> next = tide.next_apply;
  if (tide.next_lead) {
    const Time lead_at = *tide.next_lead - s_.config().policy.tide_lead_s * kMillisPerSecond;
    if (!next || lead_at < *next) next = lead_at;
  }
  return next;
}

bool Admission::RunTide(Time t) {
  State::Tide& tide = s_.tide();
  bool ran = false;
  const Time lead_ms = s_.config().policy.tide_lead_s * kMillisPerSecond;
  // Leads first: a boundary's lead comes no later than the boundary.
  while (tide.next_lead && *tide.next_lead - lead_ms <= t) {
    const Time boundary = *tide.next_lead;
    tide.lead_cursor = boundary;
    tide.next_lead = NextTideBoundary(s_.source(), boundary);
    auto coming = CompileConfig(EffectiveConfig(s_.source(), boundary));
    if (!coming.ok()) {
      Error("", absl::StrCat("tide: the quota coming at ", boundary, " ms is invalid: ",
                             std::string(coming.status().message())));
      continue;
    }
    // Only a rise is prepared for: a fall gives capacity away at the
    // boundary (the queue first, then growth), with nothing to guard before.
    const std::vector<int> rising = RisingTeams(s_.source(), *coming, boundary);
    if (rising.empty()) continue;
    TideReclaim(*coming, rising);
    tide.guards.push_back({boundary, *std::move(coming)});
    tide.guard_usage_stamp = 0;
    s_.Changed();
    ran = true;
  }
  while (tide.next_apply && *tide.next_apply <= t) {
    const Time boundary = *tide.next_apply;
    tide.apply_cursor = boundary;
    // Reconfigure recompiles the quota in force now and resets the schedule.
    const Time saved = s_.now();
    s_.set_now(boundary);
    Reconfigure(s_.source());
    s_.set_now(saved);
    ResetTide(s_);
    ran = true;
  }
  return ran;
}

bool Admission::FitsGuards(const Job& job, const std::vector<Quantity>& extra) const {
  State::Tide& tide = s_.tide();
  if (tide.guards.empty()) return true;
  if (tide.guard_usage_stamp != s_.change_stamp()) {
    tide.guard_usage.clear();
    for (const auto& g : tide.guards) tide.guard_usage.push_back(UsageUnder(s_, g.config, /*exclude_draining=*/false));
    tide.guard_usage_stamp = s_.change_stamp();
  }
  for (const ComingUsage& u : tide.guard_usage) {
    if (!u.FitsWith(job.team, extra)) return false;
  }
  return true;
}

// ---------------------------------------------------------------- reclaim at the lead

void Admission::TideReclaim(const CompiledConfig& coming, const std::vector<int>& rising) {
  const int R = s_.R();
  for (const int t : rising) {
    ComingUsage u = UsageUnder(s_, coming, /*exclude_draining=*/true);
    if (u.PathFits(static_cast<int>(t))) continue;
    const std::string by = absl::StrCat("tide:", coming.nodes[t].name);
    auto in_subtree = [&](int leaf) {
      const auto& path = coming.nodes[leaf].path;
      return std::find(path.begin(), path.end(), static_cast<int>(t)) != path.end();
    };
    // Other teams' borrowers, in §3's order, keys 2-7.
    struct Cand {
      int job;
      CandidateKey key;
    };
    std::vector<Cand> cands;
    for (size_t leaf = 1; leaf < coming.nodes.size(); ++leaf) {
      if (!coming.nodes[leaf].leaf || in_subtree(static_cast<int>(leaf))) continue;
      if (u.WithinGuarantee(static_cast<int>(leaf))) continue;
      for (int j : s_.ns(static_cast<int>(leaf)).running) {
        const Job& c = s_.job(j);
        if (c.phase != Phase::kAdmitted || c.shrink_pending() || c.drain_for >= 0) continue;
        CandidateKey k{};
        k.not_draining = true;
        k.priority = c.priority;
        const bool least_lost_work = s_.config().policy.least_lost_work;
        k.lost_work = least_lost_work ? LostWork(c, s_.now()) : 0;
        k.neg_admitted_at = -c.admitted_at;
        k.id = &c.id;
        if (Shrinkable(c)) {  // its replicas above min first, as in §3.
          k.not_shrinkable = false;
          k.whole_part = false;
          cands.push_back({j, k});
        }
        k.not_shrinkable = least_lost_work;
        k.whole_part = true;
        cands.push_back({j, k});
      }
    }
    std::sort(cands.begin(), cands.end(), [](const Cand& a, const Cand& b) { return a.key < b.key; });
    struct Step {
      int job;
      int64_t replicas;
      bool whole;
    };
    std::vector<Step> steps;
    auto amount = [&](const Step& st) {
      std::vector<Quantity> a(R);
      for (int r = 0; r < R; ++r) a[r] = s_.job(st.job).per_replica[r] * st.replicas;
      return a;
    };
    bool fit = false;
    absl::flat_hash_map<int, int64_t> taken;  // replicas removed so far, per job
    for (const Cand& c : cands) {
      if (fit) break;
      const Job& job = s_.job(c.job);
      if (u.WithinGuarantee(job.team)) continue;
      int64_t& gone = taken[c.job];
      if (!c.key.whole_part) {
        while (job.replicas - gone > job.elastic_min && !fit && !u.WithinGuarantee(job.team)) {
          steps.push_back({c.job, 1, false});
          u.Add(job.team, amount(steps.back()), -1);
          ++gone;
          fit = u.PathFits(static_cast<int>(t));
        }
        continue;
      }
      const int64_t left = job.replicas - gone;
      if (left <= 0) continue;
      steps.push_back({c.job, left, true});
      u.Add(job.team, amount(steps.back()), -1);
      gone += left;
      fit = u.PathFits(static_cast<int>(t));
    }
    if (!fit) continue;  // no feasible state within reach: choose none.
    std::vector<bool> keep(steps.size(), true);
    for (int i = static_cast<int>(steps.size()) - 2; i >= 0; --i) {
      const int team = s_.job(steps[i].job).team;
      u.Add(team, amount(steps[i]), +1);
      if (u.PathFits(static_cast<int>(t))) {
        keep[i] = false;
      } else {
        u.Add(team, amount(steps[i]), -1);
      }
    }
    // One decision per job, in the order first chosen.
    std::vector<std::pair<int, int64_t>> victims;  // job, shrink_to (-1: whole)
    for (size_t i = 0; i < steps.size(); ++i) {
      if (!keep[i]) continue;
      auto it = std::find_if(victims.begin(), victims.end(), [&](const auto& v) { return v.first == steps[i].job; });
      if (it == victims.end()) {
        victims.emplace_back(steps[i].job, s_.job(steps[i].job).replicas);
        it = victims.end() - 1;
      }
      if (steps[i].whole) {
        it->second = -1;
      } else if (it->second > 0) {
        --it->second;
      }
    }
    for (const auto& [j, shrink_to] : victims) {
      Job& victim = s_.job(j);
      if (shrink_to >= 0) {
        RequestResize(j, shrink_to, "tide", -1, by);  // enforced at its deadline, even now.
        continue;
      }
      DropGrowRequest(j);
      victim.phase = Phase::kDraining;
      s_.UpdateGrowable(j);
      victim.drain_for = -1;
      victim.drain_deadline = s_.now() + victim.grace_ms;
      SetReason(victim, TideDrainReason(by, s_.tide().lead_cursor, victim.drain_deadline));
      Event e;
      e.type = EventType::kPreempt;
      e.job = victim.id;
      e.team = s_.node(victim.team).name;
      e.by = by;
      e.reason = "tide";
      Emit(std::move(e));
      if (victim.drain_deadline <= s_.now()) {
        Leave(j, /*ended=*/false);
      } else {
        s_.AddTimer(victim.drain_deadline, j);
      }
    }
    s_.Changed();
  }
}

}  // namespace tidegate::core
