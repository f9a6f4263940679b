#include "cli/auth_channel.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "CLI/CLI.hpp"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "grpcpp/support/client_interceptor.h"

namespace tidegate::cli {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& flag, const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(flag, ": cannot read '", path, "'"));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void FromEnv(std::string* field, const char* name) {
  if (!field->empty()) return;
  if (const char* v = std::getenv(name); v != nullptr) *field = v;
}

// Adds `authorization: Bearer TOKEN` to every call. An interceptor, not call
// credentials, so that it also works on a plaintext loopback channel.
class BearerInterceptor final : public grpc::experimental::Interceptor {
 public:
  explicit BearerInterceptor(const std::string* header) : header_(header) {}
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(grpc::experimental::InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
      methods->GetSendInitialMetadata()->insert({"authorization", *header_});
    }
    methods->Proceed();
  }

 private:
  const std::string* header_;
};

class BearerFactory final : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  explicit BearerFactory(std::string token) : header_(absl::StrCat("Bearer ", token)) {}
  grpc::experimental::Interceptor* CreateClientInterceptor(grpc::experimental::ClientRpcInfo*) override {
    return new BearerInterceptor(&header_);
  }

 private:
  std::string header_;  // outlives the channel's interceptors: the channel owns the factory.
};

}  // namespace

void AddChannelSecurityOptions(CLI::App& app, ChannelSecurity* security) {
  app.add_flag("--tls", security->tls, "connect with TLS, verifying the broker against the system's CAs");
  app.add_option("--ca", security->ca, "connect with TLS, verifying the broker against this CA (PEM; $TIDEGATE_CA)")
      ->type_name("FILE");
  app.add_option("--cert", security->cert, "client certificate for mTLS (PEM; $TIDEGATE_CERT)")->type_name("FILE");
  app.add_option("--key", security->key, "the key of --cert (PEM; $TIDEGATE_KEY)")->type_name("FILE");
  app.add_option("--token-file", security->token_file,
                 "file holding a bearer token ($TIDEGATE_TOKEN_FILE; or the token itself in $TIDEGATE_TOKEN)")
      ->type_name("FILE");
}

void ApplySecurityEnvironment(ChannelSecurity* security) {
  FromEnv(&security->ca, "TIDEGATE_CA");
  FromEnv(&security->cert, "TIDEGATE_CERT");
  FromEnv(&security->key, "TIDEGATE_KEY");
  FromEnv(&security->token_file, "TIDEGATE_TOKEN_FILE");
  if (security->token_file.empty()) FromEnv(&security->token, "TIDEGATE_TOKEN");
  if (const char* v = std::getenv("TIDEGATE_TLS"); v != nullptr && std::string(v) == "1") security->tls = true;
}

absl::Status CheckBrokerTarget(const std::string& target) {
  if (absl::StartsWith(target, "unix:") || absl::StartsWith(target, "unix-abstract:")) return absl::OkStatus();
  const size_t colon = target.rfind(':');
  if (colon == std::string::npos) return absl::OkStatus();
  const absl::string_view port = absl::string_view(target).substr(colon + 1);
  if (port.empty() || !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return absl::OkStatus();  // no port here ("dns:///host", "[::1]"): gRPC's default applies
  }
  int value = 0;
  if (port.size() > 5 || !absl::SimpleAtoi(port, &value) || value < 1 || value > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--server ", target, ": the port must be a number from 1 to 65535, got ", port));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeBrokerChannel(const std::string& target,
                                                                 const ChannelSecurity& security,
                                                                 const grpc::ChannelArguments& args) {
  if (absl::Status bad = CheckBrokerTarget(target); !bad.ok()) return bad;
  if (security.cert.empty() != security.key.empty()) {
    return absl::InvalidArgumentError("--cert and --key go together: give both or neither");
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  if (security.tls || !security.ca.empty() || !security.cert.empty()) {
    grpc::SslCredentialsOptions ssl;
    if (!security.ca.empty()) {
      auto ca = ReadFile("--ca", security.ca);
      if (!ca.ok()) return ca.status();
      ssl.pem_root_certs = *ca;
    }
    if (!security.cert.empty()) {
      auto cert = ReadFile("--cert", security.cert);
      if (!cert.ok()) return cert.status();
      auto key = ReadFile("--key", security.key);
      if (!key.ok()) return key.status();
      ssl.pem_cert_chain = *cert;
      ssl.pem_private_key = *key;
    }
    credentials = grpc::SslCredentials(ssl);
  } else {
    credentials = grpc::InsecureChannelCredentials();
  }
  std::string token = security.token;
  if (!security.token_file.empty()) {
    auto text = ReadFile("--token-file", security.token_file);
    if (!text.ok()) return text.status();
    token = std::string(absl::StripAsciiWhitespace(text->substr(0, text->find('\n'))));
    if (token.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--token-file: '", security.token_file, "' holds no token"));
    }
  }
  if (token.empty()) return grpc::CreateCustomChannel(target, credentials, args);
  std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(std::make_unique<BearerFactory>(token));
  return grpc::experimental::CreateCustomChannelWithInterceptors(target, credentials, args, std::move(interceptors));
}

}  // namespace tidegate::cli
