// The simulator's closing summary (docs/design.md §9): per leaf team GPU-hours,
// borrowed GPU-hours, wait percentiles, preemptions and lost GPU-hours; fleet
// utilisation; reclaim latency p99; job counts.
//
// Definitions (all from the decision records, nothing from inside the core):
// - GPU resources: every resource whose name after the last '/' is not cpu,
//   memory, ephemeral-storage or pods (IsGpuResource).
// - Usage: an `admit` adds replicas x per_replica (from the job's spec) to its
//   team; a `resize` changes it; a `queue` (a victim going back) or `end`
//   removes what the job held. A draining victim still holds its capacity.
// - Borrowed: per team and GPU resource, max(0, usage - guaranteed).
// - utilization = GPU-time used / GPU capacity-time over the run; null when
//   the fleet has no GPU capacity.
// - Wait = first `admit` - submission, for submitted (not adopted) jobs. Time a
//   requeued victim waits again is not counted here: that cost is in
//   preemptions and lost work. Jobs still queued at the end have no wait (they
//   are counted in jobs.queued_at_end).
// - Reclaim latency = from the first `reclaim` record for J to J's `admit`.
// - Percentiles are nearest-rank; null when there are no samples.
//
// Threading: not thread-safe; owned by one simulation.
#ifndef TIDEGATE_BROKER_SIM_SUMMARY_H_
#define TIDEGATE_BROKER_SIM_SUMMARY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "broker/core/events.h"
#include "broker/core/types.h"
#include "broker/sim/trace.h"
#include "broker/sim/usage.h"
#include "tidegate/v1/config.pb.h"

namespace tidegate::sim {

// True for GPU-like resources: the part after the last '/' is not cpu,
// memory, ephemeral-storage or pods ("gpu", "h100", "nvidia.com/gpu").
bool IsGpuResource(std::string_view resource);

struct TeamSummary {
  std::string name;
  double gpu_hours = 0;
  double borrowed_gpu_hours = 0;
  std::optional<double> wait_p50_s;
  std::optional<double> wait_p95_s;
  int64_t preemptions = 0;  // times one of its jobs was chosen as a victim.
  double lost_gpu_hours = 0;
  double grown_gpu_hours = 0;  // held by elastic replicas above their min.
};

struct JobCounts {
  int64_t submitted = 0;  // submit commands (scenario and trace).
  int64_t adopted = 0;    // jobs recorded by `adopt`.
  int64_t admitted = 0;   // submitted jobs admitted at least once.
  int64_t rejected = 0;   // `reject` records.
  int64_t queued_at_end = 0;
};

struct Summary {
  double duration_s = 0;
  std::optional<double> utilization;
  std::vector<TeamSummary> teams;  // leaf teams, config order.
  std::optional<double> reclaim_latency_p99_s;
  double grown_gpu_hours = 0;  // all teams: GPU-hours gained by elastic growth.
  double lost_gpu_hours = 0;   // all teams: GPU-hours of work lost to preemption.
  JobCounts jobs;
  std::optional<TraceStats> trace;  // with --trace only.
};

class SummaryBuilder {
 public:
  // `leaf_teams` in config order; `gpu_resources` are the resources counted.
  SummaryBuilder(std::vector<std::string> leaf_teams, std::vector<std::string> gpu_resources,
                 core::Time start);

  // Before the command is applied: who the job is and what one replica holds.
  void OnSubmit(const v1::JobSpec& spec, core::Time t);
  void OnAdopt(const v1::JobSpec& spec);

  // Every record, in order.
  void OnRecord(const core::Event& event);

  // A victim lost `lost_ms` of running; counted at its current GPU demand.
  void AddLostWork(const std::string& job, core::Time lost_ms);

  // Unknown team or resource names are ignored.
  void SetGuaranteed(const std::string& team, const std::string& resource, core::Quantity g,
                     core::Time t);
  void SetCapacity(const std::string& resource, core::Quantity capacity, core::Time t);

  // The summary of the run from start to `end`.
  Summary Finish(core::Time end, int64_t queued_at_end);

 private:
  struct JobInfo {
    int team = -1;                             // leaf index, -1 if not a leaf.
    std::vector<core::Quantity> per_replica;   // per GPU resource.
    int64_t holding = 0;                       // replicas that hold capacity.
    int64_t elastic_min = 0;                   // > 0 for elastic jobs.
    core::Time held_since = 0;                 // when `holding` last changed.
    core::Time submitted_at = -1;              // -1 for adopted jobs.
    core::Time reclaim_since = -1;             // first reclaim record pending.
    bool admitted_once = false;
    bool done = false;                         // ended or rejected.
  };
  struct TeamStats {
    std::vector<double> waits_s;
    int64_t preemptions = 0;
    double lost_gpu_ms = 0;
    double grown_gpu_ms = 0;
  };

  JobInfo& Register(const v1::JobSpec& spec);
  void Hold(JobInfo& job, int64_t replicas, core::Time t);

  std::vector<std::string> teams_;
  absl::flat_hash_map<std::string, int> team_index_;
  absl::flat_hash_map<std::string, size_t> resource_index_;
  size_t resources_;
  core::Time start_;
  UsageIntegrator usage_;
  absl::flat_hash_map<std::string, JobInfo> jobs_;
  std::vector<TeamStats> stats_;
  std::vector<double> reclaim_latencies_s_;
  JobCounts counts_;
};

}  // namespace tidegate::sim

#endif  // TIDEGATE_BROKER_SIM_SUMMARY_H_
