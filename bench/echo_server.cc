// tidegate-echo-server: answers the load generator's calls (Admit, Release,
// GetTeam, Ping), by default at once, with replies shaped like tidegated's,
// and keeps nothing. Answering at once, it is the ceiling of the load
// generator's mix on this machine: the rate the same clients reach when the
// server costs only gRPC's own work for each call. tidegated's mix rate over
// this one says how much of what the machine allows the broker reaches
// (bench/run-loadgen.sh with SERVER=echo).
//
//   tidegate-echo-server --listen 127.0.0.1:0 [--hand-offs 0|1|2] [--commit-us N] [--combine]
//
// The flags model how a durable broker must answer, with no decision and no
// ledger: --hand-offs says how many threads an Admit or Release passes
// through before its reply is finished, as tidegated's pass through its
// writer and its responder (2); --commit-us makes each batch of the first
// of them sleep as a group commit waits for its sync; --combine instead has
// the handler's own gRPC thread take every queued call, "commit" and finish
// them (no hand-off). Reads (GetTeam, Ping) are finished at once, as
// tidegated answers them from its read model.
//
// Prints "tidegate-echo-server listening on ADDRESS", the broker's line with
// its own name, so the same script drives both. Serves until SIGTERM or SIGINT.
#include <signal.h>

#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

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

// Sleeps as a group commit waits for its sync (--commit-us).
void Commit(int64_t commit_us) {
  if (commit_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(commit_us));
}

// A thread that takes all the calls handed to it at each wake-up and, after
// `commit_us`, finishes them or hands them on to the next stage.
class Stage {
 public:
  Stage(Stage* next, int64_t commit_us) : next_(next), commit_us_(commit_us), thread_([this] { Run(); }) {}
  ~Stage() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  void Add(const std::vector<grpc::ServerUnaryReactor*>& calls) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.insert(queue_.end(), calls.begin(), calls.end());
    }
    cv_.notify_one();
  }

 private:
  void Run() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      std::vector<grpc::ServerUnaryReactor*> batch;
      batch.swap(queue_);
      lock.unlock();
      Commit(commit_us_);
      if (next_ != nullptr) {
        next_->Add(batch);
      } else {
        for (auto* call : batch) call->Finish(grpc::Status::OK);
      }
      lock.lock();
    }
  }
  Stage* next_;
  int64_t commit_us_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<grpc::ServerUnaryReactor*> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

class Admission final : public v1::AdmissionService::CallbackService {
 public:
  // `first` null: finish at once, or combine when `combine`.
  Admission(Stage* first, bool combine, int64_t commit_us) : first_(first), combine_(combine), commit_us_(commit_us) {}

 private:
  grpc::ServerUnaryReactor* Decided(grpc::CallbackServerContext* ctx) {
    if (combine_) return Combined(ctx);
    if (first_ == nullptr) return FinishNow(ctx);
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    first_->Add({reactor});
    return reactor;
  }
  grpc::ServerUnaryReactor* Admit(grpc::CallbackServerContext* ctx, const v1::AdmitRequest* req,
                                  v1::AdmitResponse* resp) override {
    resp->set_decision(v1::DECISION_ADMITTED);
    DescribeJob(req->job(), v1::JOB_STATE_ADMITTED, resp->mutable_job());
    return Decided(ctx);
  }
  grpc::ServerUnaryReactor* Release(grpc::CallbackServerContext* ctx, const v1::ReleaseRequest* req,
                                    v1::ReleaseResponse* resp) override {
    v1::JobSpec spec;
    spec.set_job(req->job());
    spec.set_team("t0");
    spec.set_replicas(1);
    (*spec.mutable_per_replica())["gpu"] = 1;
    DescribeJob(spec, v1::JOB_STATE_ENDED, resp->mutable_job());
    return Decided(ctx);
  }
  // The handler's thread leads when no other does: it takes every call
  // queued, "commits" them and finishes them itself; calls arriving
  // meanwhile wait for the leader's next round.
  grpc::ServerUnaryReactor* Combined(grpc::CallbackServerContext* ctx) {
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    std::unique_lock<std::mutex> lock(combine_mu_);
    combine_queue_.push_back(reactor);
    if (leading_) return reactor;
    leading_ = true;
    while (!combine_queue_.empty()) {
      std::vector<grpc::ServerUnaryReactor*> batch;
      batch.swap(combine_queue_);
      lock.unlock();
      Commit(commit_us_);
      for (auto* call : batch) call->Finish(grpc::Status::OK);
      lock.lock();
    }
    leading_ = false;
    return reactor;
  }

  Stage* first_;
  bool combine_;
  int64_t commit_us_;
  std::mutex combine_mu_;
  std::vector<grpc::ServerUnaryReactor*> combine_queue_;
  bool leading_ = false;
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
  CLI::App app{"tidegate-echo-server: answers the load generator, at once (the ceiling of its mix on this machine)\n"
               "or as a durable broker must (--hand-offs, --commit-us, --combine)"};
  app.add_option("--listen", listen, "address to serve (loopback)")->capture_default_str();
  int hand_offs = 0;
  app.add_option("--hand-offs", hand_offs, "threads an Admit or Release passes through before it is finished")
      ->check(CLI::Range(0, 2))
      ->capture_default_str();
  int64_t commit_us = 0;
  CLI::Option* commit = app.add_option("--commit-us", commit_us, "microseconds a batch waits, as a group commit for its sync")
                            ->check(CLI::Range(0, 1'000'000));
  bool combine = false;
  app.add_flag("--combine", combine, "the handler's own thread commits and finishes the queued calls (no hand-off)")
      ->excludes("--hand-offs");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (commit->count() > 0 && hand_offs == 0 && !combine) {
    std::fprintf(stderr, "--commit-us %lld: needs --hand-offs 1 or 2, or --combine (answered at once, there is no batch)\n",
                 static_cast<long long>(commit_us));
    return 2;
  }
  // SIGTERM and SIGINT wait for sigwait below; gRPC's threads inherit the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  // The responder finishes; the writer, ahead of it, "commits".
  std::unique_ptr<Stage> responder =
      hand_offs >= 1 ? std::make_unique<Stage>(nullptr, hand_offs == 1 ? commit_us : 0) : nullptr;
  std::unique_ptr<Stage> writer = hand_offs >= 2 ? std::make_unique<Stage>(responder.get(), commit_us) : nullptr;
  Admission admission(hand_offs >= 2 ? writer.get() : responder.get(), combine, commit_us);
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
