// Why a job waits, stated with the numbers and the node that block it, so
// that a team lead can tell what would unblock it (docs/jobs.md lists every
// reason with an example). Each reason starts with a stable code
// (exceeds_max, capacity, borrow_limit, quota_in_use, ...) that scripts may
// match; the rest is for people.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "broker/core/decider.h"
#include "broker/core/reasons.h"

namespace tidegate::core {

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

std::string Decider::ExceedsMaxReason(const Job& job) const {
  for (int r = 0; r < s_.num_resources(); ++r) {
    if (!(job.requested >> r & 1)) continue;
    const std::string& res = s_.config().resources[r];
    const Quantity d = job.demand[r];
    const ClusterConfig& k = s_.config().clusters[job.cluster];
    if (d > k.capacity[r]) {
      return absl::StrCat("exceeds_max: the job needs ", d, " ", res, "; cluster ", k.name, " has ", k.capacity[r],
                          " in all; it waits for a config change");
    }
    if (d <= s_.node(job.team).potential[r]) continue;
    // The lowest node whose own limit is below the demand, else the fleet.
    for (int a = job.team; a != kRootNode; a = s_.node(a).parent) {
      const NodeConfig& nc = s_.node(a);
      if (nc.borrow_limit[r] != kInfinite && SatAdd(nc.guaranteed[r], nc.borrow_limit[r]) < d) {
        return absl::StrCat("exceeds_max: ", nc.name, " would use ", d, " ", res, " > ", SatAdd(nc.guaranteed[r], nc.borrow_limit[r]),
                            " (", Limit(nc, r), ") even with nothing else running; it waits for a config change");
      }
    }
    return absl::StrCat("exceeds_max: the job needs ", d, " ", res, "; ", s_.node(job.team).name,
                        " can never hold more than ", s_.node(job.team).potential[r],
                        " (the fleet's capacity less what other teams keep private); it waits for a config change");
  }
  return "exceeds_max";
}

std::string Decider::BindingReason(const Job& job, ResourceMask contested) const {
  for (int r = 0; r < s_.num_resources(); ++r) {
    if (!(contested >> r & 1)) continue;
    const std::string& res = s_.config().resources[r];
    const Quantity d = job.demand[r];
    const ClusterConfig& k = s_.config().clusters[job.cluster];
    if (d > s_.free_capacity(job.cluster, r)) {
      return absl::StrCat("capacity ", k.name, " ", res, ": the job needs ", d, "; ", k.name, " has ",
                          std::max<Quantity>(0, s_.free_capacity(job.cluster, r)), " of ", k.capacity[r],
                          " free; it waits for jobs there to end");
    }
    // The lowest node on the path whose own limit g + b - u is short.
    for (int a = job.team; a != kRootNode; a = s_.node(a).parent) {
      const NodeConfig& nc = s_.node(a);
      if (nc.borrow_limit[r] != kInfinite && SatSub(SatAdd(nc.guaranteed[r], nc.borrow_limit[r]), s_.node_state(a).usage[r]) < d) {
        return absl::StrCat("borrow_limit ", nc.name, " ", res, ": ", nc.name, " would use ",
                            SatAdd(s_.node_state(a).usage[r], d), " ", res, " > ", SatAdd(nc.guaranteed[r], nc.borrow_limit[r]), " (", Limit(nc, r),
                            "); it waits for ", nc.name, "'s jobs to end");
      }
    }
    std::vector<Quantity> avail;
    s_.Available(job.team, &avail);
    const Quantity fleet = s_.node(kRootNode).guaranteed[r];
    return absl::StrCat("quota_in_use fleet ", res, ": the job needs ", d, "; ", s_.node(job.team).name, " can take ",
                        std::max<Quantity>(0, avail[r]), " more now (the fleet, all clusters: ",
                        s_.node_state(kRootNode).usage[r], " of ", fleet,
                        " in use or kept for guarantees); it waits for borrowers to leave or jobs to end");
  }
  return "waiting";
}

std::string Decider::TideGuardReason(const Job& job) const {
  const State::Tide& tide = s_.tide();
  // FitsGuards has just filled guard_usage for the present state.
  if (tide.guard_usage.size() != tide.guards.size()) return kNoRoomUnderComingTide;
  for (size_t i = 0; i < tide.guards.size(); ++i) {
    const ComingUsage& u = tide.guard_usage[i];
    const NodeConfig& coming = tide.guards[i].config.nodes[job.team];
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
  return absl::StrCat("strict_fifo: behind strict-FIFO head ", head.id, " of ", s_.node(head.team).name,
                      ", which cannot be admitted yet (see its reason)");
}

}  // namespace tidegate::core
