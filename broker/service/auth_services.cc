#include "broker/service/auth_services.h"

#include "broker/service/auth_origin.h"
#include "broker/service/elastic_service.h"
#include "broker/service/forecast_service.h"
#include "broker/service/services.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

#include <thread>
#include <type_traits>

namespace tidegate::service::auth {
namespace {

constexpr char kAdmission[] = "/tidegate.v1.AdmissionService/";
constexpr char kQuota[] = "/tidegate.v1.QuotaService/";
constexpr char kForecast[] = "/tidegate.v1.ForecastService/";
constexpr char kElastic[] = "/tidegate.v1.ElasticService/";
constexpr char kAgent[] = "/tidegate.v1.AgentService/";
constexpr char kDiagnostics[] = "/tidegate.v1.DiagnosticsService/";

grpc::Status Unauthenticated(const std::string& why) {
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, why);
}

// A job's team and cluster from the published model (live or retained) or
// the recent rejections; only the id when the job is unknown (the service
// then answers NOT_FOUND, or UnknownJob's UNAVAILABLE, to whoever may ask).
CallScope LookedUpJobScope(CoreLoop* loop, const AdmissionServiceImpl* admission, const std::string& job) {
  CallScope scope;
  scope.job = job;
  auto model = loop->Published();
  if (const JobRecord* record = model->FindRecord(job)) {  // no JobInfo built: only its names are needed
    scope.team = record->team();
    scope.cluster = record->cluster();
  } else if (auto rejected = admission->rejections().Find(job, model->now_ms())) {
    scope.team = rejected->team();
    scope.cluster = rejected->cluster();
  }
  return scope;
}

}  // namespace

// ---------------------------------------------------------------- Authenticator

absl::StatusOr<std::unique_ptr<Authenticator>> Authenticator::Load(std::string roles_path,
                                                                   std::string tokens_path) {
  auto auth = std::make_unique<Authenticator>();
  auth->roles_path_ = std::move(roles_path);
  auth->tokens_path_ = std::move(tokens_path);
  if (auto s = auth->Reload(); !s.ok()) return s;
  return auth;
}

absl::Status Authenticator::Reload() {
  if (open()) return absl::OkStatus();
  auto loaded = LoadPolicy(roles_path_, tokens_path_);
  if (!loaded.ok()) return loaded.status();
  auto next = std::make_shared<const Policy>(*std::move(loaded));
  absl::MutexLock lock(&mu_);
  policy_ = std::move(next);
  return absl::OkStatus();
}

std::shared_ptr<const Policy> Authenticator::policy() const {
  absl::MutexLock lock(&mu_);
  return policy_;
}

absl::StatusOr<std::string> Authenticator::Identify(const grpc::ServerContextBase& ctx) const {
  if (open()) return std::string(kOpenPrincipal);
  auto policy = this->policy();
  const auto& metadata = ctx.client_metadata();
  if (auto it = metadata.find("authorization"); it != metadata.end()) {
    const std::string value(it->second.data(), it->second.size());
    constexpr absl::string_view kBearer = "Bearer ";
    if (!absl::StartsWith(value, kBearer)) {
      return absl::UnauthenticatedError("the authorization metadata must be `Bearer TOKEN`");
    }
    auto found = policy->token_principal.find(Sha256Hex(value.substr(kBearer.size())));
    if (found == policy->token_principal.end()) {
      return absl::UnauthenticatedError("unknown or revoked bearer token");
    }
    return found->second;
  }
  auto auth_context = ctx.auth_context();
  if (auth_context != nullptr && auth_context->IsPeerAuthenticated()) {
    // A certificate may carry several names (SANs); the first with roles wins.
    std::string first;
    for (const auto& id : auth_context->GetPeerIdentity()) {
      std::string name(id.data(), id.size());
      if (policy->roles.count(name) > 0) return name;
      if (first.empty()) first = name;
    }
    if (!first.empty()) return first;
  }
  return absl::UnauthenticatedError(
      "no identity: present a client certificate signed by the broker's --client-ca, or a bearer token");
}

