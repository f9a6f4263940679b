#include "broker/service/auth_server.h"

#include <arpa/inet.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace tidegate::service {
namespace {

absl::StatusOr<std::string> ReadPem(const std::string& flag, const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(flag, ": cannot read '", path, "'"));
  std::stringstream ss;
  ss << in.rdbuf();
  if (ss.str().find("-----BEGIN ") == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": '", path, "' is not a PEM file"));
  }
  return ss.str();
}

}  // namespace

bool IsLoopbackListen(const std::string& listen) {
  if (absl::StartsWith(listen, "unix:") || absl::StartsWith(listen, "unix-abstract:")) return true;
  std::string host = listen.substr(0, listen.rfind(':'));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  return false;  // a name, "0.0.0.0", "[::]", "": reachable from the network.
}

absl::Status CheckListenAddress(const std::string& listen) {
  if (absl::StartsWith(listen, "unix:") || absl::StartsWith(listen, "unix-abstract:")) return absl::OkStatus();
  const size_t colon = listen.rfind(':');
  const std::string port = colon == std::string::npos ? "" : listen.substr(colon + 1);
  int value = -1;
  if (colon == std::string::npos || colon == 0 || port.empty() || port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      !absl::SimpleAtoi(port, &value) || value > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--listen '", listen, "': expected HOST:PORT with a port from 0 to 65535 (e.g. 127.0.0.1:50051), or unix:PATH"));
  }
  return absl::OkStatus();
}

absl::StatusOr<ServerSecurity> SetUpSecurity(const ServerOptions& options) {
  if (absl::Status bad = CheckListenAddress(options.listen); !bad.ok()) return bad;
  ServerSecurity out;
  if (options.tls_cert.empty() != options.tls_key.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key go together: give both or neither");
  }
  const bool tls = !options.tls_cert.empty();
  if (!options.client_ca.empty() && !tls) {
    return absl::InvalidArgumentError(
        absl::StrCat("--client-ca '", options.client_ca, "' needs TLS: give --tls-cert and --tls-key too"));
  }
  if (!options.tokens_path.empty() && options.roles_path.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tokens '", options.tokens_path, "' needs --roles: a token names a principal, the roles file says what it may do"));
  }
  const bool loopback = IsLoopbackListen(options.listen);
  if (!loopback && (!tls || options.roles_path.empty())) {
    if (!options.insecure) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--listen '", options.listen, "' is reachable from the network, but ",
          !tls ? "TLS is off (--tls-cert, --tls-key)" : "no --roles file is given (everyone would be admin)",
          "; configure both, or pass --insecure to accept that anyone who can reach the port ",
          options.roles_path.empty() ? "is admin" : "can read tokens off the wire"));
    }
    spdlog::warn("*** INSECURE: --listen {} is reachable from the network {} (--insecure) ***", options.listen,
                 !tls ? "without TLS" : "with every caller admin");
  }

  if (tls) {
    grpc::SslServerCredentialsOptions ssl;
    auto cert = ReadPem("--tls-cert", options.tls_cert);
    if (!cert.ok()) return cert.status();
    auto key = ReadPem("--tls-key", options.tls_key);
    if (!key.ok()) return key.status();
    ssl.pem_key_cert_pairs.push_back({*key, *cert});
    if (!options.client_ca.empty()) {
      auto ca = ReadPem("--client-ca", options.client_ca);
      if (!ca.ok()) return ca.status();
      ssl.pem_root_certs = *ca;
      // Verified when presented; token callers need none.
      ssl.client_certificate_request = GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY;
    }
    out.credentials = grpc::SslServerCredentials(ssl);
  } else {
    out.credentials = grpc::InsecureServerCredentials();
  }

  if (options.roles_path.empty()) {
    out.authenticator = std::make_unique<auth::Authenticator>();
    spdlog::warn("auth: open, every caller is admin (no --roles; allowed on loopback {})", options.listen);
  } else {
    auto loaded = auth::Authenticator::Load(options.roles_path, options.tokens_path);
    if (!loaded.ok()) return absl::InvalidArgumentError(loaded.status().message());
    out.authenticator = *std::move(loaded);
    spdlog::info("auth: roles from {}, tokens from {}; reloaded on SIGHUP", options.roles_path,
                 options.tokens_path.empty() ? "(none)" : options.tokens_path);
  }
  spdlog::info("transport: {}", tls ? (options.client_ca.empty() ? "TLS" : "TLS, client certificates verified")
                                    : "plaintext");
  return out;
}

}  // namespace tidegate::service
