#include "broker/service/leader_standby.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/health_check_service_interface.h"

namespace tidegate::service {

class StandbyServer::Service final : public grpc::CallbackGenericService {
 public:
  explicit Service(const StandbyServer* owner) : owner_(owner) {}

  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* context) override {
    return new Refusal(context, owner_->leader());
  }

 private:
  // Answers at once, without reading the request.
  class Refusal final : public grpc::ServerGenericBidiReactor {
   public:
    Refusal(grpc::GenericCallbackServerContext* context, const std::string& leader) {
      std::string message = "standby: this broker does not lead";
      if (leader.empty()) {
        absl::StrAppend(&message, " and no leader is known yet (an election is under way); retry shortly");
      } else {
        context->AddTrailingMetadata(kLeaderMetadataKey, leader);
        absl::StrAppend(&message, "; the leader is at ", leader);
      }
      Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, message));
    }
    void OnDone() override { delete this; }
  };

  const StandbyServer* owner_;
};

absl::StatusOr<std::unique_ptr<StandbyServer>> StandbyServer::Start(
    const std::string& listen, std::shared_ptr<grpc::ServerCredentials> credentials) {
  auto out = std::unique_ptr<StandbyServer>(new StandbyServer());
  out->service_ = std::make_unique<Service>(out.get());
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  int port = 0;
  builder.AddListeningPort(listen, std::move(credentials), &port);
  builder.RegisterCallbackGenericService(out->service_.get());
  out->server_ = builder.BuildAndStart();
  if (!out->server_ || port == 0) return absl::UnavailableError(absl::StrCat("cannot listen on ", listen));
  grpc::HealthCheckServiceInterface* health = out->server_->GetHealthCheckService();
  health->SetServingStatus(false);
  health->SetServingStatus(kLeaderHealthService, false);
  return out;
}

StandbyServer::~StandbyServer() {
  if (server_) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
    server_->Wait();
  }
}

void StandbyServer::SetLeader(const std::string& address) {
  absl::MutexLock lock(&mu_);
  leader_ = address;
}

std::string StandbyServer::leader() const {
  absl::MutexLock lock(&mu_);
  return leader_;
}

void StandbyServer::SetLeaseRound(int64_t epoch, const std::string& problem) {
  absl::MutexLock lock(&mu_);
  if (epoch > 0) lease_epoch_ = epoch;
  problem_ = problem;
}

int64_t StandbyServer::lease_epoch() const {
  absl::MutexLock lock(&mu_);
  return lease_epoch_;
}

std::string StandbyServer::problem() const {
  absl::MutexLock lock(&mu_);
  return problem_;
}

}  // namespace tidegate::service