void Authenticator::StartDraining() {
  last_call_ns_ = std::chrono::steady_clock::now().time_since_epoch().count();
  draining_ = true;
}

void Authenticator::WaitUntilQuiet(std::chrono::milliseconds quiet, std::chrono::milliseconds at_most) const {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    const auto last = std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(last_call_ns_.load()));
    if (now - last >= quiet || now - start >= at_most) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

grpc::Status Authenticator::Check(const grpc::ServerContextBase& ctx, const std::string& method,
                                  const CallScope& scope, std::string* who) const {
  if (draining_) {
    last_call_ns_ = std::chrono::steady_clock::now().time_since_epoch().count();
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the broker is shutting down; retry (Admit is idempotent)");
  }
  if (open()) {
    if (who != nullptr) *who = kOpenPrincipal;
    return grpc::Status::OK;
  }
  auto principal = Identify(ctx);
  if (!principal.ok()) return Unauthenticated(std::string(principal.status().message()));
  if (who != nullptr) *who = *principal;
  auto policy = this->policy();
  static const std::vector<Role> kNoRoles;
  auto it = policy->roles.find(*principal);
  const absl::Status allowed = Authorize(*principal, it == policy->roles.end() ? kNoRoles : it->second, method, scope);
  if (!allowed.ok()) {
    spdlog::warn("auth: refused {} to '{}' ({}): {}", method, *principal, ctx.peer(), std::string(allowed.message()));
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, std::string(allowed.message()));
  }
  return grpc::Status::OK;
}

absl::StatusOr<std::string> Authenticator::CheckBearer(const std::string& authorization, const std::string& method,
                                                       const CallScope& scope) const {
  if (open()) return std::string(kOpenPrincipal);
  constexpr absl::string_view kBearer = "Bearer ";
  if (authorization.empty()) {
    return absl::UnauthenticatedError("no identity: send `Authorization: Bearer TOKEN`");
  }
  if (!absl::StartsWith(authorization, kBearer)) {
    return absl::UnauthenticatedError("the Authorization header must be `Bearer TOKEN`");
  }
  auto policy = this->policy();
  auto found = policy->token_principal.find(Sha256Hex(authorization.substr(kBearer.size())));
  if (found == policy->token_principal.end()) return absl::UnauthenticatedError("unknown or revoked bearer token");
  static const std::vector<Role> kNoRoles;
  auto it = policy->roles.find(found->second);
  if (absl::Status allowed = Authorize(found->second, it == policy->roles.end() ? kNoRoles : it->second, method, scope);
      !allowed.ok()) {
    return allowed;
  }
  return found->second;
}

AgentServiceImpl::ClusterCheck Authenticator::AgentClusterCheck(const grpc::ServerContextBase& ctx) const {
  if (open()) return nullptr;
  auto principal = Identify(ctx);
  std::vector<Role> roles;
  if (principal.ok()) {
    auto policy = this->policy();
    if (auto it = policy->roles.find(*principal); it != policy->roles.end()) roles = it->second;
  }
  const std::string name = principal.ok() ? *principal : "";
  return [roles, name](const std::string& cluster) {
    if (MayActAsAgentOf(roles, cluster)) return grpc::Status::OK;
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        absl::StrCat("principal '", name, "' may not connect as the agent of cluster '", cluster,
                                     "': it needs role admin or agent of cluster '", cluster, "'"));
  };
}

// ---------------------------------------------------------------- the guards

