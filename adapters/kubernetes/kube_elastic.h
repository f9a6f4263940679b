// Elastic Kubernetes Jobs (annotation tidegate.io/elastic "MIN:MAX"): the
// broker's resize requests become spec.parallelism, and the resize is acked
// (ElasticService.AckResize, the broker's public API) once the Job runs
// exactly that many pods and none is still terminating. An admitted elastic
// Job whose parallelism differs from the size the broker counts, with no
// resize pending, is set to that size.
//
// Threading: Run() on its own thread until Stop().
#ifndef TIDEGATE_ADAPTERS_KUBERNETES_KUBE_ELASTIC_H_
#define TIDEGATE_ADAPTERS_KUBERNETES_KUBE_ELASTIC_H_

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "adapters/kubernetes/kube_driver.h"
#include "grpcpp/grpcpp.h"
#include "tidegate/v1/service.grpc.pb.h"

namespace tidegate::adapters::kube {

class ElasticFollower {
 public:
  ElasticFollower(std::shared_ptr<grpc::Channel> channel, KubeDriver* driver, std::string cluster, int64_t poll_ms);
  void Run();
  void Stop();

 private:
  void Once();

  std::unique_ptr<v1::AdmissionService::Stub> admission_;
  std::unique_ptr<v1::ElasticService::Stub> elastic_;
  KubeDriver* driver_;
  std::string cluster_;
  int64_t poll_ms_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<std::pair<std::string, int64_t>> acked_;  // (job, epoch)
};

}  // namespace tidegate::adapters::kube

#endif  // TIDEGATE_ADAPTERS_KUBERNETES_KUBE_ELASTIC_H_
