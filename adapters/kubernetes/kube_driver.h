// The Kubernetes driver: a ClusterDriver over the API server's REST API
// (kube_client.h), following Kueue's pattern for batch/v1 Jobs.
//
// Watching: one Reflector per collection (Jobs, Pods of Jobs, Nodes,
// PriorityClasses) lists, then watches from the list's resourceVersion with
// bookmarks; a 410 Expired (history compacted, API server restarted) relists;
// a broken stream reconnects from the last version with backoff. Observe()
// maps the caches (kube_jobs.h) and is UNAVAILABLE until all four listed.
//
// Actions: Start patches spec.suspend false and the reason "tidegate:
// admitted" (an elastic Job also its parallelism, to the size the broker
// counts it at: MIN unless it grew); Signal and Hold patch
// spec.suspend true (the Job controller deletes the pods with their
// termination grace); Stop deletes the pods left with grace 0; Annotate sets
// the annotation tidegate.io/reason and records an Event (Warning for a held
// Job) so `kubectl describe job` shows it. Requeue is UNIMPLEMENTED: a Job that
// finished cannot run again.
//
// Threading: Observe and the actions on the agent's thread; SetParallelism and
// Pods from the elastic follower's thread; the reflectors on their own.
#ifndef TIDEGATE_ADAPTERS_KUBERNETES_KUBE_DRIVER_H_
#define TIDEGATE_ADAPTERS_KUBERNETES_KUBE_DRIVER_H_

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "adapters/agent/driver.h"
#include "adapters/kubernetes/kube_client.h"
#include "adapters/kubernetes/kube_jobs.h"
#include "nlohmann/json.hpp"

namespace tidegate::adapters::kube {

// A cache of one collection kept by list + watch.
class Reflector {
 public:
  // `path` is the collection ("/apis/batch/v1/jobs"); `selector` a label selector or "".
  Reflector(const KubeClient* client, std::string path, std::string selector);
  ~Reflector();
  void Start();
  void Stop();
  // The objects by "namespace/name"; false until the first list succeeded.
  bool Snapshot(std::vector<nlohmann::json>* out) const;
  int64_t lists() const { return lists_; }

 private:
  void Run();
  bool List();
  void Backoff(int64_t* ms);

  const KubeClient* client_;
  std::string path_, selector_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> lists_{0};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, nlohmann::json> items_;  // guarded by mu_
  std::string version_;                          // guarded by mu_
  bool synced_ = false;                          // guarded by mu_
};

class KubeDriver : public ClusterDriver {
 public:
  KubeDriver(KubeOptions options, std::shared_ptr<KubeClient> client);
  ~KubeDriver() override;

  absl::StatusOr<ClusterView> Observe() override;
  absl::Status Start(const std::string& job) override;
  absl::Status Signal(const std::string& job) override;
  absl::Status Stop(const std::string& job) override;
  absl::Status Requeue(const std::string& job) override;
  absl::Status Hold(const std::string& job) override;
  absl::Status Annotate(const std::string& job, const std::string& text) override;

  // The size an admitted elastic Job starts at (the broker's count, or its
  // pending resize's target); nullopt: unknown, start at MIN. Set before use.
  void SetStartSize(std::function<std::optional<int64_t>(const std::string& job)> size) { start_size_ = std::move(size); }
  // Elastic resizes: patch spec.parallelism; the Job's pods now (nullopt: no such Job).
  absl::Status SetParallelism(const std::string& job, int64_t replicas);
  std::optional<PodCounts> Pods(const std::string& job);
  // The elastic Jobs' parallelism by id, from the cache.
  std::map<std::string, int64_t> ElasticParallelism();

 private:
  absl::Status PatchJob(const std::string& job, const nlohmann::json& patch);
  absl::Status RecordEvent(const std::string& job, const std::string& text);
  std::optional<nlohmann::json> CachedJob(const std::string& job);

  KubeOptions options_;
  std::shared_ptr<KubeClient> client_;
  std::function<std::optional<int64_t>(const std::string&)> start_size_;
  Reflector jobs_, pods_, nodes_, priority_classes_;
  std::map<std::string, std::string> written_;  // job -> the reason we last wrote (agent thread only).
};

}  // namespace tidegate::adapters::kube

#endif  // TIDEGATE_ADAPTERS_KUBERNETES_KUBE_DRIVER_H_
