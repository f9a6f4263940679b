#include "broker/http/http_server.h"

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "broker/http/assets.h"
#include "broker/http/broker_metrics.h"
#include "broker/http/endpoint_kit.h"
#include "broker/http/health.h"
#include "broker/http/html.h"
#include "broker/http/views.h"
#include "broker/service/agent_service.h"
#include "broker/service/auth_services.h"
#include "broker/service/core_loop.h"
#include "broker/service/forecast_service.h"
#include "broker/service/stream_limits.h"
#include "forecast/svg_plot.h"
#include "ledger/postgres_store.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"

namespace tidegate::http {
namespace {

constexpr char kListTeams[] = "/tidegate.v1.QuotaService/ListTeams";
constexpr char kForecast[] = "/tidegate.v1.ForecastService/Forecast";
// Long polls hold a pool thread each (MakeServer's pool is larger); past
// this many they answer at once, so /metrics and the probes always find a
// free thread.
constexpr int kMaxWatchers = 8;
constexpr auto kWatchTimeout = std::chrono::seconds(25);
constexpr int64_t kForecastCacheMs = 10 * 60 * 1000;
constexpr int kLoanDays = 7;

int64_t NowMs() { return absl::ToUnixMillis(absl::Now()); }

// Wakes long polls after each committed batch.
struct Changes {
  std::mutex mu;
  std::condition_variable cv;
  int64_t batches = 0;   // guarded by mu
  bool stopping = false;  // guarded by mu
  int watchers = 0;      // guarded by mu
};

class HttpEndpoint final : public service::SideServer {
 public:
  HttpEndpoint(const service::ServerOptions& options, const service::BrokerParts& parts)
      : options_(options), parts_(parts), metrics_(std::make_shared<BrokerMetrics>()),
        changes_(std::make_shared<Changes>()) {}

  ~HttpEndpoint() override {
    {
      std::lock_guard<std::mutex> lock(changes_->mu);
      changes_->stopping = true;
    }
    changes_->cv.notify_all();
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
  }

  absl::Status Start() {
    auto where = ParseListen(options_.http_listen);
    if (!where.ok()) return where.status();
    ledger::SqliteOptions read_only;
    read_only.read_only = true;
    auto reader = ledger::OpenLedgerStore(options_.db_path, read_only);
    if (!reader.ok()) return reader.status();
    reader_ = *std::move(reader);

    auto made = MakeServer(options_);
    if (!made.ok()) return made.status();
    server_ = *std::move(made);
    const bool tls = !options_.tls_cert.empty();
    Routes(tls);
    auto port = Bind(*server_, options_.http_listen, *where);
    if (!port.ok()) return port.status();

    auto metrics = metrics_;
    auto changes = changes_;
    parts_.loop->SetBatchObserver([metrics, changes](const service::BatchStats& stats) {
      metrics->ObserveBatch(stats);
      if (!stats.committed) return;
      {
        std::lock_guard<std::mutex> lock(changes->mu);
        ++changes->batches;
      }
      changes->cv.notify_all();
    });
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    const std::string host = where->host.find(':') != std::string::npos ? "[" + where->host + "]" : where->host;
    spdlog::info("http: serving on {}:{}{}", host, *port, tls ? " (HTTPS)" : "");
    return absl::OkStatus();
  }

 private:
  // The principal for `method`/`scope`, or the refusal already sent.
  bool Allowed(const httplib::Request& req, httplib::Response& res, const char* method, const std::string& team) {
    auto who = parts_.authenticator->CheckBearer(Authorization(req), method, service::auth::CallScope{team, "", ""});
    if (who.ok()) return true;
    const bool unauthenticated = absl::IsUnauthenticated(who.status());
    if (unauthenticated) res.set_header("WWW-Authenticate", "Bearer realm=\"tidegate\"");
    const std::string message = absl::StrCat(who.status().message(),
                                             unauthenticated ? " (browsers: sign in at /login)" : "");
    if (absl::StartsWith(req.path, "/metrics") || absl::StartsWith(req.path, "/api/")) {
      SendText(res, unauthenticated ? 401 : 403, message + "\n");
    } else {
      SendPage(res, unauthenticated ? 401 : 403, MessagePage(unauthenticated ? "Sign in" : "Not allowed", message));
    }
    return false;
  }

