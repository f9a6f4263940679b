// What a cluster agent needs from its cluster (docs/design.md §1 "adapters are
// drivers, not deciders"): observe jobs and capacity, let a job run, signal
// and stop a victim, and show a user why a job waits. One implementation per
// cluster kind (adapters/slurm, adapters/sim); the Agent (agent.h) holds the
// broker protocol and is the same for all.
//
// Every call is idempotent: starting a job that runs, or stopping one that is
// gone, is OK.
#ifndef TIDEGATE_ADAPTERS_AGENT_DRIVER_H_
#define TIDEGATE_ADAPTERS_AGENT_DRIVER_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tidegate/v1/config.pb.h"

namespace tidegate::adapters {

enum class JobPhase {
  kWaiting,  // held: waits for the broker's admission.
  kPending,  // not held, not running yet: the cluster will start it.
  kRunning,  // holds capacity (running, completing, suspended).
  kEnded,    // will not run again.
};

struct ClusterJob {
  std::string id;               // the broker's id, e.g. "slurm:42".
  JobPhase phase = JobPhase::kWaiting;
  v1::JobSpec spec;             // valid only when `problem` is empty.
  std::string problem;          // why it cannot go to the broker (bad input).
  std::string note;             // the annotation the user sees now.
  std::string state;            // the cluster's word for its state, for logs.
};

struct ClusterView {
  std::map<std::string, int64_t> capacity;  // resource -> quantity, usable now.
  std::vector<ClusterJob> jobs;             // jobs the agent manages.
};

class ClusterDriver {
 public:
  virtual ~ClusterDriver() = default;
  // The cluster now. An error (the scheduler is down) changes nothing: the
  // agent keeps its last view and retries with backoff.
  virtual absl::StatusOr<ClusterView> Observe() = 0;
  // Lets an admitted job run (SLURM: scontrol release).
  virtual absl::Status Start(const std::string& job) = 0;
  // Asks a victim to stop (SLURM: SIGTERM to the batch script).
  virtual absl::Status Signal(const std::string& job) = 0;
  // The grace period is over: stop it now, requeued when the cluster allows.
  virtual absl::Status Stop(const std::string& job) = 0;
  // Puts a victim that ended during its grace period back in the queue,
  // held (SLURM: scontrol requeuehold). UNIMPLEMENTED where the cluster cannot.
  virtual absl::Status Requeue(const std::string& job) = 0;
  // Puts a waiting job back on hold (it was released outside the broker).
  virtual absl::Status Hold(const std::string& job) = 0;
  // Shows `text` to the job's owner (SLURM: the job's comment).
  virtual absl::Status Annotate(const std::string& job, const std::string& text) = 0;
};

}  // namespace tidegate::adapters

#endif  // TIDEGATE_ADAPTERS_AGENT_DRIVER_H_
