#include "broker/http/endpoint_kit.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/strings/ascii.h"

namespace tidegate::http {
namespace {

// Long polls hold a pool thread each (http_server.cc caps them below this),
// so /metrics and the probes always find a free thread.
constexpr int kPoolThreads = 16;

}  // namespace

absl::StatusOr<HostPort> ParseListen(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  int port = -1;
  if (colon == std::string::npos || colon == 0 || !absl::SimpleAtoi(listen.substr(colon + 1), &port) || port < 0 ||
      port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--http-listen '", listen, "' is not HOST:PORT (e.g. 127.0.0.1:8080, [::1]:8080)"));
  }
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return HostPort{host, port};
}

// The bearer token of a request: the Authorization header, else the cookie
// /login sets (browsers send no Authorization header by themselves).
std::string Authorization(const httplib::Request& req) {
  std::string header = req.get_header_value("Authorization");
  if (!header.empty()) return header;
  for (absl::string_view part : absl::StrSplit(req.get_header_value("Cookie"), ';')) {
    part = absl::StripAsciiWhitespace(part);
    if (absl::ConsumePrefix(&part, kTokenCookie) && absl::ConsumePrefix(&part, "=") && !part.empty()) {
      return absl::StrCat("Bearer ", part);
    }
  }
  return "";
}

void SecurityHeaders(httplib::Response& res) {
  // Defence in depth behind the escaping: no inline script, nothing foreign.
  res.set_header("Content-Security-Policy",
                 "default-src 'self'; style-src 'self' 'unsafe-inline'; object-src 'none'; base-uri 'none'; "
                 "frame-ancestors 'none'; form-action 'self'");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Cache-Control", "no-store");
}

void SendPage(httplib::Response& res, int status, const std::string& html) {
  SecurityHeaders(res);
  res.status = status;
  res.set_content(html, "text/html; charset=utf-8");
}

void SendText(httplib::Response& res, int status, const std::string& text) {
  SecurityHeaders(res);
  res.status = status;
  res.set_content(text, "text/plain; charset=utf-8");
}

// An HTTP or HTTPS server (--tls-cert/--tls-key) with the pool both
// endpoints use.
absl::StatusOr<std::unique_ptr<httplib::Server>> MakeServer(const service::ServerOptions& options) {
  std::unique_ptr<httplib::Server> server;
  if (!options.tls_cert.empty()) {
    auto ssl = std::make_unique<httplib::SSLServer>(options.tls_cert.c_str(), options.tls_key.c_str());
    if (!ssl->is_valid()) {
      return absl::InvalidArgumentError(absl::StrCat("--http-listen: cannot serve HTTPS with --tls-cert '",
                                                     options.tls_cert, "' and --tls-key '", options.tls_key, "'"));
    }
    server = std::move(ssl);
  } else {
    server = std::make_unique<httplib::Server>();
  }
  server->new_task_queue = [] { return new httplib::ThreadPool(kPoolThreads); };
  server->set_keep_alive_timeout(2);
  return server;
}

// The bound port; UNAVAILABLE when taken.
absl::StatusOr<int> Bind(httplib::Server& server, const std::string& listen, const HostPort& where) {
  int port = where.port;
  if (port == 0) {
    port = server.bind_to_any_port(where.host);
    if (port < 0) port = 0;
  } else if (!server.bind_to_port(where.host, port)) {
    port = 0;
  }
  if (port == 0) return absl::UnavailableError(absl::StrCat("cannot listen on --http-listen ", listen));
  return port;
}

}  // namespace tidegate::http
