// What the broker's HTTP endpoint and a standby's share: the --http-listen
// address, the bearer token of a request, the security headers, and an HTTP
// or HTTPS server bound to its port. Internal to broker/http.
#ifndef TIDEGATE_BROKER_HTTP_ENDPOINT_KIT_H_
#define TIDEGATE_BROKER_HTTP_ENDPOINT_KIT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "broker/service/server.h"
#include "httplib.h"

namespace tidegate::http {

// The RPC whose role a request needs to read one team (or, with no team,
// every team's figures: /metrics).
inline constexpr char kGetTeam[] = "/tidegate.v1.QuotaService/GetTeam";
// The cookie /login sets to stand for a bearer token.
inline constexpr char kTokenCookie[] = "tidegate_token";

struct HostPort {
  std::string host;
  int port = 0;
};

// INVALID_ARGUMENT naming --http-listen unless `listen` is HOST:PORT.
absl::StatusOr<HostPort> ParseListen(const std::string& listen);

// The bearer token of a request: the Authorization header, else the cookie
// /login sets (browsers send no Authorization header by themselves).
std::string Authorization(const httplib::Request& req);

void SecurityHeaders(httplib::Response& res);
void SendPage(httplib::Response& res, int status, const std::string& html);
void SendText(httplib::Response& res, int status, const std::string& text);

// An HTTP or HTTPS server (--tls-cert/--tls-key) with the pool both
// endpoints use.
absl::StatusOr<std::unique_ptr<httplib::Server>> MakeServer(const service::ServerOptions& options);

// The bound port; UNAVAILABLE when taken.
absl::StatusOr<int> Bind(httplib::Server& server, const std::string& listen, const HostPort& where);

// A factory that makes an Endpoint(options, parts) and starts it.
template <typename Endpoint, typename Parts>
auto StartingFactory(const service::ServerOptions& options) {
  return [options](const Parts& parts) -> absl::StatusOr<std::unique_ptr<service::SideServer>> {
    auto endpoint = std::make_unique<Endpoint>(options, parts);
    if (auto s = endpoint->Start(); !s.ok()) return s;
    return endpoint;
  };
}

}  // namespace tidegate::http

#endif  // TIDEGATE_BROKER_HTTP_ENDPOINT_KIT_H_