namespace {

CallScope TeamScope(const std::string& team, const std::string& cluster = "") {
  CallScope scope;
  scope.team = team;
  scope.cluster = cluster;
  return scope;
}

CallScope JobIdScope(const std::string& job) {
  CallScope scope;
  scope.job = job;
  return scope;
}

// A job being submitted: its team, cluster and id. The service fills in the
// only cluster when none is named; the check must see the same one.
CallScope SubmitScope(CoreLoop* loop, const v1::JobSpec& job) {
  CallScope scope = TeamScope(job.team(), job.cluster());
  scope.job = job.job();
  if (scope.cluster.empty()) {
    auto model = loop->Published();
    if (model->config().clusters_size() == 1) scope.cluster = model->config().clusters(0).name();
  }
  return scope;
}

// The answer to a refused call, in the reactor kind the RPC returns: unary
// calls finish their default reactor; a stream is finished at once and
// deleted when done.
template <typename Stream>
class RefusedStream final : public Stream {
 public:
  explicit RefusedStream(const grpc::Status& status) { this->Finish(status); }
  void OnDone() override { delete this; }
};

template <typename Reactor>
Reactor* Refused(grpc::CallbackServerContext* ctx, const grpc::Status& status) {
  if constexpr (std::is_same_v<Reactor, grpc::ServerUnaryReactor>) {
    Reactor* reactor = ctx->DefaultReactor();
    reactor->Finish(status);
    return reactor;
  } else {
    return new RefusedStream<Reactor>(status);
  }
}

// What every guard does with a call: checks `method` of the guarded service
// for `scope` (a CallScope, or what makes one: a job's is looked up in the
// model); refused, answers the refusal without calling the service; allowed,
// calls `forward` (the service's handler) with the caller as the origin of
// the commands it submits. An open broker lets every caller in as the open
// principal until it drains, so it neither works out the scope nor names the
// method: per call, that was a model lookup and string copies for nothing.
class Gate {
 public:
  Gate(const Authenticator* auth, const char* service) : auth_(auth), service_(service) {}

  template <typename Scope = CallScope, typename Forward>
  auto operator()(grpc::CallbackServerContext* ctx, const char* method, const Scope& scope,
                  Forward forward) const -> decltype(forward()) {
    using Reactor = std::remove_pointer_t<decltype(forward())>;
    std::string who = kOpenPrincipal;
    if (!auth_->LetsEveryoneIn()) {
      const CallScope& checked = [&]() -> CallScope {
        if constexpr (std::is_invocable_v<Scope>) {
          return scope();
        } else {
          return scope;
        }
      }();
      if (auto s = auth_->Check(*ctx, absl::StrCat(service_, method), checked, &who); !s.ok()) {
        return Refused<Reactor>(ctx, s);
      }
    }
    ScopedOrigin origin(std::move(who), ctx);
    return forward();
  }

 private:
  const Authenticator* auth_;
  const char* service_;  // "/tidegate.v1.QuotaService/"
};

// Each guard states, per RPC, what the call is about (its scope); the role
// rule for that method and scope is auth.h's.

class GuardedAdmission final : public v1::AdmissionService::CallbackService {
  // Looked up only when checked (Gate).
  auto JobScope(const std::string& job) const {
    return [this, &job] { return LookedUpJobScope(loop_, inner_, job); };
  }

 public:
  GuardedAdmission(AdmissionServiceImpl* inner, const Authenticator* auth, CoreLoop* loop)
      : inner_(inner), loop_(loop), gate_(auth, kAdmission) {}

  grpc::ServerUnaryReactor* Admit(grpc::CallbackServerContext* ctx, const v1::AdmitRequest* req,
      v1::AdmitResponse* resp) override {
    return gate_(ctx, "Admit", [&] { return SubmitScope(loop_, req->job()); },
                 [&] { return inner_->Admit(ctx, req, resp); });
  }

  grpc::ServerWriteReactor<v1::WaitAdmissionResponse>* WaitAdmission(
      grpc::CallbackServerContext* ctx, const v1::WaitAdmissionRequest* req) override {
    return gate_(ctx, "WaitAdmission", JobScope(req->job()), [&] { return inner_->WaitAdmission(ctx, req); });
  }

  grpc::ServerUnaryReactor* Release(grpc::CallbackServerContext* ctx, const v1::ReleaseRequest* req,
      v1::ReleaseResponse* resp) override {
    return gate_(ctx, "Release", JobScope(req->job()), [&] { return inner_->Release(ctx, req, resp); });
  }

