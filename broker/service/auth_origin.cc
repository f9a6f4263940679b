#include "broker/service/auth_origin.h"

#include "grpcpp/server_context.h"

namespace tidegate::service {
namespace {
thread_local ScopedOrigin* t_origin = nullptr;
}  // namespace

ScopedOrigin::ScopedOrigin(std::string principal, const grpc::ServerContextBase* call)
    : principal_(std::move(principal)), call_(call), previous_(t_origin) {
  t_origin = this;
}

ScopedOrigin::ScopedOrigin(const internal::v1::CommandOrigin& origin) : origin_(origin), previous_(t_origin) {
  t_origin = this;
}

ScopedOrigin::~ScopedOrigin() { t_origin = previous_; }

const internal::v1::CommandOrigin& ScopedOrigin::origin() {
  if (!origin_.has_value()) {
    origin_.emplace();
    origin_->set_principal(std::move(principal_));
    origin_->set_peer(call_->peer());
  }
  return *origin_;
}

internal::v1::CommandOrigin CurrentOrigin() {
  return t_origin != nullptr ? t_origin->origin() : internal::v1::CommandOrigin();
}

void StampOrigin(internal::v1::Command* command) {
  if (t_origin != nullptr && !command->has_origin()) *command->mutable_origin() = t_origin->origin();
}

}  // namespace tidegate::service
