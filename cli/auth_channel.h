// How clients of the broker connect (docs/security.md): plaintext, TLS that
// verifies the broker, mTLS with a client certificate, and a bearer token on
// every call. Shared by `tidegate`, `tidegate-agent` and the load generator.
//
// Each setting is a flag or, when the flag is absent, an environment
// variable: --ca (TIDEGATE_CA), --cert (TIDEGATE_CERT), --key (TIDEGATE_KEY),
// --token-file (TIDEGATE_TOKEN_FILE) or TIDEGATE_TOKEN (the token itself;
// never a flag, so it stays out of `ps`). TLS is on when --tls, --ca or
// --cert is given; the broker's certificate is then always verified, against
// --ca or else the system's roots.
#ifndef TIDEGATE_CLI_AUTH_CHANNEL_H_
#define TIDEGATE_CLI_AUTH_CHANNEL_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"

namespace CLI {
class App;
}  // namespace CLI

namespace tidegate::cli {

struct ChannelSecurity {
  bool tls = false;
  std::string ca;          // PEM file: the CA that signed the broker's certificate.
  std::string cert, key;   // PEM files: this client's certificate and key (mTLS).
  std::string token_file;  // file holding the bearer token (first line).
  std::string token;       // the token itself (from TIDEGATE_TOKEN).
};

// Adds --tls, --ca, --cert, --key and --token-file to `app`, bound to *security.
void AddChannelSecurityOptions(CLI::App& app, ChannelSecurity* security);

// Fills what the flags left empty from the environment (getenv).
void ApplySecurityEnvironment(ChannelSecurity* security);

// INVALID_ARGUMENT naming `target` when its port is not 1 to 65535 (gRPC
// would take 99999 as 34463 and reach another server). Targets without a
// port, and unix: sockets, pass.
absl::Status CheckBrokerTarget(const std::string& target);

// A channel to `target` with these settings (after ApplySecurityEnvironment).
// INVALID_ARGUMENT naming the flag and the file when a file cannot be read,
// or --cert is given without --key; CheckBrokerTarget's error.
absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeBrokerChannel(const std::string& target,
                                                                 const ChannelSecurity& security,
                                                                 const grpc::ChannelArguments& args);

}  // namespace tidegate::cli

#endif  // TIDEGATE_CLI_AUTH_CHANNEL_H_
