// tidegated's security set-up from its flags (docs/security.md): the
// listening credentials (TLS, mTLS or plaintext), the Authenticator, and the
// refusal of an open broker on a network address.
#ifndef TIDEGATE_BROKER_SERVICE_AUTH_SERVER_H_
#define TIDEGATE_BROKER_SERVICE_AUTH_SERVER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "broker/service/auth_services.h"
#include "broker/service/server.h"
#include "grpcpp/security/server_credentials.h"

namespace tidegate::service {

struct ServerSecurity {
  std::shared_ptr<grpc::ServerCredentials> credentials;
  std::unique_ptr<auth::Authenticator> authenticator;
};

// INVALID_ARGUMENT (exit 2) naming the flag and value: --tls-cert without
// --tls-key, --client-ca or --tokens without what they need, an unreadable
// or invalid file, or a non-loopback --listen without TLS and --roles (unless
// --insecure). Logs what the broker will enforce.
absl::StatusOr<ServerSecurity> SetUpSecurity(const ServerOptions& options);

}  // namespace tidegate::service

#endif  // TIDEGATE_BROKER_SERVICE_AUTH_SERVER_H_
