#include "broker/service/auth_origin.h"

namespace tidegate::service {
namespace {
thread_local const internal::v1::CommandOrigin* t_origin = nullptr;
}  // namespace

ScopedOrigin::ScopedOrigin(std::string principal, std::string peer) : previous_(t_origin) {
  origin_.set_principal(std::move(principal));
  origin_.set_peer(std::move(peer));
  t_origin = &origin_;
}

ScopedOrigin::~ScopedOrigin() { t_origin = previous_; }

internal::v1::CommandOrigin CurrentOrigin() { return t_origin != nullptr ? *t_origin : internal::v1::CommandOrigin(); }

void StampOrigin(internal::v1::Command* command) {
  if (t_origin != nullptr && !command->has_origin()) *command->mutable_origin() = *t_origin;
}

}  // namespace tidegate::service