  HealthInputs Health() const {
    HealthInputs in;
    in.now_ms = NowMs();
    in.writer_wake_ms = parts_.loop->LastLoopWakeMs();
    const auto& policy = parts_.loop->Published()->config().policy();
    in.tick_ms = std::max<int64_t>(1, policy.has_tick_s() ? policy.tick_s() : 10) * 1000;
    in.ledger = parts_.loop->LedgerHealth();
    in.lease_epoch = parts_.lease_epoch;
    return in;
  }

  MayRead ReadableBy(const httplib::Request& req) const {
    const std::string authorization = Authorization(req);
    const service::auth::Authenticator* auth = parts_.authenticator;
    return [authorization, auth](const std::string& team) {
      return auth->CheckBearer(authorization, kGetTeam, service::auth::CallScope{team, "", ""}).ok();
    };
  }

  TeamExtras Extras(const v1::TeamInfo& team) {
    TeamExtras extras;
    const std::string since = absl::FormatTime("%Y-%m-%d", absl::Now() - absl::Hours(24 * kLoanDays),
                                                absl::UTCTimeZone());
    {
      std::lock_guard<std::mutex> lock(reader_mu_);
      auto loans = reader_->Loans(team.name(), since);
      if (loans.ok()) {
        extras.loans = *std::move(loans);
      } else {
        extras.loans_error = absl::StrCat("loans cannot be read from the ledger: ", loans.status().message());
      }
    }
    for (const auto& r : team.resources()) {
      if (r.resource() == "gpu" || extras.forecast_resource.empty()) extras.forecast_resource = r.resource();
    }
    return extras;
  }

  // The live part of the page a watch asks about; false when it is gone.
  bool Live(const httplib::Request& req, httplib::Response& res, LivePart* out) {
    auto model = parts_.loop->Published();
    if (req.get_param_value("view") == "team") {
      const std::string name = req.get_param_value("name");
      const std::optional<v1::TeamInfo> team = model->TeamWithFigures(name);
      if (!team.has_value()) {
        SendText(res, 404, absl::StrCat("no team '", name, "'\n"));
        return false;
      }
      *out = TeamLive(*model, *team, Extras(*team));
      return true;
    }
    *out = OverviewLive(*model, ReadableBy(req));
    return true;
  }

  void Watch(const httplib::Request& req, httplib::Response& res) {
    const bool team_view = req.get_param_value("view") == "team";
    if (!Allowed(req, res, team_view ? kGetTeam : kListTeams, team_view ? req.get_param_value("name") : "")) return;
    const std::string since = req.get_param_value("since");
    std::unique_lock<std::mutex> lock(changes_->mu);
    int64_t seen = changes_->batches;  // the model read next is at least this new
    lock.unlock();
    LivePart live;
    if (!Live(req, res, &live)) return;
    const auto deadline = std::chrono::steady_clock::now() + kWatchTimeout;
    lock.lock();
    if (live.version == since && changes_->watchers < kMaxWatchers) {
      ++changes_->watchers;
      while (live.version == since && !changes_->stopping) {
        if (!changes_->cv.wait_until(lock, deadline, [&] { return changes_->batches != seen || changes_->stopping; })) {
          break;  // timed out: answer the same version, the script asks again
        }
        seen = changes_->batches;
        lock.unlock();
        const bool found = Live(req, res, &live);
        lock.lock();
        if (!found) {
          --changes_->watchers;
          return;
        }
      }
      --changes_->watchers;
    }
    lock.unlock();
    nlohmann::json body = {{"version", live.version}, {"html", live.html}};
    SecurityHeaders(res);
    res.set_content(body.dump(), "application/json");
  }

