#include "broker/service/server.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <mutex>

#include "absl/synchronization/mutex.h"
#include "api/yaml_loader.h"
#include "broker/core/config.h"
#include "broker/service/agent_service.h"
#include "broker/service/auth_server.h"
#include "broker/service/core_loop.h"
#include "broker/service/elastic_service.h"
#include "broker/service/forecast_service.h"
#include "broker/service/services.h"
#include "broker/service/leader.h"
#include "broker/service/leader_standby.h"
#include "ledger/postgres_conn.h"
#include "ledger/postgres_store.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

namespace tidegate::service {

// About 180 lines: the broker's whole life in the order it must happen —
// config, signals, the ledger (its lock, or a standby until it leads), the
// loop, the services, the gRPC and side servers, then shutdown in reverse —
// each step using what the ones before built; the steps are marked by comments.
int RunServer(const ServerOptions& options, const SideServerFactory& side, const StandbySideFactory& standby_side) {
  // Logs go to stderr; stdout carries only the "listening on" line.
  spdlog::set_default_logger(spdlog::stderr_color_mt("tidegated"));
  // The system's Abseil is built with lock-order (deadlock) tracking on: every
  // Mutex lock took a global graph's lock and every destroyed Mutex (gRPC
  // makes some per call) left it, about 1 % of the broker's CPU under load.
  // That tracking is a debugging aid (unit tests of the loop, which do not
  // start a server, keep it).
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  v1::Config config;
  if (auto s = api::LoadYamlFile(options.config_path, &config); !s.ok()) {
    std::cerr << "tidegated: " << s.message() << "\n";
    return 2;
  }
  auto compiled = core::CompileConfig(config);
  if (!compiled.ok()) {
    std::cerr << "tidegated: " << options.config_path << ": " << compiled.status().message() << "\n";
    return 2;
  }
  for (const auto& w : compiled->warnings) spdlog::warn("config: {}", w);
  // Signals are taken by sigwait() below; block them before any thread
  // starts, and only now: while the config is read, SIGTERM still ends us.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);  // re-read the roles and tokens files
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  auto security = SetUpSecurity(options);
  if (!security.ok()) {
    std::cerr << "tidegated: " << security.status().message() << "\n";
    return 2;
  }
  const auth::Authenticator* authenticator = security->authenticator.get();

  // SQLite: the file's lock; PostgreSQL: a standby until this broker leads
  // (leader.h). Held until RunServer returns, after the loop closed the store.
  int writer_exit = 0;
  std::optional<LedgerWriter> writer = OpenLedgerWriter(options, security->credentials, signals, &writer_exit,
                                                                 standby_side, authenticator);
  if (!writer.has_value()) return writer_exit;
  auto store = std::move(writer->store);
  RealClock clock;
  CoreLoopOptions loop_options;
  loop_options.snapshot_every = options.snapshot_every;
  loop_options.snapshot_journal_ratio = options.snapshot_journal_ratio;
  loop_options.max_queued = options.max_queued_commands;
  loop_options.max_command_bytes = options.max_request_bytes;
  loop_options.max_config_bytes = options.max_config_bytes;
  const auto started = std::chrono::steady_clock::now();
  auto loop = CoreLoop::Open(config, std::move(store), &clock, loop_options, options.init, std::move(writer->warm));
  if (!loop.ok()) {
    std::cerr << "tidegated: " << loop.status().message() << "\n";
    return 1;
  }
  ledger::SqliteOptions read_only;
  read_only.read_only = true;
  auto reader = ledger::OpenLedgerStore(options.db_path, read_only);
  if (!reader.ok()) {
    std::cerr << "tidegated: " << reader.status().message() << "\n";
    return 1;
  }
  const auto recovered_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
  spdlog::info("ledger {} ready in {} ms ({} jobs)", ledger::RedactConninfo(options.db_path), recovered_ms,
               (*loop)->Published()->Jobs("", v1::JOB_STATE_UNSPECIFIED).size());

  // ForecastService fits on its own worker thread, from its own ledger reader.
  auto forecast_reader = ledger::OpenLedgerStore(options.db_path, read_only);
  if (!forecast_reader.ok()) {
    std::cerr << "tidegated: " << forecast_reader.status().message() << "\n";
    return 1;
  }
  StreamLimiter streams(StreamLimits{options.max_streams, options.max_streams_per_peer});
  AdmissionServiceImpl admission(loop->get(), &streams);
  QuotaServiceImpl quota(loop->get(), *std::move(reader));
  quota.SetStartupConfigFile(options.config_path);
  ForecastServiceImpl forecast(loop->get(), *std::move(forecast_reader), &clock);
  DiagnosticsServiceImpl diagnostics(loop->get());
  AgentServiceImpl agents(loop->get(), &streams);
  ElasticServiceImpl elastic(loop->get(), &streams);
  (*loop)->SetPublishHook([&admission, &agents, &elastic](const PublishedChange& change) {
    admission.Notify(change);
    agents.Notify();
    elastic.Notify(change);
  });
  // gRPC health is readiness for writes: while commits fail the services
  // that write and the server as a whole ("") are NOT_SERVING; the read-only
  // ones stay SERVING, as their reads keep being answered.
  std::mutex health_mu;
  grpc::HealthCheckServiceInterface* health = nullptr;  // guarded by health_mu
  const auto report = [](grpc::HealthCheckServiceInterface* to, bool writes_accepted) {
    for (const char* writer : {v1::AdmissionService::service_full_name(),
                                      v1::ElasticService::service_full_name(), v1::AgentService::service_full_name()}) {
      to->SetServingStatus(writer, writes_accepted);
    }
    for (const char* reader : {v1::QuotaService::service_full_name(), v1::ForecastService::service_full_name(),
                                      v1::DiagnosticsService::service_full_name()}) {
      to->SetServingStatus(reader, true);
    }
    to->SetServingStatus("", writes_accepted);
    to->SetServingStatus(kLeaderHealthService, true);  // a standby answers NOT_SERVING (leader_standby.h)
  };
  (*loop)->SetHealthHook([&health_mu, &health, report](const absl::Status& status) {
    std::lock_guard<std::mutex> lock(health_mu);
    if (status.ok()) {
      spdlog::info("health: SERVING (the ledger accepts writes again)");
    } else {
      spdlog::error("health: NOT_SERVING: {}", std::string(status.message()));
    }
    if (health != nullptr) report(health, status.ok());
  });
  std::unique_ptr<SideServer> side_server;
  if (side) {
    const int64_t lease_epoch = writer->leadership ? writer->leadership->epoch() : 0;
    auto started_side = side(BrokerParts{loop->get(), authenticator, &forecast, &streams, &agents, lease_epoch});
    if (!started_side.ok()) {
      std::cerr << "tidegated: " << started_side.status().message() << "\n";
      return 1;
    }
    side_server = *std::move(started_side);
  }
  (*loop)->Start();

  grpc::EnableDefaultHealthCheckService(true);
  if (options.reflection) grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  // Refuse a port another process already serves (gRPC allows SO_REUSEPORT).
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // The largest message of any method; each method's own bound is smaller
  // (CoreLoopOptions::max_command_bytes).
  builder.SetMaxReceiveMessageSize(static_cast<int>(std::min<int64_t>(options.max_config_bytes, INT32_MAX)));
  int port = 0;
  builder.AddListeningPort(options.listen, security->credentials, &port);
  // Callers reach the services only through the guards (auth_services.h).
  const std::vector<std::unique_ptr<grpc::Service>> guards =
      auth::GuardServices({&admission, &quota, &forecast, &diagnostics, &agents, &elastic}, authenticator, loop->get());
  for (const auto& guard : guards) builder.RegisterService(guard.get());
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    std::cerr << "tidegated: cannot listen on " << options.listen << "\n";
    (*loop)->Stop();
    return 1;
  }
  {
    std::lock_guard<std::mutex> lock(health_mu);
    health = server->GetHealthCheckService();
    report(health, (*loop)->LedgerHealth().ok());
  }
  // Tests and scripts wait for this line (the port is real even for :0).
  std::string address = options.listen.substr(0, options.listen.rfind(':') + 1) + std::to_string(port);
  std::printf("tidegated listening on %s\n", address.c_str());
  std::fflush(stdout);
  spdlog::info("serving on {}", address);

