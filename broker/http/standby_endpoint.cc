// A standby broker's HTTP endpoint (PostgreSQL ledger): what it serves on
// --http-listen until it leads (http_server.h).
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "broker/http/broker_metrics.h"
#include "broker/http/endpoint_kit.h"
#include "broker/http/health.h"
#include "broker/http/http_server.h"
#include "broker/service/auth_services.h"
#include "broker/service/leader_standby.h"
#include "spdlog/spdlog.h"

namespace tidegate::http {
namespace {

// A standby broker's endpoint (PostgreSQL ledger): the probes, /metrics
// saying it does not lead, and 503 naming the leader for everything else
// (the web view needs the leader's core).
class StandbyEndpoint final : public service::SideServer {
 public:
  StandbyEndpoint(const service::ServerOptions& options, const service::StandbyParts& parts)
      : options_(options), parts_(parts) {}
  ~StandbyEndpoint() override {
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
  }

  absl::Status Start() {
    auto where = ParseListen(options_.http_listen);
    if (!where.ok()) return where.status();
    auto made = MakeServer(options_);
    if (!made.ok()) return made.status();
    server_ = *std::move(made);
    httplib::Server& s = *server_;
    s.Get("/healthz", [](const httplib::Request&, httplib::Response& res) { SendText(res, 200, "ok: standby\n"); });
    s.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
      const Verdict v = StandbyReadiness(Inputs());
      SendText(res, v.ok ? 200 : 503, v.text + "\n");
    });
    s.Get("/metrics", [this](const httplib::Request& req, httplib::Response& res) {
      absl::Status who;  // every team's figures, as the leader's /metrics
      if (parts_.authenticator != nullptr) {
        who = parts_.authenticator->CheckBearer(Authorization(req), kGetTeam, service::auth::CallScope{"", "", ""})
                  .status();
      }
      if (!who.ok()) {
        SendText(res, absl::IsUnauthenticated(who) ? 401 : 403, std::string(who.message()) + "\n");
        return;
      }
      const StandbyInputs in = Inputs();
      res.set_content(RenderStandbyMetrics(in.lease_epoch, in.problem.empty()),
                      "text/plain; version=0.0.4; charset=utf-8");
    });
    s.Get(".*", [this](const httplib::Request&, httplib::Response& res) {
      const std::string leader = parts_.standby->leader();
      SendText(res, 503, leader.empty() ? "standby: no leader yet, try again shortly\n"
                                        : absl::StrCat("standby: the leader is at ", leader, "\n"));
    });
    auto port = Bind(s, options_.http_listen, *where);
    if (!port.ok()) return port.status();
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    spdlog::info("http: serving the standby's probes and metrics on port {}", *port);
    return absl::OkStatus();
  }

 private:
  StandbyInputs Inputs() const {
    return StandbyInputs{parts_.standby->leader(), parts_.standby->lease_epoch(), parts_.standby->problem()};
  }
  const service::ServerOptions options_;
  service::StandbyParts parts_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
};

}  // namespace

service::StandbySideFactory HttpStandbySideServer(const service::ServerOptions& options) {
  return StartingFactory<StandbyEndpoint, service::StandbyParts>(options);
}

}  // namespace tidegate::http
