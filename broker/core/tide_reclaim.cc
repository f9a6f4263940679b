// The tide in the core (docs/policy.md §6): at `tide_lead_s` before a boundary,
// free what the coming quota cannot hold and guard admission against it;
// at the boundary, put the new quota in force.
#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "broker/core/decider.h"
#include "broker/core/tide.h"
#include "broker/core/tide_reclaim.h"
#include "broker/core/victims.h"

namespace tidegate::core {

namespace {

// The usage of every node under `coming`, from the state's leaf usage;
// optionally without the jobs that are draining (they leave before it).
ComingUsage UsageUnder(const State& s, const CompiledConfig& coming, bool exclude_draining) {
  const int R = s.num_resources();
  std::vector<Quantity> u(coming.nodes.size() * R, 0);
  for (size_t n = 1; n < coming.nodes.size(); ++n) {
    if (!coming.nodes[n].leaf) continue;
    Quantity* un = &u[n * R];
    const std::vector<Quantity>& usage = s.node_state(static_cast<int>(n)).usage;
    std::copy(usage.begin(), usage.end(), un);
    if (!exclude_draining) continue;
    for (int j : s.node_state(static_cast<int>(n)).running) {
      const Job& job = s.job(j);
      if (job.phase != Phase::kDraining) continue;
      for (int r = 0; r < R; ++r) un[r] -= job.demand[r];
    }
  }
  return ComingUsage(&coming, std::move(u));
}

// The candidates of a tide reclaim for rising team t: admitted jobs of
// other teams that borrow under the coming quota, in §3's order (keys 2-7),
// an elastic job's replicas above its min first, as in §3.
struct TideCandidate {
  int job;
  CandidateKey key;
};

std::vector<TideCandidate> TideCandidates(const State& s, const CompiledConfig& coming, const ComingUsage& u, int t) {
  auto in_subtree = [&](int leaf) {
    const auto& path = coming.nodes[leaf].path;
    return std::find(path.begin(), path.end(), t) != path.end();
  };
  std::vector<TideCandidate> cands;
  for (size_t leaf = 1; leaf < coming.nodes.size(); ++leaf) {
    if (!coming.nodes[leaf].leaf || in_subtree(static_cast<int>(leaf))) continue;
    if (u.WithinGuarantee(static_cast<int>(leaf))) continue;
    for (int j : s.node_state(static_cast<int>(leaf)).running) {
      const Job& c = s.job(j);
      if (c.phase != Phase::kAdmitted || c.shrink_pending() || c.drain_for >= 0) continue;
      CandidateKey k{};
      k.not_draining = true;
      k.priority = c.priority;
      const bool least_lost_work = s.config().policy.least_lost_work;
      k.lost_work = least_lost_work ? LostWork(c, s.now()) : 0;
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
  std::sort(cands.begin(), cands.end(), [](const TideCandidate& a, const TideCandidate& b) { return a.key < b.key; });
  return cands;
}

}  // namespace

// ---------------------------------------------------------------- schedule

absl::StatusOr<CompiledConfig> Decider::CompileAt(const v1::Config& source, const TideCalendar& tide, Time t) const {
  return HasTide(source) ? CompileConfig(EffectiveConfig(source, tide, t), tide) : CompileConfig(source, tide);
}

std::shared_ptr<const absl::StatusOr<CompiledConfig>> CompiledQuotaAt(State& s, Time t, TideActive* active) {
  State::Tide& tide = s.tide();
  const std::shared_ptr<const TideActive> shared_rules = tide.index.SharedActiveRules(s.config().tide, t);
  const TideActive& rules = *shared_rules;
  std::shared_ptr<const absl::StatusOr<CompiledConfig>> compiled;
  for (const auto& c : tide.compiled) {
    if (c.active == rules) compiled = c.config;
  }
  if (!compiled) {
    // CompileConfig(EffectiveConfig(source, calendar, t), calendar), without
    // copying the config and its rules: the same quota entries (ActiveQuotas).
    // A boundary changes the rules of a few teams: patch the latest valid
    // compile kept for those teams (PatchQuota); the full compile only when
    // none is kept, or to name what is wrong with an invalid quota.
    const std::vector<std::optional<QuotaEntries>> quotas = ActiveQuotas(s.source(), rules);
    const State::Tide::Compiled* from = nullptr;
    for (const auto& c : tide.compiled) {
      if (c.config->ok()) from = &c;
    }
    absl::StatusOr<CompiledConfig> result = absl::UnknownError("not compiled");
    if (from) {
      std::vector<int> changed;
      for (size_t i = 0; i < rules.size(); ++i) {
        if (rules[i] != from->active[i]) changed.push_back(static_cast<int>(i));
      }
      result = PatchQuota(**from->config, s.source(), quotas, changed);
    }
    if (!result.ok()) result = CompileConfig(s.source(), s.config().tide, quotas);
    compiled = std::make_shared<const absl::StatusOr<CompiledConfig>>(std::move(result));
    constexpr size_t kKept = 4;  // the quota in force, the coming one, and a guard or two.
    if (tide.compiled.size() >= kKept) tide.compiled.erase(tide.compiled.begin());
    tide.compiled.push_back({rules, compiled});
  }
  if (active) *active = rules;
  return compiled;
}

std::vector<int> RisingTeams(const v1::Config& source, const TideActive& before, const TideActive& at,
                             const CompiledConfig& was, const CompiledConfig& coming) {
  // Only a team's own rule counts: an inner node without an entry of its own
  // rises with its children's sum, but that is the child's rise, not its own.
  const std::vector<std::optional<QuotaEntries>> at_quotas = ActiveQuotas(source, at);
  const std::vector<std::optional<QuotaEntries>> before_quotas = ActiveQuotas(source, before);
  std::vector<int> rising;
  for (int i = 0; i < source.teams_size(); ++i) {
    const QuotaEntries& at_q = at_quotas[i] ? *at_quotas[i] : source.teams(i).quota();
    const QuotaEntries& was_q = before_quotas[i] ? *before_quotas[i] : source.teams(i).quota();
    if (!at_quotas[i] && !before_quotas[i]) continue;  // no rule of its own on either side.
    const std::string& name = source.teams(i).name();
    auto n = coming.node_index.find(name);
    auto nb = was.node_index.find(name);
    if (n == coming.node_index.end() || nb == was.node_index.end()) continue;
    for (int r = 0; r < coming.num_resources(); ++r) {
      const std::string& res = coming.resources[r];
      auto rb = was.resource_index.find(res);
      if (rb == was.resource_index.end()) continue;
      auto ea = at_q.find(res);
      auto eb = was_q.find(res);
      const std::string a = ea == at_q.end() ? std::string() : ea->second.SerializeAsString();
      const std::string b = eb == was_q.end() ? std::string() : eb->second.SerializeAsString();
      if (a == b) continue;  // its own entry does not change here.
      const NodeConfig& now_n = was.nodes[nb->second];
      const NodeConfig& next_n = coming.nodes[n->second];
      if (next_n.guaranteed[r] > now_n.guaranteed[rb->second] || next_n.private_part[r] > now_n.private_part[rb->second]) {
        rising.push_back(n->second);
        break;
      }
    }
  }
  return rising;
}

namespace {

// RisingTeams at `boundary`, with `coming` the quota in force from it.
std::vector<int> RisingAt(State& s, const CompiledConfig& coming, Time boundary) {
  TideActive before_rules;
  auto before = CompiledQuotaAt(s, boundary - 1, &before_rules);
  if (!before->ok()) return {};
  const auto at_rules = s.tide().index.SharedActiveRules(s.config().tide, boundary);
  return RisingTeams(s.source(), before_rules, *at_rules, **before, coming);
}

}  // namespace

void ResetTide(State& s) {
  State::Tide& tide = s.tide();
  tide.enabled = HasTide(s.source());
  tide.guards.clear();
  tide.next_apply.reset();
  tide.next_lead.reset();
  tide.guard_usage_stamp = 0;
  if (!tide.enabled) return;
  const TideCalendar& calendar = s.config().tide;
  tide.next_apply = tide.index.NextBoundary(calendar, tide.apply_cursor);
  tide.next_lead = tide.index.NextBoundary(calendar, tide.lead_cursor);
  // Guards for boundaries whose lead ran but which are not in force yet.
  for (auto b = tide.next_apply; b && *b <= tide.lead_cursor; b = tide.index.NextBoundary(calendar, *b)) {
    auto coming = CompiledQuotaAt(s, *b);
    if (coming->ok() && !RisingAt(s, **coming, *b).empty()) {
      tide.guards.push_back({*b, std::shared_ptr<const CompiledConfig>(coming, &**coming)});
    }
  }
}

std::optional<Time> Decider::NextTideEvent() const {
  const State::Tide& tide = s_.tide();
  if (!tide.enabled) return std::nullopt;
  std::optional<Time> next = tide.next_apply;
  if (tide.next_lead) {
    const Time lead_at = *tide.next_lead - s_.config().policy.tide_lead_s * kMillisPerSecond;
    if (!next || lead_at < *next) next = lead_at;
  }
  return next;
}

bool Decider::RunTide(Time t) {
  State::Tide& tide = s_.tide();
  bool ran = false;
  const Time lead_ms = s_.config().policy.tide_lead_s * kMillisPerSecond;
  // Leads first: a boundary's lead comes no later than the boundary.
  while (tide.next_lead && *tide.next_lead - lead_ms <= t) {
    const Time boundary = *tide.next_lead;
    tide.lead_cursor = boundary;
    tide.next_lead = tide.index.NextBoundary(s_.config().tide, boundary);
    auto coming = CompiledQuotaAt(s_, boundary);
    if (!coming->ok()) {
      Error("", absl::StrCat("tide: the quota coming at ", boundary, " ms is invalid: ",
                             std::string(coming->status().message())));
      continue;
    }
    // Only a rise is prepared for: a fall gives capacity away at the
    // boundary (the queue first, then growth), with nothing to guard before.
    const std::vector<int> rising = RisingAt(s_, **coming, boundary);
    if (rising.empty()) continue;
    TideReclaim(**coming, rising);
    tide.guards.push_back({boundary, std::shared_ptr<const CompiledConfig>(coming, &**coming)});
    tide.guard_usage_stamp = 0;
    s_.Changed();
    ran = true;
  }
  while (tide.next_apply && *tide.next_apply <= t) {
    const Time boundary = *tide.next_apply;
    tide.apply_cursor = boundary;
    const Time saved = s_.now();
    s_.set_now(boundary);
    ApplyTideBoundary();
    s_.set_now(saved);
    ran = true;
  }
  return ran;
}

bool Decider::FitsGuards(const Job& job, const std::vector<Quantity>& extra) const {
  State::Tide& tide = s_.tide();
  if (tide.guards.empty()) return true;
  if (tide.guard_usage_stamp != s_.change_stamp()) {
    tide.guard_usage.clear();
    for (const auto& g : tide.guards) tide.guard_usage.push_back(UsageUnder(s_, *g.config, /*exclude_draining=*/false));
    tide.guard_usage_stamp = s_.change_stamp();
  }
  for (const ComingUsage& u : tide.guard_usage) {
    if (!u.FitsWith(job.team, extra)) return false;
  }
  return true;
}

// ---------------------------------------------------------------- reclaim at the lead

// About 95 lines: per rising team, remove candidates (what-if on the coming
// usage) until its path fits, put back what is not needed, then act on the
// rest; the steps share the what-if usage.
void Decider::TideReclaim(const CompiledConfig& coming, const std::vector<int>& rising) {
  const int R = s_.num_resources();
  for (const int t : rising) {
    ComingUsage u = UsageUnder(s_, coming, /*exclude_draining=*/true);
    if (u.PathFits(static_cast<int>(t))) continue;
    const std::string by = absl::StrCat("tide:", coming.nodes[t].name);
    const std::vector<TideCandidate> cands = TideCandidates(s_, coming, u, t);
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
    for (const TideCandidate& c : cands) {
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
