// Applies auth.h to every RPC: the broker registers these guards instead of
// the services themselves. Each guard names the caller (a verified client
// certificate, or `authorization: Bearer TOKEN`), works out what the call is
// about (a team, a cluster, a job: looked up in the published model for
// calls that name only a job), checks the role table, and then hands the
// call to the real service unchanged. One place decides; the handlers do not
// know about auth.
//
// Threading: thread-safe. Reload swaps the policy atomically; calls in flight
// keep the one they started with.
#ifndef TIDEGATE_BROKER_SERVICE_AUTH_SERVICES_H_
#define TIDEGATE_BROKER_SERVICE_AUTH_SERVICES_H_

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "broker/service/agent_service.h"
#include "broker/service/auth_files.h"
#include "broker/service/core_loop.h"
#include "grpcpp/grpcpp.h"

namespace tidegate::service {
class AdmissionServiceImpl;
class DiagnosticsServiceImpl;
class ElasticServiceImpl;
class ForecastServiceImpl;
class QuotaServiceImpl;
}  // namespace tidegate::service

namespace tidegate::service::auth {

// The principal name given to every caller when the broker runs open
// (loopback, no roles file): all are admin.
inline constexpr char kOpenPrincipal[] = "anonymous";

class Authenticator {
 public:
  // Open: no roles file; every caller is admin (loopback development).
  Authenticator() = default;
  // Enforcing, from the files (auth_files.h); `roles_path` must be set.
  static absl::StatusOr<std::unique_ptr<Authenticator>> Load(std::string roles_path, std::string tokens_path);

  bool open() const { return roles_path_.empty(); }
  // Open and not draining: Check would let any call in as kOpenPrincipal.
  bool LetsEveryoneIn() const { return open() && !draining_; }

  // Re-reads both files. On error the old policy stays in force.
  absl::Status Reload();

  // The caller's principal: UNAUTHENTICATED when it presented neither a
  // verified certificate nor a known token (a token that is presented must
  // be known, even with a certificate).
  absl::StatusOr<std::string> Identify(const grpc::ServerContextBase& ctx) const;

  // Identify, then auth::Authorize; on OK *who (if given) is the principal.
  grpc::Status Check(const grpc::ServerContextBase& ctx, const std::string& method, const CallScope& scope,
                     std::string* who = nullptr) const;

  // For the HTTP endpoint (broker/http), which has no gRPC context: the
  // principal of an `Authorization: Bearer TOKEN` header value (empty: none
  // given), then auth::Authorize of `method` and `scope` as Check does.
  // UNAUTHENTICATED or PERMISSION_DENIED; open: the open principal.
  absl::StatusOr<std::string> CheckBearer(const std::string& authorization, const std::string& method,
                                          const CallScope& scope) const;

  // For AgentService: the check of hello.cluster for this caller.
  AgentServiceImpl::ClusterCheck AgentClusterCheck(const grpc::ServerContextBase& ctx) const;

  // Shutdown, first step: from now on every call is answered UNAVAILABLE
  // ("shutting down; retry") by Check, before any handler runs. gRPC's own
  // Shutdown cancels the calls that reach it while it runs (the caller sees
  // CANCELLED, which says nothing about retrying), so the broker first
  // refuses calls itself and waits for callers to go quiet.
  void StartDraining();
  // Returns once no call has arrived for `quiet`, or after `at_most`.
  void WaitUntilQuiet(std::chrono::milliseconds quiet, std::chrono::milliseconds at_most) const;

 private:
  std::shared_ptr<const Policy> policy() const;

  std::string roles_path_, tokens_path_;
  mutable absl::Mutex mu_;
  std::shared_ptr<const Policy> policy_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> draining_{false};
  mutable std::atomic<int64_t> last_call_ns_{0};  // steady clock; while draining
};

// The services a guard stands in front of; they outlive the guards.
struct Services {
  AdmissionServiceImpl* admission;
  QuotaServiceImpl* quota;
  ForecastServiceImpl* forecast;
  DiagnosticsServiceImpl* diagnostics;
  AgentServiceImpl* agents;
  ElasticServiceImpl* elastic;
};

// One guard per service, to register on the server instead of the service:
// each checks the call, then forwards it unchanged to the service. Installs
// the hello check on `services.agents`. The guards must outlive the server.
std::vector<std::unique_ptr<grpc::Service>> GuardServices(const Services& services, const Authenticator* auth,
                                                          CoreLoop* loop);

}  // namespace tidegate::service::auth

#endif  // TIDEGATE_BROKER_SERVICE_AUTH_SERVICES_H_