  grpc::ServerUnaryReactor* ReportCheckpoint(grpc::CallbackServerContext* ctx,
      const v1::ReportCheckpointRequest* req,
      v1::ReportCheckpointResponse* resp) override {
    return gate_(ctx, "ReportCheckpoint", JobScope(req->job()),
                 [&] { return inner_->ReportCheckpoint(ctx, req, resp); });
  }

  grpc::ServerUnaryReactor* ListJobs(grpc::CallbackServerContext* ctx,
      const v1::ListJobsRequest* req, v1::ListJobsResponse* resp) override {
    return gate_(ctx, "ListJobs", TeamScope(req->team(), req->cluster()),
                 [&] { return inner_->ListJobs(ctx, req, resp); });
  }

  grpc::ServerUnaryReactor* GetJob(grpc::CallbackServerContext* ctx, const v1::GetJobRequest* req,
      v1::JobInfo* resp) override {
    return gate_(ctx, "GetJob", JobScope(req->job()), [&] { return inner_->GetJob(ctx, req, resp); });
  }

 private:

  AdmissionServiceImpl* inner_;
  CoreLoop* loop_;
  Gate gate_;
};

class GuardedQuota final : public v1::QuotaService::CallbackService {
 public:
  GuardedQuota(QuotaServiceImpl* inner, const Authenticator* auth) : inner_(inner), gate_(auth, kQuota) {}

  grpc::ServerUnaryReactor* GetTeam(grpc::CallbackServerContext* ctx, const v1::GetTeamRequest* req,
      v1::TeamInfo* resp) override {
    return gate_(ctx, "GetTeam", TeamScope(req->team()), [&] { return inner_->GetTeam(ctx, req, resp); });
  }

  grpc::ServerUnaryReactor* ListTeams(grpc::CallbackServerContext* ctx, const v1::ListTeamsRequest* req,
      v1::ListTeamsResponse* resp) override {
    return gate_(ctx, "ListTeams", {}, [&] { return inner_->ListTeams(ctx, req, resp); });
  }

  grpc::ServerUnaryReactor* ListLoans(grpc::CallbackServerContext* ctx, const v1::ListLoansRequest* req,
      v1::ListLoansResponse* resp) override {
    return gate_(ctx, "ListLoans", TeamScope(req->team()), [&] { return inner_->ListLoans(ctx, req, resp); });
  }

  grpc::ServerUnaryReactor* GetUsage(grpc::CallbackServerContext* ctx, const v1::GetUsageRequest* req,
      v1::GetUsageResponse* resp) override {
    return gate_(ctx, "GetUsage", TeamScope(req->team()), [&] { return inner_->GetUsage(ctx, req, resp); });
  }

  grpc::ServerUnaryReactor* ApplyConfig(grpc::CallbackServerContext* ctx,
      const v1::ApplyConfigRequest* req,
      v1::ApplyConfigResponse* resp) override {
    return gate_(ctx, "ApplyConfig", {}, [&] {
      if (!req->dry_run()) spdlog::info("audit: ApplyConfig by '{}' ({})", CurrentOrigin().principal(), ctx->peer());
      return inner_->ApplyConfig(ctx, req, resp);
    });
  }

 private:
  QuotaServiceImpl* inner_;
  Gate gate_;
};

class GuardedForecast final : public v1::ForecastService::CallbackService {
 public:
  GuardedForecast(ForecastServiceImpl* inner, const Authenticator* auth) : inner_(inner), gate_(auth, kForecast) {}

  grpc::ServerUnaryReactor* Forecast(grpc::CallbackServerContext* ctx, const v1::ForecastRequest* req,
      v1::ForecastResponse* resp) override {
    return gate_(ctx, "Forecast", TeamScope(req->series().team()), [&] { return inner_->Forecast(ctx, req, resp); });
  }

