// The mutating admission webhook (AdmissionReview v1 over HTTPS): a Job the
// broker gates (label tidegate.io/team, or a namespace mapped to a team) is
// created with spec.suspend: true, so users need not remember it. Everything
// else is allowed unchanged; the webhook never refuses (a failure policy of
// Ignore in deploy/kubernetes keeps Jobs flowing when the agent is down;
// such Jobs run unsuspended and the agent adopts them).
//
// Threading: the server runs on its own threads; Mutate is pure.
#ifndef TIDEGATE_ADAPTERS_KUBERNETES_WEBHOOK_H_
#define TIDEGATE_ADAPTERS_KUBERNETES_WEBHOOK_H_

#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "adapters/kubernetes/kube_jobs.h"
#include "nlohmann/json.hpp"

namespace tidegate::adapters::kube {

// The AdmissionReview answering `review` (a JSON patch adding suspend: true
// where the Job is gated and not suspended already).
nlohmann::json Mutate(const nlohmann::json& review, const KubeOptions& options);

struct WebhookOptions {
  std::string listen;              // ADDR:PORT (port 0: any).
  std::string cert_file, key_file;  // PEM.
  KubeOptions options;
};

class WebhookServer {
 public:
  explicit WebhookServer(WebhookOptions options);
  ~WebhookServer();
  absl::Status Start();  // binds; serves on a thread.
  void Stop();
  std::string address() const;  // ADDR:PORT actually bound.

 private:
  struct Impl;
  WebhookOptions options_;
  std::unique_ptr<Impl> impl_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace tidegate::adapters::kube

#endif  // TIDEGATE_ADAPTERS_KUBERNETES_WEBHOOK_H_