  void ForecastSvg(const httplib::Request& req, httplib::Response& res) {
    const std::string team = req.get_param_value("name");
    const std::string resource = req.has_param("resource") ? req.get_param_value("resource") : "gpu";
    if (!Allowed(req, res, kForecast, team)) return;
    std::lock_guard<std::mutex> lock(forecast_mu_);  // one fit at a time
    const std::string key = team + '\n' + resource;
    auto cached = forecast_cache_.find(key);
    const int64_t now = NowMs();
    if (cached == forecast_cache_.end() || now - cached->second.made_ms > kForecastCacheMs) {
      v1::ForecastRequest fr;
      fr.mutable_series()->set_team(team);
      fr.mutable_series()->set_resource(resource);
      fr.mutable_series()->set_metric(v1::USAGE_METRIC_DEMAND);
      fr.set_horizon_hours(48);
      fr.set_history_hours(168);
      CachedChart chart;
      chart.made_ms = now;
      auto fitted = parts_.forecast->RunForecast(fr);
      if (!fitted.ok()) {
        chart.status = absl::IsNotFound(fitted.status()) ? 404 : absl::IsInvalidArgument(fitted.status()) ? 400 : 409;
        chart.body = absl::StrCat(fitted.status().message(), "\n");
      } else {
        forecast::PlotInput plot;
        plot.title = absl::StrCat("team ", team, ": ", resource, " demand (", fitted->model(), ")");
        plot.history.assign(fitted->history().begin(), fitted->history().end());
        for (const v1::ForecastPoint& p : fitted->forecast()) {
          plot.forecast.push_back(forecast::QuantileForecast{p.p10(), p.p50(), p.p90(), p.p99()});
        }
        if (fitted->forecast_size() > 0) {
          plot.forecast_start = absl::ToCivilHour(absl::FromUnixSeconds(fitted->forecast(0).t()), absl::UTCTimeZone());
        }
        chart.body = forecast::RenderForecastSvg(plot);
      }
      cached = forecast_cache_.insert_or_assign(key, std::move(chart)).first;
    }
    SecurityHeaders(res);
    res.status = cached->second.status;
    res.set_content(cached->second.body, cached->second.status == 200 ? "image/svg+xml" : "text/plain; charset=utf-8");
  }