  grpc::ServerUnaryReactor* RecommendReservations(grpc::CallbackServerContext* ctx,
      const v1::RecommendReservationsRequest* req,
      v1::RecommendReservationsResponse* resp) override {
    return gate_(ctx, "RecommendReservations", TeamScope(req->series().team()),
                 [&] { return inner_->RecommendReservations(ctx, req, resp); });
  }

  grpc::ServerUnaryReactor* ProposeTide(grpc::CallbackServerContext* ctx,
      const v1::ProposeTideRequest* req,
      v1::ProposeTideResponse* resp) override {
    return gate_(ctx, "ProposeTide", TeamScope(req->series().team()),
                 [&] { return inner_->ProposeTide(ctx, req, resp); });
  }

 private:
  ForecastServiceImpl* inner_;
  Gate gate_;
};

class GuardedElastic final : public v1::ElasticService::CallbackService {
 public:
  GuardedElastic(ElasticServiceImpl* inner, const Authenticator* auth) : inner_(inner), gate_(auth, kElastic) {}

  grpc::ServerWriteReactor<v1::ResizeRequest>* WatchResizes(grpc::CallbackServerContext* ctx,
      const v1::WatchResizesRequest* req) override {
    return gate_(ctx, "WatchResizes", JobIdScope(req->job()), [&] { return inner_->WatchResizes(ctx, req); });
  }

  grpc::ServerUnaryReactor* AckResize(grpc::CallbackServerContext* ctx,
      const v1::AckResizeRequest* req, v1::AckResizeResponse* resp) override {
    return gate_(ctx, "AckResize", JobIdScope(req->job()), [&] { return inner_->AckResize(ctx, req, resp); });
  }

 private:
  ElasticServiceImpl* inner_;
  Gate gate_;
};

class GuardedAgents final : public v1::AgentService::CallbackService {
 public:
  GuardedAgents(AgentServiceImpl* inner, const Authenticator* auth) : inner_(inner), gate_(auth, kAgent) {
    if (!auth->open()) {
      inner_->SetClaimCheck([auth](grpc::CallbackServerContext* ctx) { return auth->AgentClusterCheck(*ctx); });
    }
  }

  // Any principal may open the stream; its hello's cluster is checked then.
  grpc::ServerBidiReactor<v1::AgentMessage, v1::BrokerAction>* Connect(
      grpc::CallbackServerContext* ctx) override {
    return gate_(ctx, "Connect", {}, [&] { return inner_->Connect(ctx); });
  }

 private:
  AgentServiceImpl* inner_;
  Gate gate_;
};

class GuardedDiagnostics final : public v1::DiagnosticsService::CallbackService {
 public:
  GuardedDiagnostics(DiagnosticsServiceImpl* inner, const Authenticator* auth)
      : inner_(inner), gate_(auth, kDiagnostics) {}

  grpc::ServerUnaryReactor* Ping(grpc::CallbackServerContext* ctx, const v1::PingRequest* req,
      v1::PingResponse* resp) override {
    return gate_(ctx, "Ping", {}, [&] { return inner_->Ping(ctx, req, resp); });
  }

 private:
  DiagnosticsServiceImpl* inner_;
  Gate gate_;
};

}  // namespace

std::vector<std::unique_ptr<grpc::Service>> GuardServices(const Services& services, const Authenticator* auth,
                                                          CoreLoop* loop) {
  std::vector<std::unique_ptr<grpc::Service>> guards;
  guards.push_back(std::make_unique<GuardedAdmission>(services.admission, auth, loop));
  guards.push_back(std::make_unique<GuardedQuota>(services.quota, auth));
  guards.push_back(std::make_unique<GuardedForecast>(services.forecast, auth));
  guards.push_back(std::make_unique<GuardedDiagnostics>(services.diagnostics, auth));
  guards.push_back(std::make_unique<GuardedAgents>(services.agents, auth));
  guards.push_back(std::make_unique<GuardedElastic>(services.elastic, auth));
  return guards;
}

}  // namespace tidegate::service::auth
