// The SLURM driver: a ClusterDriver over the SLURM commands of
// 22.05 (squeue/sinfo --json, scontrol, scancel), run as the agent's user
// (root or SlurmUser, so it may release, hold and update any job).
//
// Mapping of a job (squeue --json) to a broker JobSpec:
//   id "slurm:<job_id>", team = account, cluster = the agent's cluster,
//   replicas = node count (gres per node) or task count (gres per task), 1 for
//   gres per job; per_replica {resource: count} where resource is the gres
//   type's mapping (--gres-resource TYPE=RESOURCE) or "gpu"; priority = -nice;
//   requeue = the job's requeue flag; labels user, name, partition.
// Only jobs that ask for gres are the broker's; the others are left alone.
// Bad input (no account, a gres other than gpu, an array or
// heterogeneous job) gives a ClusterJob with `problem` set: it stays held.
// Waiting = PENDING with reason JobHeldUser or JobHeldAdmin.
//
// Threading: one caller (the agent's thread).
#ifndef TIDEGATE_ADAPTERS_SLURM_SLURM_DRIVER_H_
#define TIDEGATE_ADAPTERS_SLURM_SLURM_DRIVER_H_

#include <map>
#include <string>
#include <vector>

#include "adapters/agent/driver.h"

namespace tidegate::adapters {

struct SlurmOptions {
  std::string cluster;                              // the broker's name for it.
  std::vector<std::string> partitions;              // empty = all.
  std::map<std::string, std::string> type_resource;  // gres type -> broker resource; others "gpu".
  bool requeue = true;                              // stop requeueable victims with requeuehold.
};

// Runs argv (no shell); stdout on success, else an error with stderr.
absl::StatusOr<std::string> RunCommand(const std::vector<std::string>& argv);

// Pure parsing, for tests: `squeue --json` and `sinfo --json` output.
absl::StatusOr<std::vector<ClusterJob>> ParseSqueue(const std::string& json, const SlurmOptions& options);
absl::StatusOr<std::map<std::string, int64_t>> ParseSinfo(const std::string& json, const SlurmOptions& options);

class SlurmDriver : public ClusterDriver {
 public:
  explicit SlurmDriver(SlurmOptions options) : options_(std::move(options)) {}

  absl::StatusOr<ClusterView> Observe() override;
  absl::Status Start(const std::string& job) override;
  absl::Status Signal(const std::string& job) override;
  absl::Status Stop(const std::string& job) override;
  absl::Status Requeue(const std::string& job) override;
  absl::Status Hold(const std::string& job) override;
  absl::Status Annotate(const std::string& job, const std::string& text) override;

 private:
  SlurmOptions options_;
  std::map<std::string, bool> requeueable_;  // by broker id, from the last Observe.
  std::map<std::string, int64_t> restarts_;   // by broker id: times SLURM requeued it.
};

}  // namespace tidegate::adapters

#endif  // TIDEGATE_ADAPTERS_SLURM_SLURM_DRIVER_H_
