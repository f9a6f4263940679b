#include "broker/sim/summary.h"

#include "broker/sim/percentile.h"

namespace tidegate::sim {
namespace {

constexpr double kMsPerHour = 3600.0 * 1000.0;

double Seconds(core::Time ms) { return static_cast<double>(ms) / 1000.0; }

}  // namespace

bool IsGpuResource(std::string_view resource) {
  const size_t slash = resource.rfind('/');
  const std::string_view base =
      slash == std::string_view::npos ? resource : resource.substr(slash + 1);
  return base != "cpu" && base != "memory" && base != "ephemeral-storage" && base != "pods";
}

SummaryBuilder::SummaryBuilder(std::vector<std::string> leaf_teams,
                               std::vector<std::string> gpu_resources, core::Time start)
    : teams_(std::move(leaf_teams)),
      resources_(gpu_resources.size()),
      start_(start),
      usage_(teams_.size(), gpu_resources.size(), start),
      stats_(teams_.size()) {
  for (size_t i = 0; i < teams_.size(); ++i) team_index_[teams_[i]] = static_cast<int>(i);
  for (size_t i = 0; i < gpu_resources.size(); ++i) resource_index_[gpu_resources[i]] = i;
}

SummaryBuilder::JobInfo& SummaryBuilder::Register(const v1::JobSpec& spec) {
  auto [it, inserted] = jobs_.try_emplace(spec.job());
  JobInfo& job = it->second;
  // A repeated submit of a live job is idempotent in the core: keep its info.
  if (!inserted && !job.done) return job;
  job = JobInfo{};
  auto team = team_index_.find(spec.team());
  job.team = team == team_index_.end() ? -1 : team->second;
  job.per_replica.assign(resources_, 0);
  job.elastic_min = spec.elastic().max() > 0 ? spec.elastic().min() : 0;
  for (const auto& [name, quantity] : spec.per_replica()) {
    auto r = resource_index_.find(name);
    if (r != resource_index_.end()) job.per_replica[r->second] = quantity;
  }
  return job;
}

void SummaryBuilder::OnSubmit(const v1::JobSpec& spec, core::Time t) {
  ++counts_.submitted;
  JobInfo& job = Register(spec);
  if (job.submitted_at < 0 && !job.admitted_once) job.submitted_at = t;
}

void SummaryBuilder::OnAdopt(const v1::JobSpec& spec) {
  ++counts_.adopted;
  JobInfo& job = Register(spec);
  job.submitted_at = -1;
}

void SummaryBuilder::Hold(JobInfo& job, int64_t replicas, core::Time t) {
  if (job.team >= 0 && job.elastic_min > 0 && job.holding > job.elastic_min) {
    core::Quantity gpus = 0;
    for (core::Quantity q : job.per_replica) gpus += q;
    stats_[job.team].grown_gpu_ms += static_cast<double>(gpus) *
                                     static_cast<double>(job.holding - job.elastic_min) *
                                     static_cast<double>(t - job.held_since);
  }
  job.held_since = t;
  if (job.team >= 0 && replicas != job.holding) {
    for (size_t r = 0; r < resources_; ++r) {
      if (job.per_replica[r] == 0) continue;
      usage_.AddUsage(static_cast<size_t>(job.team), r,
                      (replicas - job.holding) * job.per_replica[r], t);
    }
  }
  job.holding = replicas;
}

void SummaryBuilder::OnRecord(const core::Event& e) {
  using core::EventType;
  if (e.type == EventType::kReject) ++counts_.rejected;
  auto it = jobs_.find(e.job);
  if (it == jobs_.end()) return;  // e.g. an error about an unknown job.
  JobInfo& job = it->second;
  switch (e.type) {
    case EventType::kAdmit:
      Hold(job, e.replicas, e.at);
      if (!e.adopted && !job.admitted_once) {
        job.admitted_once = true;
        ++counts_.admitted;
        if (job.team >= 0 && job.submitted_at >= 0) {
          stats_[job.team].waits_s.push_back(Seconds(e.at - job.submitted_at));
        }
      }
      if (job.reclaim_since >= 0) {
        reclaim_latencies_s_.push_back(Seconds(e.at - job.reclaim_since));
        job.reclaim_since = -1;
      }
      break;
    case EventType::kResize:
      Hold(job, e.to, e.at);
      break;
    case EventType::kQueue:
      Hold(job, 0, e.at);
      break;
    case EventType::kPreempt:
      if (job.team >= 0) ++stats_[job.team].preemptions;
      break;
    case EventType::kReclaim:
      if (job.reclaim_since < 0) job.reclaim_since = e.at;
      break;
    case EventType::kEnd:
    case EventType::kReject:
      Hold(job, 0, e.at);
      job.done = true;
      job.reclaim_since = -1;
      break;
    case EventType::kError:
      break;
  }
}

void SummaryBuilder::AddLostWork(const std::string& job_id, core::Time lost_ms) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end() || it->second.team < 0 || lost_ms <= 0) return;
  const JobInfo& job = it->second;
  core::Quantity gpus = 0;
  for (core::Quantity q : job.per_replica) gpus += q;
  stats_[job.team].lost_gpu_ms +=
      static_cast<double>(gpus) * static_cast<double>(job.holding) * static_cast<double>(lost_ms);
}

void SummaryBuilder::SetGuaranteed(const std::string& team, const std::string& resource,
                                   core::Quantity g, core::Time t) {
  auto ti = team_index_.find(team);
  auto ri = resource_index_.find(resource);
  if (ti == team_index_.end() || ri == resource_index_.end()) return;
  usage_.SetGuaranteed(static_cast<size_t>(ti->second), ri->second, g, t);
}

void SummaryBuilder::SetCapacity(const std::string& resource, core::Quantity capacity,
                                 core::Time t) {
  auto ri = resource_index_.find(resource);
  if (ri == resource_index_.end()) return;
  usage_.SetCapacity(ri->second, capacity, t);
}

Summary SummaryBuilder::Finish(core::Time end, int64_t queued_at_end) {
  for (auto& [id, job] : jobs_) {
    if (!job.done) Hold(job, job.holding, end);  // counts growth up to the end.
  }
  usage_.Flush(end);
  Summary summary;
  summary.duration_s = Seconds(end - start_);
  if (usage_.FleetCapacity() > 0) {
    summary.utilization = usage_.FleetUsed() / usage_.FleetCapacity();
  }
  for (size_t i = 0; i < teams_.size(); ++i) {
    TeamSummary team;
    team.name = teams_[i];
    team.gpu_hours = usage_.TeamUsed(i) / kMsPerHour;
    team.borrowed_gpu_hours = usage_.TeamBorrowed(i) / kMsPerHour;
    team.wait_p50_s = NearestRankPercentile(stats_[i].waits_s, 50);
    team.wait_p95_s = NearestRankPercentile(stats_[i].waits_s, 95);
    team.preemptions = stats_[i].preemptions;
    team.lost_gpu_hours = stats_[i].lost_gpu_ms / kMsPerHour;
    team.grown_gpu_hours = stats_[i].grown_gpu_ms / kMsPerHour;
    summary.grown_gpu_hours += team.grown_gpu_hours;
    summary.lost_gpu_hours += team.lost_gpu_hours;
    summary.teams.push_back(std::move(team));
  }
  summary.reclaim_latency_p99_s = NearestRankPercentile(reclaim_latencies_s_, 99);
  summary.jobs = counts_;
  summary.jobs.queued_at_end = queued_at_end;
  return summary;
}

}  // namespace tidegate::sim
