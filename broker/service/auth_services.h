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
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "broker/service/agent_service.h"
#include "broker/service/auth_files.h"
#include "broker/service/core_loop.h"
#include "broker/service/elastic_service.h"
#include "broker/service/forecast_service.h"
#include "broker/service/services.h"
#include "grpcpp/grpcpp.h"

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
  mutable std::mutex mu_;
  std::shared_ptr<const Policy> policy_;  // guarded by mu_
  std::atomic<bool> draining_{false};
  mutable std::atomic<int64_t> last_call_ns_{0};  // steady clock; while draining
};

// The guarded services; each forwards allowed calls to `inner`.
class GuardedAdmission final : public v1::AdmissionService::CallbackService {
 public:
  GuardedAdmission(AdmissionServiceImpl* inner, const Authenticator* auth, CoreLoop* loop)
      : inner_(inner), auth_(auth), loop_(loop) {}
  grpc::ServerUnaryReactor* Admit(grpc::CallbackServerContext* ctx, const v1::AdmitRequest* req,
                                  v1::AdmitResponse* resp) override;
  grpc::ServerWriteReactor<v1::WaitAdmissionResponse>* WaitAdmission(grpc::CallbackServerContext* ctx,
                                                                     const v1::WaitAdmissionRequest* req) override;
  grpc::ServerUnaryReactor* Release(grpc::CallbackServerContext* ctx, const v1::ReleaseRequest* req,
                                    v1::ReleaseResponse* resp) override;
  grpc::ServerUnaryReactor* ReportCheckpoint(grpc::CallbackServerContext* ctx,
                                             const v1::ReportCheckpointRequest* req,
                                             v1::ReportCheckpointResponse* resp) override;
  grpc::ServerUnaryReactor* ListJobs(grpc::CallbackServerContext* ctx, const v1::ListJobsRequest* req,
                                     v1::ListJobsResponse* resp) override;
  grpc::ServerUnaryReactor* GetJob(grpc::CallbackServerContext* ctx, const v1::GetJobRequest* req,
                                   v1::JobInfo* resp) override;

 private:
  AdmissionServiceImpl* inner_;
  const Authenticator* auth_;
  CoreLoop* loop_;
};

class GuardedQuota final : public v1::QuotaService::CallbackService {
 public:
  GuardedQuota(QuotaServiceImpl* inner, const Authenticator* auth) : inner_(inner), auth_(auth) {}
  grpc::ServerUnaryReactor* GetTeam(grpc::CallbackServerContext* ctx, const v1::GetTeamRequest* req,
                                    v1::TeamInfo* resp) override;
  grpc::ServerUnaryReactor* ListTeams(grpc::CallbackServerContext* ctx, const v1::ListTeamsRequest* req,
                                      v1::ListTeamsResponse* resp) override;
  grpc::ServerUnaryReactor* ListLoans(grpc::CallbackServerContext* ctx, const v1::ListLoansRequest* req,
                                      v1::ListLoansResponse* resp) override;
  grpc::ServerUnaryReactor* GetUsage(grpc::CallbackServerContext* ctx, const v1::GetUsageRequest* req,
                                     v1::GetUsageResponse* resp) override;
  grpc::ServerUnaryReactor* ApplyConfig(grpc::CallbackServerContext* ctx, const v1::ApplyConfigRequest* req,
                                        v1::ApplyConfigResponse* resp) override;

 private:
  QuotaServiceImpl* inner_;
  const Authenticator* auth_;
};

class GuardedForecast final : public v1::ForecastService::CallbackService {
 public:
  GuardedForecast(ForecastServiceImpl* inner, const Authenticator* auth) : inner_(inner), auth_(auth) {}
  grpc::ServerUnaryReactor* Forecast(grpc::CallbackServerContext* ctx, const v1::ForecastRequest* req,
                                     v1::ForecastResponse* resp) override;
  grpc::ServerUnaryReactor* RecommendReservations(grpc::CallbackServerContext* ctx,
                                                  const v1::RecommendReservationsRequest* req,
                                                  v1::RecommendReservationsResponse* resp) override;
  grpc::ServerUnaryReactor* ProposeTide(grpc::CallbackServerContext* ctx, const v1::ProposeTideRequest* req,
                                        v1::ProposeTideResponse* resp) override;

 private:
  ForecastServiceImpl* inner_;
  const Authenticator* auth_;
};

class GuardedElastic final : public v1::ElasticService::CallbackService {
 public:
  GuardedElastic(ElasticServiceImpl* inner, const Authenticator* auth) : inner_(inner), auth_(auth) {}
  grpc::ServerWriteReactor<v1::ResizeRequest>* WatchResizes(grpc::CallbackServerContext* ctx,
                                                           const v1::WatchResizesRequest* req) override;
  grpc::ServerUnaryReactor* AckResize(grpc::CallbackServerContext* ctx, const v1::AckResizeRequest* req,
                                      v1::AckResizeResponse* resp) override;

 private:
  ElasticServiceImpl* inner_;
  const Authenticator* auth_;
};

class GuardedAgents final : public v1::AgentService::CallbackService {
 public:
  // Also installs the hello check on `inner`.
  GuardedAgents(AgentServiceImpl* inner, const Authenticator* auth);
  grpc::ServerBidiReactor<v1::AgentMessage, v1::BrokerAction>* Connect(grpc::CallbackServerContext* ctx) override;

 private:
  AgentServiceImpl* inner_;
  const Authenticator* auth_;
};

class GuardedDiagnostics final : public v1::DiagnosticsService::CallbackService {
 public:
  GuardedDiagnostics(DiagnosticsServiceImpl* inner, const Authenticator* auth) : inner_(inner), auth_(auth) {}
  grpc::ServerUnaryReactor* Ping(grpc::CallbackServerContext* ctx, const v1::PingRequest* req,
                                 v1::PingResponse* resp) override;

 private:
  DiagnosticsServiceImpl* inner_;
  const Authenticator* auth_;
};

}  // namespace tidegate::service::auth

#endif  // TIDEGATE_BROKER_SERVICE_AUTH_SERVICES_H_
