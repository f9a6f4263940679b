#include "broker/http/broker_metrics.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"

namespace tidegate::http {
namespace {

using Type = ExpositionWriter::Type;

constexpr char kLeaderHelp[] =
    "1 on the broker that writes the ledger (the leader; a SQLite broker always), 0 on a standby.";
constexpr char kEpochHelp[] = "PostgreSQL ledger: the epoch of the leader's lease (this broker's when it leads).";

// Reclaim waits for the victims' grace period (30 s by default), so its
// buckets reach well past the alert's grace + 1 minute.
std::vector<double> ReclaimBounds() { return {0.1, 1, 5, 10, 30, 60, 90, 120, 300, 600, 1800, 3600}; }

// A reclaimed job is admitted within its victims' grace plus broker time;
// more than this many pending entries means admissions were lost with a
// refused batch (the core reloaded), so the map starts over.
constexpr size_t kMaxReclaiming = 100000;

}  // namespace

BrokerMetrics::BrokerMetrics()
    : commit_seconds_({0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}),
      batch_commands_({1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}),
      reclaim_seconds_(ReclaimBounds()),
      reclaim_beyond_grace_seconds_({0.1, 1, 5, 10, 30, 60, 120, 300, 600, 1800}) {}

void BrokerMetrics::ObserveBatch(const service::BatchStats& stats) {
  std::lock_guard<std::mutex> lock(mu_);
  commit_seconds_.Observe(stats.commit_seconds);
  if (!stats.committed || stats.model == nullptr) {
    ++commit_failures_;  // nothing of it happened: no decisions counted
    return;
  }
  batch_commands_.Observe(static_cast<double>(stats.commands));
  if (stats.events == nullptr) return;
  const service::ReadModel& model = *stats.model;
  const auto& policy = model.config().policy();
  const double default_grace_s = policy.has_default_grace_s() ? static_cast<double>(policy.default_grace_s()) : 30;
  if (reclaiming_.size() > kMaxReclaiming) reclaiming_.clear();
  for (const auto& events : *stats.events) {
    for (const core::Event& e : events) {
      const std::string team = model.FindTeam(e.team) != nullptr ? e.team : std::string();
      ++decisions_[{core::EventTypeName(e.type), team}];
      switch (e.type) {
        case core::EventType::kReclaim: {
          if (reclaiming_.contains(e.job)) break;  // victims chosen again: the wait began earlier
          double grace_s = 0;
          for (const std::string& victim : e.victims) {
            auto info = model.FindJob(victim);
            const double g = info != nullptr && info->spec().has_grace_s()
                                 ? static_cast<double>(info->spec().grace_s())
                                 : default_grace_s;
            grace_s = std::max(grace_s, g);
          }
          reclaiming_[e.job] = Reclaiming{stats.now_ms, grace_s};
          break;
        }
        case core::EventType::kAdmit: {
          auto it = reclaiming_.find(e.job);
          if (it == reclaiming_.end()) break;
          const double waited_s = static_cast<double>(stats.now_ms - it->second.since_ms) / 1000.0;
          reclaim_seconds_.Observe(waited_s);
          reclaim_beyond_grace_seconds_.Observe(std::max(0.0, waited_s - it->second.grace_s));
          reclaiming_.erase(it);
          break;
        }
        case core::EventType::kEnd:
        case core::EventType::kReject:
          reclaiming_.erase(e.job);
          break;
        default:
          break;
      }
    }
  }
}

// About 120 lines: the exposition, family by family in the order /metrics
// shows them; each family is a few lines, and the list reads best whole.
std::string BrokerMetrics::Render(const service::ReadModel& model, const LiveFigures& live) const {
  ExpositionWriter w;
  const v1::Config& config = model.config();

  // Per team and resource, from the read model (read_model_teams.h rules).
  const std::vector<v1::TeamInfo> teams = model.Teams();
  w.Family("tidegate_team_info", Type::kGauge,
           "Teams of the config (always 1); parent is empty for a top-level team, leaf says whether jobs "
           "belong to it. An inner team's figures include its subtree.");
  for (const auto& t : teams) {
    w.Sample("tidegate_team_info", {{"team", t.name()}, {"parent", t.parent()}, {"leaf", t.leaf() ? "true" : "false"}},
             1);
  }
  struct Field {
    const char* name;
    const char* help;
    int64_t (*get)(const v1::TeamResource&);
  };
  const Field fields[] = {
      {"tidegate_team_guaranteed", "Guarantee in force now (tide included), in the resource's own unit.",
       [](const v1::TeamResource& r) { return r.guaranteed(); }},
      {"tidegate_team_used", "What the team's jobs hold now, in the resource's own unit.",
       [](const v1::TeamResource& r) { return r.used(); }},
      {"tidegate_team_borrowed", "Usage above the guarantee (reclaimable), in the resource's own unit.",
       [](const v1::TeamResource& r) { return r.borrowed(); }},
      {"tidegate_team_lent", "Of the guarantee, what teams outside it use now, in the resource's own unit.",
       [](const v1::TeamResource& r) { return r.lent(); }},
      {"tidegate_team_queued", "Demand of the team's waiting jobs, in the resource's own unit.",
       [](const v1::TeamResource& r) { return r.queued(); }},
  };
  for (const Field& f : fields) {
    w.Family(f.name, Type::kGauge, f.help);
    for (const auto& t : teams) {
      for (const auto& r : t.resources()) {
        w.Sample(f.name, {{"team", t.name()}, {"resource", r.resource()}}, static_cast<double>(f.get(r)));
      }
    }
  }
  w.Family("tidegate_team_running_jobs", Type::kGauge, "Jobs holding capacity (admitted or draining).");
  for (const auto& t : teams) w.Sample("tidegate_team_running_jobs", {{"team", t.name()}}, t.running_jobs());
  w.Family("tidegate_team_queued_jobs", Type::kGauge, "Jobs waiting for admission (the queue length).");
  for (const auto& t : teams) w.Sample("tidegate_team_queued_jobs", {{"team", t.name()}}, t.queued_jobs());

  // One pass over the live jobs: the oldest wait per team (and its
  // ancestors) and the resize requests not yet acknowledged.
  absl::flat_hash_map<std::string, std::string> parent_of;
  for (const auto& t : config.teams()) parent_of[t.name()] = t.parent();
  absl::flat_hash_map<std::string, int64_t> oldest_created;
  int64_t resizes_pending = 0;
  for (const auto& job : model.Jobs("", v1::JOB_STATE_UNSPECIFIED)) {
    if (job->has_resize()) ++resizes_pending;
    if (job->state() != v1::JOB_STATE_QUEUED) continue;
    absl::flat_hash_set<std::string> seen;  // a malformed tree must not loop
    // A requeued victim keeps its created_at (its place in the queue) but
    // has not waited since then: count from its latest admission instead.
    const int64_t waiting_since = std::max(job->created_at_ms(), job->last_admitted_at_ms());
    for (std::string team = job->team(); !team.empty() && seen.insert(team).second;) {
      auto [it, fresh] = oldest_created.try_emplace(team, waiting_since);
      if (!fresh) it->second = std::min(it->second, waiting_since);
      auto parent = parent_of.find(team);
      team = parent == parent_of.end() ? std::string() : parent->second;
    }
  }
  w.Family("tidegate_team_oldest_queued_seconds", Type::kGauge,
           "How long the team's longest-waiting job has waited (since submission, or since its latest admission for a requeued job); 0 with an empty queue.");
  for (const auto& t : teams) {
    auto it = oldest_created.find(t.name());
    const double age = it == oldest_created.end() ? 0 : std::max<int64_t>(0, live.now_ms - it->second) / 1000.0;
    w.Sample("tidegate_team_oldest_queued_seconds", {{"team", t.name()}}, age);
  }
  w.Family("tidegate_resize_requests_pending", Type::kGauge,
           "Elastic resize requests sent and not yet acknowledged by their framework.");
  w.Sample("tidegate_resize_requests_pending", {}, static_cast<double>(resizes_pending));

  w.Family("tidegate_open_streams", Type::kGauge, "Open server streams (WaitAdmission, WatchResizes, agent Connect).");
  w.Sample("tidegate_open_streams", {}, static_cast<double>(live.open_streams));
  w.Family("tidegate_connected_agents", Type::kGauge, "Agents connected per cluster of the config (0 or 1).");
  for (const auto& c : config.clusters()) {
    const bool connected = std::find(live.connected_clusters.begin(), live.connected_clusters.end(), c.name()) !=
                           live.connected_clusters.end();
    w.Sample("tidegate_connected_agents", {{"cluster", c.name()}}, connected ? 1 : 0);
  }
  w.Family("tidegate_leader", Type::kGauge, kLeaderHelp);
  w.Sample("tidegate_leader", {}, 1);
  if (live.lease_epoch > 0) {
    w.Family("tidegate_lease_epoch", Type::kGauge, kEpochHelp);
    w.Sample("tidegate_lease_epoch", {}, static_cast<double>(live.lease_epoch));
  }
  w.Family("tidegate_ledger_writable", Type::kGauge, "1 while ledger commits succeed, 0 while writes are refused.");
  w.Sample("tidegate_ledger_writable", {}, live.ledger_writable ? 1 : 0);
  w.Family("tidegate_ledger_lost_commits", Type::kGauge,
           "1 once the ledger was found to end before what was acknowledged; writes stay refused until a restart.");
  w.Sample("tidegate_ledger_lost_commits", {}, live.ledger_lost_commits ? 1 : 0);
  w.Family("tidegate_writer_alive", Type::kGauge, "1 while the writer thread keeps waking up (at least every tick).");
  w.Sample("tidegate_writer_alive", {}, live.writer_alive ? 1 : 0);
  // A failed capture loses nothing (the journal holds it), but while they
  // keep failing a restart replays ever more of the journal.
  w.Family("tidegate_snapshot_failures_total", Type::kCounter,
           "Periodic snapshots whose capture or write failed (each retried after another --snapshot-every entries).");
  w.Sample("tidegate_snapshot_failures_total", {}, static_cast<double>(live.snapshot_failures));
  w.Family("tidegate_journal_seq", Type::kGauge, "Sequence number of the latest published journal entry.");
  w.Sample("tidegate_journal_seq", {}, static_cast<double>(model.seq()));
  w.Family("tidegate_http_watch_requests", Type::kGauge, "Web view requests waiting for the next change.");
  w.Sample("tidegate_http_watch_requests", {}, static_cast<double>(live.watch_requests));

  std::lock_guard<std::mutex> lock(mu_);
  w.Family("tidegate_decisions_total", Type::kCounter,
           "Decisions and state changes by type (admit, queue, reclaim, preempt, resize, end, reject, error) and "
           "team; team is empty for a team the config does not have.");
  for (const auto& [key, count] : decisions_) {
    w.Sample("tidegate_decisions_total", {{"type", key.first}, {"team", key.second}}, static_cast<double>(count));
  }
  w.Family("tidegate_commit_failures_total", Type::kCounter, "Group commits the ledger refused.");
  w.Sample("tidegate_commit_failures_total", {}, static_cast<double>(commit_failures_));
  w.Family("tidegate_commit_duration_seconds", Type::kHistogram, "Time of one journal group commit.");
  w.HistogramSamples("tidegate_commit_duration_seconds", {}, commit_seconds_);
  w.Family("tidegate_commit_batch_commands", Type::kHistogram, "Commands per committed group commit.");
  w.HistogramSamples("tidegate_commit_batch_commands", {}, batch_commands_);
  w.Family("tidegate_reclaim_duration_seconds", Type::kHistogram,
           "From a job's reclaim or preemption decision to its admission.");
  w.HistogramSamples("tidegate_reclaim_duration_seconds", {}, reclaim_seconds_);
  w.Family("tidegate_reclaim_beyond_grace_seconds", Type::kHistogram,
           "Reclaim duration minus the longest grace period of its victims: the broker's own delay.");
  w.HistogramSamples("tidegate_reclaim_beyond_grace_seconds", {}, reclaim_beyond_grace_seconds_);
  return w.text();
}

std::string RenderStandbyMetrics(int64_t lease_epoch, bool database_reachable) {
  ExpositionWriter w;
  w.Family("tidegate_leader", Type::kGauge, kLeaderHelp);
  w.Sample("tidegate_leader", {}, 0);
  w.Family("tidegate_lease_epoch", Type::kGauge, kEpochHelp);
  w.Sample("tidegate_lease_epoch", {}, static_cast<double>(lease_epoch));
  w.Family("tidegate_standby_database_reachable", Type::kGauge,
           "A standby: 1 while it reaches the PostgreSQL ledger (it can take over), else 0.");
  w.Sample("tidegate_standby_database_reachable", {}, database_reachable ? 1 : 0);
  return w.text();
}

}  // namespace tidegate::http