  int sig = 0;
  while (sigwait(&signals, &sig) == 0 && sig == SIGHUP) {
    if (absl::Status reloaded = security->authenticator->Reload(); reloaded.ok()) {
      spdlog::info("SIGHUP: roles and tokens reloaded");
    } else {
      spdlog::error("SIGHUP: reload failed, the previous roles and tokens stay in force: {}",
                    std::string(reloaded.message()));
    }
  }
  spdlog::info("signal {}: stopping (finishing what is in flight)", sig);
  {
    std::lock_guard<std::mutex> lock(health_mu);
    health->SetServingStatus(false);
    health = nullptr;
  }
  // New calls get UNAVAILABLE from the broker itself until callers go quiet,
  // never CANCELLED by gRPC's Shutdown (auth_services.h: StartDraining).
  security->authenticator->StartDraining();
  admission.CloseStreams();
  agents.CloseStreams();
  elastic.CloseStreams();
  security->authenticator->WaitUntilQuiet(std::chrono::milliseconds(200), std::chrono::seconds(2));
  // Calls in flight finish, since the loop still runs.
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(10));
  (*loop)->Stop();  // drains the queue, writes a snapshot (none after lost commits).
  side_server.reset();
  if (absl::Status ledger = (*loop)->LedgerHealth(); ledger.code() == absl::StatusCode::kDataLoss) {
    // The operator must see that this stop wrote nothing and why.
    spdlog::error("stopped without writing to the ledger: {}", std::string(ledger.message()));
    return 1;
  }
  spdlog::info("stopped cleanly at seq {}", (*loop)->last_seq());
  return 0;
}

}  // namespace tidegate::service
