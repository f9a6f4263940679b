#include "broker/core/broker.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "broker/core/decider.h"
#include "broker/core/fair_share.h"
#include "broker/core/job_spec.h"
#include "broker/core/reasons.h"
#include "broker/core/reasons_now.h"
#include "broker/core/state.h"
#include "broker/core/tide.h"
#include "broker/core/tide_reclaim.h"

namespace tidegate::core {

const char* EventTypeName(EventType type) {
  switch (type) {
    case EventType::kAdmit: return "admit";
    case EventType::kQueue: return "queue";
    case EventType::kReclaim: return "reclaim";
    case EventType::kPreempt: return "preempt";
    case EventType::kResize: return "resize";
    case EventType::kEnd: return "end";
    case EventType::kReject: return "reject";
    case EventType::kError: return "error";
  }
  return "error";
}

Broker::Broker(std::unique_ptr<State> state) : state_(std::move(state)) {}
Broker::~Broker() = default;

absl::StatusOr<std::unique_ptr<Broker>> Broker::Create(const v1::Config& config, Time now) {
  auto compiled = CompileConfig(config);
  if (compiled.ok() && HasTide(config)) {
    const TideCalendar tide = compiled->tide;
    compiled = CompileConfig(EffectiveConfig(config, tide, now), tide);
  }
  if (!compiled.ok()) return compiled.status();
  auto state = std::make_unique<State>(*std::move(compiled), config);
  state->set_now(now);
  state->tide().apply_cursor = now;
  state->tide().lead_cursor = now;
  ResetTide(*state);
  return std::unique_ptr<Broker>(new Broker(std::move(state)));
}

std::vector<Event> Broker::Apply(const internal::v1::Command& command, Time now) {
  State& s = *state_;
  s.out().clear();
  s.ClearQuietChanges();
  Decider adm(s);
  const Time t = std::max(now, s.now());
  if (command.kind_case() == internal::v1::Command::kAckResize) {
    // An ack at its deadline's instant is in time: it goes before the work
    // due at that instant (which would enforce or withdraw the resize).
    adm.RunDue(t - 1);
    s.set_now(t);
    adm.AckResize(command.ack_resize());
  }
  adm.RunDue(t);
  s.PruneEnded(s.now(), s.config().policy.ended_job_retention_s * kMillisPerSecond);
  switch (command.kind_case()) {
    case internal::v1::Command::kSubmit: adm.Submit(command.submit()); break;
    case internal::v1::Command::kAdopt: adm.Adopt(command.adopt()); break;
    case internal::v1::Command::kFinish: adm.Finish(command.finish()); break;
    case internal::v1::Command::kCheckpoint: adm.Checkpoint(command.checkpoint()); break;
    case internal::v1::Command::kSetQuota: adm.SetQuota(command.set_quota()); break;
    case internal::v1::Command::kSetCapacity: adm.SetCapacity(command.set_capacity()); break;
    case internal::v1::Command::kApplyConfig: adm.ApplyConfig(command.apply_config()); break;
    case internal::v1::Command::kVacate: adm.Vacate(command.vacate()); break;
    case internal::v1::Command::kAckResize: break;  // above.
    case internal::v1::Command::kTick: break;
    case internal::v1::Command::KIND_NOT_SET: adm.Error("", "command: no command given"); break;
  }
  adm.Cycle();
  adm.AnnounceQueued();
  adm.DropStaleTimers();
  std::vector<Event> out;
  out.swap(s.out());
  return out;
}

std::optional<std::vector<Event>> Broker::SubmitWithoutEffect(const v1::JobSpec& spec, Time now) const {
  const State& s = *state_;
  const Time at = std::max(now, s.now());
  auto parsed = ParseSubmit(s.config(), spec, at);
  std::vector<Event> out;
  if (!parsed.ok()) {
    out.push_back(RejectEvent(spec, parsed.status(), at));
    return out;
  }
  const int existing = s.FindJob(parsed->id);
  const std::string* known = existing >= 0 ? &s.job(existing).spec_bytes : nullptr;
  const EndedJob* ended = nullptr;
  if (!known) {
    // A retained ended job answers a resubmission with its final state.
    ended = s.FindEnded(parsed->id);
    if (ended && ended->state != v1::JOB_STATE_ENDED) ended = nullptr;
    if (ended) known = &ended->spec_bytes;
  }
  if (!known) return std::nullopt;
  if (*known != parsed->spec_bytes) {
    Event e;
    e.type = EventType::kError;
    e.job = parsed->id;
    e.reason = ended ? EndedDifferentSpecReason(parsed->id, *ended, s.config().policy.ended_job_retention_s)
                     : DifferentSpecReason(parsed->id);
    e.at = at;
    out.push_back(std::move(e));
  }
  return out;
}

std::optional<Time> Broker::NextDeadline() const {
  // Apply pops stale timers before it returns, so the top is real work.
  std::optional<Time> next = Decider(*state_).NextTideEvent();
  if (!state_->timers().empty() && (!next || state_->timers().top().at < *next)) next = state_->timers().top().at;
  return next;
}

std::optional<JobView> Broker::GetJob(std::string_view id) const {
  const State& s = *state_;
  const int j = s.FindJob(id);
  if (j < 0) {
    const EndedJob* e = s.FindEnded(id);
    if (!e) return std::nullopt;
    JobView v;
    v.id = std::string(id);
    v.team = e->team;
    v.cluster = e->cluster;
    v.state = e->state;
    v.replicas = e->replicas;
    v.priority = e->priority;
    v.created_at = e->created_at;
    v.last_admitted_at = e->last_admitted_at;
    v.ended_at = e->ended_at;
    v.demand = e->demand;
    v.reason = e->reason;
    v.spec_bytes = e->spec_bytes;
    return v;
  }
  const Job& job = s.job(j);
  JobView v;
  v.id = job.id;
  v.team = s.node(job.team).name;
  v.cluster = s.config().clusters[job.cluster].name;
  v.state = job.phase == Phase::kQueued     ? v1::JOB_STATE_QUEUED
            : job.phase == Phase::kAdmitted ? v1::JOB_STATE_ADMITTED
                                            : v1::JOB_STATE_DRAINING;
  v.replicas = job.replicas;
  v.priority = job.priority;
  v.created_at = job.created_at;
  v.admitted_at = job.admitted_at;
  v.last_admitted_at = job.last_admitted_at;
  v.borrowing = job.borrowing;
  if (!job.borrowed.empty()) {
    for (auto& [name, q] : s.Named(job.borrowed, job.requested)) {
      if (q > 0) v.borrowed.emplace_back(std::move(name), q);
    }
  }
  v.demand = s.Named(job.demand, job.requested);
  v.reason = ReasonNow(s, job);
  v.spec_bytes = job.spec_bytes;
  v.epoch = job.epoch;
  v.resize_from = job.resize_from;
  v.resize_to = job.resize_to;
  v.resize_deadline = job.resize_deadline;
  v.resize_reason = job.resize_reason;
  return v;
}

std::optional<TeamView> Broker::GetTeam(std::string_view name) const {
  const State& s = *state_;
  auto it = s.config().node_index.find(AbslView(name));
  if (it == s.config().node_index.end()) return std::nullopt;
  const int n = it->second;
  const NodeConfig& nc = s.node(n);
  TeamView v;
  v.name = nc.name;
  v.parent = nc.parent == kRootNode ? "" : s.node(nc.parent).name;
  v.leaf = nc.leaf;
  v.weight = nc.weight_value;
  if (n != kRootNode) {
    const Share sh = ShareOf(s, n);
    v.share = sh.infinite ? std::numeric_limits<double>::infinity() : ToDouble(sh.value);
  }
  v.running_jobs = static_cast<int64_t>(s.node_state(n).running.size());
  v.queued_jobs = static_cast<int64_t>(s.node_state(n).pending.size());
  for (int r = 0; r < s.num_resources(); ++r) {
    TeamResourceView rv;
    rv.resource = s.config().resources[r];
    rv.guaranteed = nc.guaranteed[r];
    rv.borrow_limit = nc.borrow_limit[r];
    rv.lend_limit = nc.lend_limit[r];
    rv.used = s.node_state(n).usage[r];
    rv.borrowed = std::max<Quantity>(0, rv.used - rv.guaranteed);
    rv.queued = s.node_state(n).queued[r];
    v.resources.push_back(rv);
  }
  if (n != kRootNode) {
    const v1::Team& team = s.source().teams(n - 1);  // nodes follow config order after the root.
    if (s.config().tide.teams[n - 1].empty()) {
      // No rules: the base entries are in force and never change. The
      // one-team config below would copy the team twice, on every batch
      // that touches it.
      v.quota.insert(team.quota().begin(), team.quota().end());
      return v;
    }
    v1::Config one;
    *one.add_teams() = team;
    const TideCalendar one_tide{{s.config().tide.teams[n - 1]}};
    const v1::Config now_cfg = EffectiveConfig(one, one_tide, s.now());
    for (const auto& [res, q] : now_cfg.teams(0).quota()) v.quota[res] = q;
    v.tide.assign(team.tide().begin(), team.tide().end());
    if (auto next = NextTeamTideBoundary(one_tide.teams[0], s.now())) {
      v.next_tide_change = *next;
      v.next_tide_lead = *next - s.config().policy.tide_lead_s * kMillisPerSecond;
      const v1::Config next_cfg = EffectiveConfig(one, one_tide, *next);
      for (const auto& [res, q] : next_cfg.teams(0).quota()) v.next_tide_quota[res] = q;
    }
  }
  return v;
}

std::vector<JobView> Broker::ListJobs() const {
  std::vector<std::string> ids;
  state_->ForEachJob([&](int j) { ids.push_back(state_->job(j).id); });
  std::sort(ids.begin(), ids.end());
  std::vector<JobView> out;
  out.reserve(ids.size());
  for (const auto& id : ids) out.push_back(*GetJob(id));
  return out;
}

std::vector<JobView> Broker::ListEndedJobs() const {
  std::vector<JobView> out;
  out.reserve(state_->ended_count());
  for (const auto& [id, e] : state_->EndedById()) out.push_back(*GetJob(*id));
  return out;
}

const std::vector<std::string>& Broker::QuietlyChangedIds() const { return state_->quiet_changes(); }

std::vector<std::string> Broker::ClusterNames() const {
  std::vector<std::string> names;
  for (const auto& c : state_->config().clusters) names.push_back(c.name);
  return names;
}

Quantity Broker::ClusterCapacity(std::string_view cluster, std::string_view resource) const {
  const auto& c = state_->config();
  auto k = c.cluster_index.find(AbslView(cluster));
  auto r = c.resource_index.find(AbslView(resource));
  if (k == c.cluster_index.end() || r == c.resource_index.end()) return 0;
  return c.clusters[k->second].capacity[r->second];
}

Quantity Broker::ClusterUsed(std::string_view cluster, std::string_view resource) const {
  const auto& c = state_->config();
  auto k = c.cluster_index.find(AbslView(cluster));
  auto r = c.resource_index.find(AbslView(resource));
  if (k == c.cluster_index.end() || r == c.resource_index.end()) return 0;
  return state_->cluster_used(k->second, r->second);
}

const std::vector<std::string>& Broker::Warnings() const { return state_->config().warnings; }

std::vector<std::string> Broker::TeamNames() const {
  std::vector<std::string> names;
  for (size_t n = 1; n < state_->config().nodes.size(); ++n) names.push_back(state_->node(n).name);
  return names;
}

const std::vector<std::string>& Broker::ResourceNames() const { return state_->config().resources; }

Quantity Broker::TotalCapacity(std::string_view resource) const {
  auto it = state_->config().resource_index.find(AbslView(resource));
  if (it == state_->config().resource_index.end()) return 0;
  return state_->node(kRootNode).guaranteed[it->second];
}

size_t Broker::JobCount() const { return state_->job_count(); }

uint64_t Broker::QuotaGeneration() const { return state_->quota_generation(); }

std::shared_ptr<const WaitPicture> Broker::TakeWaitPicture(const WaitPicture* prev) const {
  return WaitPicture::Take(*state_, prev);
}

}  // namespace tidegate::core
