// Pure mapping from Kubernetes objects (JSON as the API serves them) to what
// the agent reports to the broker (docs/kubernetes.md):
//
//   A batch/v1 Job is the broker's when it carries the label tidegate.io/team
//   or its namespace maps to a team (--namespace-team). It becomes
//   id "k8s:<namespace>/<name>", team, cluster, replicas = spec.parallelism,
//   per_replica = the pod template's limits (requests where no limit) of the
//   mapped resources (nvidia.com/gpu -> gpu by default; MIG profiles such as
//   nvidia.com/mig-1g.10gb by --resource), priority = its PriorityClass's
//   value, requeue = true (a suspended Job waits again), labels k8s_namespace
//   and k8s_name. The annotation tidegate.io/elastic: "MIN:MAX" makes it
//   elastic (replicas then stated only once it runs).
//   Phase: a Complete or Failed condition, or a deletion under way -> ended;
//   spec.suspend false -> running; suspended with pods left (a victim
//   draining) -> running; suspended without pods -> waiting.
//   Bad input (an empty team, an unmapped nvidia.com resource, no GPU with
//   --gpu-jobs-only, Indexed completion, a bad elastic range, parallelism 0)
//   sets `problem`: the Job stays suspended.
// Capacity: the sum of status.allocatable of the mapped resources over Ready
// nodes without spec.unschedulable.
#ifndef TIDEGATE_ADAPTERS_KUBERNETES_KUBE_JOBS_H_
#define TIDEGATE_ADAPTERS_KUBERNETES_KUBE_JOBS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "adapters/agent/driver.h"
#include "nlohmann/json.hpp"

namespace tidegate::adapters::kube {

inline constexpr char kTeamLabel[] = "tidegate.io/team";
inline constexpr char kElasticAnnotation[] = "tidegate.io/elastic";
inline constexpr char kReasonAnnotation[] = "tidegate.io/reason";

struct KubeOptions {
  std::string cluster;                               // the broker's name for it.
  std::map<std::string, std::string> namespace_team;  // namespace -> team, for Jobs without the label.
  std::map<std::string, std::string> resources{{"nvidia.com/gpu", "gpu"}};  // Kubernetes -> broker resource.
  bool gpu_jobs_only = false;                        // a managed Job without GPUs is bad input.
};

// The pods of one Job: `holding` did not finish (terminating ones too: they
// still hold their GPUs); `active` of those are not terminating.
struct PodCounts {
  int64_t holding = 0;
  int64_t active = 0;
  int64_t terminating = 0;
};

// "k8s:<ns>/<name>" and back.
std::string JobId(const std::string& name_space, const std::string& name);
bool ParseJobId(const std::string& id, std::string* name_space, std::string* name);

// The Job's ClusterJob, or nullopt when it is not the broker's.
std::optional<ClusterJob> MapJob(const nlohmann::json& job, const KubeOptions& options, const PodCounts& pods,
                                 const std::map<std::string, int64_t>& priority_classes);
// Usable capacity of the mapped resources (each mapped resource present, 0 if none).
std::map<std::string, int64_t> NodeCapacity(const std::vector<nlohmann::json>& nodes, const KubeOptions& options);
// The pods' counts by owning Job uid.
std::map<std::string, PodCounts> CountPods(const std::vector<nlohmann::json>& pods);

}  // namespace tidegate::adapters::kube

#endif  // TIDEGATE_ADAPTERS_KUBERNETES_KUBE_JOBS_H_
