// tidegate-echo-server: answers the load generator's calls (Admit, Release,
// GetTeam, Ping) at once, with replies shaped like tidegated's, and keeps
// nothing. It is the ceiling of the load generator's mix on this machine:
// the rate the same clients reach when the server costs only gRPC's own work
// for each call. tidegated's mix rate over this one says how much of what the
// machine allows the broker reaches (bench/run-loadgen.sh with SERVER=echo).
//
//   tidegate-echo-server --listen 127.0.0.1:0
//
// Prints "tidegate-echo-server listening on ADDRESS", the broker's line with
// its own name, so the same script drives both. Serves until SIGTERM or SIGINT.
#include <signal.h>

#include <cstdio>
#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "grpcpp/grpcpp.h"
#include "tidegate/v1/service.grpc.pb.h"

namespace {

namespace v1 = tidegate::v1;

// The job as tidegated describes it (ToJobInfo in
// broker/service/read_model.cc): the same fields set, so the reply is about
// the same size on the wire (79 bytes for an Admit's, tidegated's 86).
void DescribeJob(const v1::JobSpec& spec, v1::JobState state, v1::JobInfo* out) {
  out->set_job(spec.job());
  out->set_team(spec.team());
  out->set_cluster(spec.cluster().empty() ? "a" : spec.cluster());
  out->set_state(state);
  out->set_replicas(spec.replicas());
  out->set_priority(spec.priority());
  out->set_created_at_ms(1795700000000);
  out->set_admitted_at_ms(1795700000000);
  out->set_last_admitted_at_ms(1795700000000);
  if (state == v1::JOB_STATE_ENDED) out->set_ended_at_ms(1795700000001);
  for (const auto& [resource, q] : spec.per_replica()) (*out->mutable_demand())[resource] = q * spec.replicas();
  *out->mutable_spec() = spec;
}

// Every reply is ready when the handler returns: finish the call at once.
grpc::ServerUnaryReactor* FinishNow(grpc::CallbackServerContext* ctx) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

class Admission final : public v1::AdmissionService::CallbackService {
  grpc::ServerUnaryReactor* Admit(grpc::CallbackServerContext* ctx, const v1::AdmitRequest* req,
                                  v1::AdmitResponse* resp) override {
    resp->set_decision(v1::DECISION_ADMITTED);
    DescribeJob(req->job(), v1::JOB_STATE_ADMITTED, resp->mutable_job());
    return FinishNow(ctx);
  }
  grpc::ServerUnaryReactor* Release(grpc::CallbackServerContext* ctx, const v1::ReleaseRequest* req,
                                    v1::ReleaseResponse* resp) override {
    v1::JobSpec spec;
    spec.set_job(req->job());
    spec.set_team("t0");
    spec.set_replicas(1);
    (*spec.mutable_per_replica())["gpu"] = 1;
    DescribeJob(spec, v1::JOB_STATE_ENDED, resp->mutable_job());
    return FinishNow(ctx);
  }
};

// A leaf team of the load generator's config (bench/loadgen.yaml) as
// GetTeam describes it (ToTeamInfo).
v1::TeamInfo DescribeTeam(const std::string& name) {
  v1::TeamInfo t;
  t.set_name(name);
  t.set_leaf(true);
  t.set_weight(1);
  t.set_share(0.25);
  t.set_running_jobs(40);
  t.set_queued_jobs(3);
  v1::TeamResource* r = t.add_resources();
  r->set_resource("gpu");
  r->set_guaranteed(64);
  r->set_used(40);
  r->set_borrowed(0);
  r->set_queued(3);
  (*t.mutable_quota())["gpu"].set_guaranteed(64);
  return t;
}

class Quota final : public v1::QuotaService::CallbackService {
  grpc::ServerUnaryReactor* GetTeam(grpc::CallbackServerContext* ctx, const v1::GetTeamRequest* req,
                                    v1::TeamInfo* resp) override {
    *resp = DescribeTeam(req->team());
    return FinishNow(ctx);
  }
};

class Diagnostics final : public v1::DiagnosticsService::CallbackService {
  grpc::ServerUnaryReactor* Ping(grpc::CallbackServerContext* ctx, const v1::PingRequest*,
                                 v1::PingResponse*) override {
    return FinishNow(ctx);
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::string listen = "127.0.0.1:0";
  CLI::App app{"tidegate-echo-server: answers the load generator at once, the ceiling of its mix on this machine"};
  app.add_option("--listen", listen, "address to serve (loopback)")->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  // SIGTERM and SIGINT wait for sigwait below; gRPC's threads inherit the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  Admission admission;
  Quota quota;
  Diagnostics diagnostics;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&admission);
  builder.RegisterService(&quota);
  builder.RegisterService(&diagnostics);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    std::fprintf(stderr, "tidegate-echo-server: cannot listen on %s\n", listen.c_str());
    return 1;
  }
  const std::string host = listen.substr(0, listen.rfind(':'));
  std::printf("tidegate-echo-server listening on %s:%d\n", host.c_str(), port);
  std::fflush(stdout);
  int signal = 0;
  sigwait(&stop_signals, &signal);
  server->Shutdown();
  return 0;
}
