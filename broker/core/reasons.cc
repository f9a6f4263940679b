// Why a job waits, stated with the numbers and the node that block it, so
// that a team lead can tell what would unblock it (docs/jobs.md lists every
// reason with an example). Each reason starts with a stable code
// (exceeds_max, capacity, borrow_limit, quota_in_use, ...) that scripts may
// match; the rest is for people.
#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "broker/core/decider.h"
#include "broker/core/reasons.h"

namespace tidegate::core {

std::string ReasonCode(const std::string& reason) {
  for (const char* code : kReasonCodes) {
    if (!absl::StartsWith(reason, code)) continue;
    const size_t n = std::string_view(code).size();
    if (reason.size() == n || reason[n] == ':' || reason[n] == ' ') return code;
  }
  return "";
}

bool ReasonNamesBackoff(const std::string& reason) {
  return absl::StartsWith(reason, "requeued after") || absl::StrContains(reason, "; requeue backoff: ");
}

std::string ReasonTime(Time ms) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixMillis(ms), absl::UTCTimeZone());
}

std::string TideDrainReason(const std::string& by, Time boundary, Time deadline) {
  return absl::StrCat("draining for ", by, " (tide: its quota rises at ", ReasonTime(boundary), ") until ",
                      ReasonTime(deadline), " at the latest");
}

void Decider::SetReason(Job& job, std::string reason) {
  // The tide guard's call sites name the code; its numbers are stated here.
  if (reason == kNoRoomUnderComingTide) reason = TideGuardReason(job);
  if (job.reason == reason) return;
  job.reason = std::move(reason);
  s_.NoteQuietChange(job.id);  // readers re-read the job: no event names it.
}

namespace {

// "40 guaranteed + 16 borrow limit" for node n and resource r.
std::string Limit(const NodeConfig& nc, int r) {
  return absl::StrCat(nc.guaranteed[r], " guaranteed + ", nc.borrow_limit[r], " borrow limit");
}

}  // namespace

bool ExceedsMax(const ReasonNumbers& n, const Job& job) {
  const CompiledConfig& c = n.config();
  for (int r = 0; r < c.num_resources(); ++r) {
    if (!(job.requested >> r & 1)) continue;
    if (job.demand[r] > c.nodes[job.team].potential[r] || job.demand[r] > c.clusters[job.cluster].capacity[r]) {
      return true;
    }
  }
  return false;
}

ResourceMask Contested(const ReasonNumbers& n, const Job& job) {
  std::vector<Quantity> avail;
  n.Available(job.team, &avail);
  ResourceMask contested = 0;
  for (int r = 0; r < n.config().num_resources(); ++r) {
    if (!(job.requested >> r & 1)) continue;
    const Quantity headroom = std::max<Quantity>(0, std::min(avail[r], n.free_capacity(job.cluster, r)));
    if (job.demand[r] > headroom) contested |= ResourceMask{1} << r;
  }
  return contested;
}

std::string ExceedsMaxReason(const ReasonNumbers& n, const Job& job) {
  const CompiledConfig& c = n.config();
  for (int r = 0; r < c.num_resources(); ++r) {
    if (!(job.requested >> r & 1)) continue;
    const std::string& res = c.resources[r];
    const Quantity d = job.demand[r];
    const ClusterConfig& k = c.clusters[job.cluster];
    if (d > k.capacity[r]) {
      return absl::StrCat("exceeds_max: the job needs ", d, " ", res, "; cluster ", k.name, " has ", k.capacity[r],
                          " in all; it waits for a config change");
    }
    if (d <= c.nodes[job.team].potential[r]) continue;
    // The lowest node whose own limit is below the demand, else the fleet.
    for (int a = job.team; a != kRootNode; a = c.nodes[a].parent) {
      const NodeConfig& nc = c.nodes[a];
      if (nc.borrow_limit[r] != kInfinite && SatAdd(nc.guaranteed[r], nc.borrow_limit[r]) < d) {
        return absl::StrCat("exceeds_max: ", nc.name, " would use ", d, " ", res, " > ", SatAdd(nc.guaranteed[r], nc.borrow_limit[r]),
                            " (", Limit(nc, r), ") even with nothing else running; it waits for a config change");
      }
    }
    return absl::StrCat("exceeds_max: the job needs ", d, " ", res, "; ", c.nodes[job.team].name,
                        " can never hold more than ", c.nodes[job.team].potential[r],
                        " (the fleet's capacity less what other teams keep private); it waits for a config change");
  }
  return "exceeds_max";
}