  void Routes(bool tls) {
    httplib::Server& s = *server_;
    s.Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
      const Verdict v = Liveness(Health());
      SendText(res, v.ok ? 200 : 503, v.text + "\n");
    });
    s.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
      const Verdict v = Readiness(Health());
      SendText(res, v.ok ? 200 : 503, v.text + "\n");
    });
    s.Get("/metrics", [this](const httplib::Request& req, httplib::Response& res) {
      if (!Allowed(req, res, kGetTeam, "")) return;  // every team's figures
      LiveFigures live;
      live.now_ms = NowMs();
      live.open_streams = parts_.streams != nullptr ? parts_.streams->open() : 0;
      live.connected_clusters = parts_.agents != nullptr ? parts_.agents->ConnectedClusters()
                                                         : std::vector<std::string>{};
      const HealthInputs health = Health();
      live.ledger_writable = health.ledger.ok();
      live.ledger_lost_commits = health.ledger.code() == absl::StatusCode::kDataLoss;
      live.writer_alive = Liveness(health).ok;
      live.lease_epoch = parts_.lease_epoch;
      live.snapshot_failures = parts_.loop->SnapshotFailures();
      {
        std::lock_guard<std::mutex> lock(changes_->mu);
        live.watch_requests = changes_->watchers;
      }
      res.set_content(metrics_->Render(*parts_.loop->Published(), live), "text/plain; version=0.0.4; charset=utf-8");
    });
    s.Get("/", [this](const httplib::Request& req, httplib::Response& res) {
      if (!Allowed(req, res, kListTeams, "")) return;
      auto model = parts_.loop->Published();
      SendPage(res, 200, Page("Tidegate: quota tree", "/api/watch?view=overview", OverviewLive(*model, ReadableBy(req))));
    });
    s.Get("/team", [this](const httplib::Request& req, httplib::Response& res) {
      const std::string name = req.get_param_value("name");
      if (!Allowed(req, res, kGetTeam, name)) return;
      auto model = parts_.loop->Published();
      if (const std::optional<v1::TeamInfo> team = model->TeamWithFigures(name); team.has_value()) {
        SendPage(res, 200,
                 Page("Tidegate: team " + name, "/api/watch?view=team&name=" + UrlEncode(name),
                      TeamLive(*model, *team, Extras(*team))));
        return;
      }
      SendPage(res, 404, MessagePage("No such team", absl::StrCat("the config has no team '", name, "'")));
    });
    s.Get("/api/watch", [this](const httplib::Request& req, httplib::Response& res) { Watch(req, res); });
    s.Get("/team/forecast.svg", [this](const httplib::Request& req, httplib::Response& res) { ForecastSvg(req, res); });
    s.Get("/static/style.css", [](const httplib::Request&, httplib::Response& res) {
      res.set_header("X-Content-Type-Options", "nosniff");
      res.set_content(kStyleCss, "text/css; charset=utf-8");
    });
    s.Get("/static/app.js", [](const httplib::Request&, httplib::Response& res) {
      res.set_header("X-Content-Type-Options", "nosniff");
      res.set_content(kAppJs, "text/javascript; charset=utf-8");
    });
    // Browsers send no Authorization header: a token pasted here is kept in
    // an HttpOnly cookie (Secure under HTTPS) that stands for it.
    s.Get("/login", [](const httplib::Request&, httplib::Response& res) {
      SendPage(res, 200,
               "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Tidegate: sign in</title>"
               "<link rel=\"stylesheet\" href=\"/static/style.css\"></head><body><header><h1>Tidegate</h1></header>"
               "<main><form method=\"post\" action=\"/login\"><label>Bearer token <input type=\"password\" "
               "name=\"token\" autocomplete=\"off\"></label> <button>Sign in</button></form></main></body></html>\n");
    });
    s.Post("/login", [tls](const httplib::Request& req, httplib::Response& res) {
      const std::string token = req.get_param_value("token");
      const bool ok = !token.empty() && token.find_first_of(";, \t\r\n") == std::string::npos;
      if (!ok) {
        SendPage(res, 400, MessagePage("Sign in", "the token is empty or holds spaces, commas or semicolons"));
        return;
      }
      res.set_header("Set-Cookie", absl::StrCat(kTokenCookie, "=", token, "; Path=/; HttpOnly; SameSite=Strict",
                                                tls ? "; Secure" : ""));
      res.set_redirect("/", 303);
    });
  }

  struct CachedChart {
    int64_t made_ms = 0;
    int status = 200;
    std::string body;
  };

  const service::ServerOptions options_;
  service::BrokerParts parts_;
  std::shared_ptr<BrokerMetrics> metrics_;
  std::shared_ptr<Changes> changes_;
  std::mutex reader_mu_;
  std::unique_ptr<ledger::Store> reader_;  // guarded by reader_mu_
  std::mutex forecast_mu_;
  std::map<std::string, CachedChart> forecast_cache_;  // guarded by forecast_mu_; bounded by teams × resources
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
};

}  // namespace

absl::Status CheckHttpListen(const service::ServerOptions& options) {
  if (auto parsed = ParseListen(options.http_listen); !parsed.ok()) return parsed.status();
  const bool tls = !options.tls_cert.empty() && !options.tls_key.empty();
  if (!service::IsLoopbackListen(options.http_listen) && (!tls || options.roles_path.empty()) && !options.insecure) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--http-listen '", options.http_listen, "' is reachable from the network, but ",
        !tls ? "TLS is off (--tls-cert, --tls-key)" : "no --roles file is given (everyone could read every team)",
        "; configure both, or pass --insecure"));
  }
  return absl::OkStatus();
}

service::SideServerFactory HttpSideServer(const service::ServerOptions& options) {
  return StartingFactory<HttpEndpoint, service::BrokerParts>(options);
}

}  // namespace tidegate::http
