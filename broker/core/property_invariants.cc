// The checker's invariants, recomputed from scratch after every step:
// feasibility, accounting, no job waits while it fits, exceeds_max, and the
// elastic view (docs/policy.md §1, §2, §4).
#include "broker/core/property_checker.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "broker/core/reasons.h"
#include "broker/core/reasons_now.h"

namespace tidegate::core::property {

Usage Checker::Recompute(const std::set<std::string>* holding) const {
  Usage u;
  auto add = [&](const SpecInfo& s) {
    for (const auto& [r, q] : s.demand) {
      u.node[s.team][r] += q;
      u.cluster[s.cluster][r] += q;
    }
  };
  if (holding) {
    for (const std::string& id : *holding) add(Now(id));
  } else {
    for (const JobView& j : jobs_) {
      if (j.state == v1::JOB_STATE_ADMITTED || j.state == v1::JOB_STATE_DRAINING) add(Now(j.id));
    }
  }
  for (const auto& [waiter, holds] : holds_) {
    for (const SpecInfo& h : holds) add(h);
  }
  for (const auto& t : model_.top) Fold(t, &u);
  for (const auto& r : model_.resources) {
    for (const auto& t : model_.top) u.root[r] += std::max(u.node[t][r], model_.private_part.at(t).at(r));
  }
  return u;
}

void Checker::Fold(const std::string& n, Usage* u) const {
  if (model_.leaf(n)) return;
  for (const auto& r : model_.resources) u->node[n][r] = 0;
  for (const auto& c : model_.nodes.at(n).children) {
    Fold(c, u);
    for (const auto& r : model_.resources) u->node[n][r] += std::max(u->node[c][r], model_.private_part.at(c).at(r));
  }
}

std::vector<Quantity> Checker::Excess(Usage& u, std::vector<std::string>* name) const {
  std::vector<Quantity> out;
  for (const auto& [n, node] : model_.nodes) {
    for (const auto& r : model_.resources) {
      const Quantity limit = SatAdd(model_.guaranteed.at(n).at(r), model_.borrow_limit.at(n).at(r));
      out.push_back(std::max<Quantity>(0, u.node[n][r] - limit));
      if (name) name->push_back(absl::StrCat("team ", n, " ", r, " (g+b ", limit, ")"));
    }
  }
  for (const auto& r : model_.resources) {
    const Quantity total = model_.TotalCapacity(r);
    out.push_back(std::max<Quantity>(0, u.root[r] - total));
    if (name) name->push_back(absl::StrCat("root ", r, " (capacity ", total, ")"));
    for (const auto& [k, cap] : model_.capacity) {
      const Quantity c = cap.contains(r) ? cap.at(r) : 0;
      out.push_back(std::max<Quantity>(0, u.cluster[k][r] - c));
      if (name) name->push_back(absl::StrCat("cluster ", k, " ", r, " (capacity ", c, ")"));
    }
  }
  return out;
}

std::string Checker::CheckAdmit(const Event& e, const std::vector<Quantity>& baseline) {
  const SpecInfo s = Now(e.job);
  Usage u = Recompute(&holding_);
  NamedQuantities want;
  for (const auto& [r, d] : s.demand) {
    want.emplace_back(r, std::min(d, std::max<Quantity>(0, u.node[s.team][r] + d - model_.guaranteed.at(s.team).at(r))));
  }
  if (e.borrowed != want) {
    std::vector<std::string> got, exp;
    for (const auto& [r, q] : e.borrowed) got.push_back(absl::StrCat(r, ":", q));
    for (const auto& [r, q] : want) exp.push_back(absl::StrCat(r, ":", q));
    return absl::StrCat("admit ", e.job, ": borrowed {", absl::StrJoin(got, ","), "}, expected {",
                        absl::StrJoin(exp, ","), "}");
  }
  if (!check_feasible_ || e.adopted) return "";
  std::set<std::string> after = holding_;
  after.insert(e.job);
  Usage v = Recompute(&after);
  const std::vector<Quantity> now = Excess(v);
  for (size_t i = 0; i < now.size(); ++i) {
    if (now[i] <= baseline[i]) continue;
    std::vector<std::string> names;
    Excess(v, &names);
    return absl::StrCat("infeasible: admitting ", e.job, " puts ", names[i], " over by ", now[i], " (was ",
                        baseline[i], ")");
  }
  return "";
}

Quantity Checker::Available(Usage& u, const std::string& n, const std::string& r) const {
  Quantity avail = model_.TotalCapacity(r) - u.root[r];
  for (const std::string& a : model_.Path(n)) {
    const Quantity slack = std::max<Quantity>(0, model_.private_part.at(a).at(r) - u.node[a][r]);
    avail = std::min(SatSub(SatAdd(model_.guaranteed.at(a).at(r), model_.borrow_limit.at(a).at(r)), u.node[a][r]),
                     SatAdd(slack, avail));
  }
  return avail;
}

bool Checker::ExceedsMax(const SpecInfo& s) const {
  Usage zero;
  for (const auto& t : model_.top) Fold(t, &zero);
  for (const auto& r : model_.resources) {
    for (const auto& t : model_.top) zero.root[r] += std::max(zero.node[t][r], model_.private_part.at(t).at(r));
  }
  const auto& cap = model_.capacity.at(s.cluster);
  for (const auto& [r, d] : s.demand) {
    if (d > Available(zero, s.team, r) || d > (cap.contains(r) ? cap.at(r) : 0)) return true;
  }
  return false;
}

std::string Checker::CheckNoFittingJobWaits(Usage& u) const {
  std::map<std::string, std::vector<const JobView*>> queued;  // team -> queue order
  for (const JobView& j : jobs_) {
    if (j.state == v1::JOB_STATE_QUEUED) queued[j.team].push_back(&j);
  }
  std::map<std::pair<std::string, std::string>, Quantity> available;  // (team, r) -> available(team)
  for (auto& [team, q] : queued) {
    std::sort(q.begin(), q.end(), [](const JobView* a, const JobView* b) {
      if (a->priority != b->priority) return a->priority > b->priority;
      if (a->created_at != b->created_at) return a->created_at < b->created_at;
      return a->id < b->id;
    });
    const bool strict = source_.count(team) && source_.at(team);
    for (const JobView* j : q) {
      const SpecInfo s = Now(j->id);
      if (outstanding_.contains(j->id)) {
        if (strict) break;
        continue;  // waiting for its victims
      }
      bool contested = false;
      for (const auto& [r, d] : s.demand) {
        if (d == 0) continue;
        const auto& cap = model_.capacity.at(s.cluster);
        const Quantity free = (cap.contains(r) ? cap.at(r) : 0) - u.cluster[s.cluster][r];
        auto [it, fresh] = available.try_emplace(std::make_pair(team, r), 0);
        if (fresh) it->second = Available(u, team, r);
        if (d > std::max<Quantity>(0, std::min(it->second, free))) contested = true;
      }
      if (!contested) return absl::StrCat("job ", j->id, " waits (", j->reason, ") although it fits now");
      if (strict) break;  // it blocks its team
    }
  }
  return "";
}

std::string Checker::CheckElasticView(const JobView& j, const SpecInfo& s) const {
  auto it = el_.find(j.id);
  if (!s.elastic) {
    if (it != el_.end() || j.resize_from >= 0) return absl::StrCat("rigid job ", j.id, " has elastic state");
    return "";
  }
  if (it == el_.end()) return absl::StrCat("elastic job ", j.id, " unknown to the events");
  const ElasticState& el = it->second;
  if (j.replicas < s.min || j.replicas > s.max) {
    return absl::StrCat("elastic range: ", j.id, " runs ", j.replicas, " replicas, outside [", s.min, ", ", s.max, "]");
  }
  if (j.replicas != el.replicas) {
    return absl::StrCat("elastic replicas: ", j.id, " has ", j.replicas, " replicas, the events say ", el.replicas);
  }
  if (j.resize_from != el.from || (el.from >= 0 && (j.resize_to != el.to || j.epoch != el.epoch ||
                                                      j.resize_deadline != el.deadline))) {
    return absl::StrCat("elastic request: ", j.id, " pending ", j.resize_from, " -> ", j.resize_to, " epoch ",
                        j.epoch, " due ", j.resize_deadline, "; the events say ", el.from, " -> ", el.to, " epoch ",
                        el.epoch, " due ", el.deadline);
  }
  if (j.resize_from >= 0 && j.state != v1::JOB_STATE_ADMITTED) {
    return absl::StrCat("elastic request: ", j.id, " has a resize pending while not admitted");
  }
  // Due now is not overdue: a shrink with grace 0 is due at its request
  // and enforced by the next Apply at that instant (an ack then is in time).
  if (j.resize_from >= 0 && j.resize_deadline < now_) {
    return absl::StrCat("overdue resize: ", j.id, " request ", j.resize_from, " -> ", j.resize_to, " was due at +",
                        (j.resize_deadline - kStart) / kSec, "s, now +", (now_ - kStart) / kSec, "s");
  }
  return "";
}

std::string Checker::CheckState(const std::vector<Quantity>& baseline) {
  Usage u = Recompute();
  if (std::string err = CheckNoFittingJobWaits(u); !err.empty()) return err;
  // The events told the whole story: the jobs holding capacity by the
  // event stream are exactly those ListJobs() says hold it.
  std::set<std::string> listed;
  for (const JobView& j : jobs_) {
    if (j.state == v1::JOB_STATE_ADMITTED || j.state == v1::JOB_STATE_DRAINING) listed.insert(j.id);
  }
  for (const auto& [id, el] : el_) {
    if (!std::any_of(jobs_.begin(), jobs_.end(), [&](const JobView& j) { return j.id == id; })) {
      return absl::StrCat("elastic job ", id, " is gone without an end record");
    }
  }
  if (listed != holding_) {
    std::vector<std::string> diff;
    std::set_symmetric_difference(listed.begin(), listed.end(), holding_.begin(), holding_.end(),
                                  std::back_inserter(diff));
    return absl::StrCat("events vs ListJobs: holding capacity differs for ", absl::StrJoin(diff, ","));
  }
  // Reasons: each starts with a documented code, and a reader's picture of
  // the core states the same reason for a queued job as the core does.
  const std::shared_ptr<const WaitPicture> picture = broker_->TakeWaitPicture(nullptr);
  for (const JobView& j : jobs_) {
    if (j.state != v1::JOB_STATE_QUEUED && j.state != v1::JOB_STATE_DRAINING) continue;
    if (ReasonCode(j.reason).empty()) return absl::StrCat("job ", j.id, ": reason '", j.reason, "' has no code");
    if (j.state != v1::JOB_STATE_QUEUED) continue;
    const std::string read = picture->Reason(j.id, j.team, j.cluster, j.demand, j.reason);
    if (read != j.reason) return absl::StrCat("job ", j.id, ": the core says '", j.reason, "', a reader '", read, "'");
  }
  // Accounting.
  std::map<std::string, std::map<std::string, Quantity>> queued;
  for (const JobView& j : jobs_) {
    const SpecInfo s = Now(j.id);
    if (j.team != s.team || j.cluster != s.cluster) return absl::StrCat("job ", j.id, ": team/cluster differ");
    NamedQuantities want(s.demand.begin(), s.demand.end());
    if (j.demand != want) return absl::StrCat("job ", j.id, ": demand differs from its spec");
    if (std::string err = CheckElasticView(j, s); !err.empty()) return err;
    if (j.state == v1::JOB_STATE_QUEUED) {
      for (std::string n = s.team; !n.empty(); n = model_.nodes.at(n).parent) {
        for (const auto& [r, q] : s.demand) queued[n][r] += q;
      }
    }
  }
  for (const auto& [n, node] : model_.nodes) {
    const std::optional<TeamView> view = broker_->GetTeam(n);
    if (!view) return absl::StrCat("GetTeam(", n, ") is empty");
    for (const TeamResourceView& rv : view->resources) {
      const std::string& r = rv.resource;
      const Quantity g = model_.guaranteed.at(n).at(r);
      if (rv.guaranteed != g) return absl::StrCat("team ", n, " ", r, ": guaranteed ", rv.guaranteed, ", expected ", g);
      if (rv.used != u.node[n][r]) {
        return absl::StrCat("team ", n, " ", r, ": used ", rv.used, ", recomputed ", u.node[n][r]);
      }
      if (rv.borrowed != std::max<Quantity>(0, u.node[n][r] - g)) {
        return absl::StrCat("team ", n, " ", r, ": borrowed ", rv.borrowed);
      }
      if (model_.leaf(n) && rv.queued != queued[n][r]) {
        return absl::StrCat("team ", n, " ", r, ": queued ", rv.queued, ", recomputed ", queued[n][r]);
      }
    }
  }
  for (const auto& [k, cap] : model_.capacity) {
    for (const auto& r : model_.resources) {
      if (broker_->ClusterUsed(k, r) != u.cluster[k][r]) {
        return absl::StrCat("cluster ", k, " ", r, ": used ", broker_->ClusterUsed(k, r), ", recomputed ",
                            u.cluster[k][r]);
      }
    }
  }
  // Feasibility: no step makes any over-use larger than it was under
  // today's config (zero unless a quota change made the state infeasible).
  if (check_feasible_) {
    const std::vector<Quantity>& was = baseline;
    const std::vector<Quantity> now = Excess(u);
    if (std::any_of(now.begin(), now.end(), [](Quantity q) { return q > 0; })) ++coverage.infeasible_steps;
    for (size_t i = 0; i < now.size(); ++i) {
      if (now[i] <= was[i]) continue;
      std::vector<std::string> names;
      Excess(u, &names);
      return absl::StrCat("infeasible: ", names[i], " over by ", now[i], " (was ", was[i], ")");
    }
  }
  return "";
}

}  // namespace tidegate::core::property