std::string BindingReason(const ReasonNumbers& n, const Job& job, ResourceMask contested) {
  const CompiledConfig& c = n.config();
  for (int r = 0; r < c.num_resources(); ++r) {
    if (!(contested >> r & 1)) continue;
    const std::string& res = c.resources[r];
    const Quantity d = job.demand[r];
    const ClusterConfig& k = c.clusters[job.cluster];
    if (d > n.free_capacity(job.cluster, r)) {
      return absl::StrCat("capacity ", k.name, " ", res, ": the job needs ", d, "; ", k.name, " has ",
                          std::max<Quantity>(0, n.free_capacity(job.cluster, r)), " of ", k.capacity[r],
                          " free; it waits for jobs there to end");
    }
    // The lowest node on the path whose own limit g + b - u is short.
    for (int a = job.team; a != kRootNode; a = c.nodes[a].parent) {
      const NodeConfig& nc = c.nodes[a];
      if (nc.borrow_limit[r] != kInfinite && SatSub(SatAdd(nc.guaranteed[r], nc.borrow_limit[r]), n.usage(a, r)) < d) {
        return absl::StrCat("borrow_limit ", nc.name, " ", res, ": ", nc.name, " would use ",
                            SatAdd(n.usage(a, r), d), " ", res, " > ", SatAdd(nc.guaranteed[r], nc.borrow_limit[r]), " (", Limit(nc, r),
                            "); it waits for ", nc.name, "'s jobs to end");
      }
    }
    std::vector<Quantity> avail;
    n.Available(job.team, &avail);
    const Quantity fleet = c.nodes[kRootNode].guaranteed[r];
    return absl::StrCat("quota_in_use fleet ", res, ": the job needs ", d, "; ", c.nodes[job.team].name, " can take ",
                        std::max<Quantity>(0, avail[r]), " more now (the fleet, all clusters: ",
                        n.usage(kRootNode, r), " of ", fleet,
                        " in use or kept for guarantees); it waits for borrowers to leave or jobs to end");
  }
  return "waiting";
}

std::string BehindHeadReason(const std::string& head, const std::string& team) {
  return absl::StrCat("strict_fifo: behind strict-FIFO head ", head, " of ", team,
                      ", which cannot be admitted yet (see its reason)");
}

std::string ReasonNow(const ReasonNumbers& n, const WaitingTeam& team, const Job& job, bool waits_for_victims,
                      bool in_backoff, const std::string& stored) {
  // The order of the cycle: MarkBehindHead passes over jobs that wait for
  // victims or exceed the max; RefreshStuckHead keeps a backoff's reason.
  if (waits_for_victims || !(team.stuck || team.strict_fifo)) return stored;
  if (ExceedsMax(n, job)) return ExceedsMaxReason(n, job);
  if (team.strict_fifo && job.id != team.head) return BehindHeadReason(team.head, n.config().nodes[job.team].name);
  if (!team.stuck || in_backoff) return stored;
  const ResourceMask contested = Contested(n, job);
  return contested != 0 ? BindingReason(n, job, contested) : stored;
}

std::string ReasonNow(const State& s, const Job& job) {
  if (job.phase != Phase::kQueued) return job.reason;
  const NodeState& ns = s.node_state(job.team);
  WaitingTeam team;
  team.stuck = ns.stuck;
  team.strict_fifo = s.node(job.team).policy.strict_fifo;
  if (!ns.pending.empty()) team.head = s.job(ns.pending.begin()->job).id;
  const Time backoff = s.config().policy.requeue_backoff_s * kMillisPerSecond;
  const bool in_backoff =
      job.requeued_at >= 0 && s.now() < job.requeued_at + backoff && ReasonNamesBackoff(job.reason);
  return ReasonNow(StateNumbers(s), team, job, job.victims_left > 0, in_backoff, job.reason);
}

std::string Decider::ExceedsMaxReason(const Job& job) const { return core::ExceedsMaxReason(StateNumbers(s_), job); }

std::string Decider::BindingReason(const Job& job, ResourceMask contested) const {
  return core::BindingReason(StateNumbers(s_), job, contested);
}

std::string Decider::TideGuardReason(const Job& job) const {
  const State::Tide& tide = s_.tide();
  // FitsGuards has just filled guard_usage for the present state.
  if (tide.guard_usage.size() != tide.guards.size()) return kNoRoomUnderComingTide;
  for (size_t i = 0; i < tide.guards.size(); ++i) {
    const ComingUsage& u = tide.guard_usage[i];
    const NodeConfig& coming = tide.guards[i].config->nodes[job.team];
    for (int r = 0; r < s_.num_resources(); ++r) {
      if (!(job.requested >> r & 1)) continue;
      const Quantity can_take = std::max<Quantity>(0, u.Available(job.team, r));
      if (job.demand[r] <= can_take) continue;
      const std::string& res = s_.config().resources[r];
      return absl::StrCat("tide: the job needs ", job.demand[r], " ", res, "; under the quota coming at ",
                          ReasonTime(tide.guards[i].boundary), " ", coming.name, " can take ", can_take,
                          " more (", coming.name, " then: ", coming.guaranteed[r], " guaranteed",
                          coming.borrow_limit[r] == kInfinite ? "" : absl::StrCat(" + ", coming.borrow_limit[r], " borrow limit"),
                          "); only what the coming quota also holds is admitted before it; it waits for the "
                          "change or for jobs to end");
    }
  }
  return kNoRoomUnderComingTide;
}

void Decider::RefreshStuckHead(int team) {
  const NodeState& ns = s_.node_state(team);
  if (ns.pending.empty()) return;
  Job& head = s_.job(ns.pending.begin()->job);
  if (head.victims_left > 0) return;
  // A requeued victim keeps its reason (when it may preempt again) until
  // its backoff ends.
  const Time backoff = s_.config().policy.requeue_backoff_s * kMillisPerSecond;
  if (head.requeued_at >= 0 && s_.now() < head.requeued_at + backoff) return;
  if (ExceedsMax(head)) {
    SetReason(head, ExceedsMaxReason(head));
    return;
  }
  const ResourceMask contested = Contested(head);
  if (contested != 0) SetReason(head, BindingReason(head, contested));
}

std::string Decider::BehindHeadReason(const Job& head) const {
  return core::BehindHeadReason(head.id, s_.node(head.team).name);
}

}  // namespace tidegate::core
