// tidegate-loadgen: a gRPC load generator for tidegated. N
// concurrent clients on the callback API keep one call each in flight; first
// a no-op RPC (DiagnosticsService.Ping) for the same time as the ceiling, then
// a mix of Admit / Release / GetTeam. Reports calls/s, decisions/s and p50/p99
// latency for both, and decisions as a share of the no-op rate. The longest
// call (max_ms) is the probe for stalls of the writer, e.g. a snapshot
// written on it: `--admit 100 --release 0` keeps every job, so a long run
// fills the broker (snapshots every 10,000 journal entries) and the RSS
// growth over `decisions` is the memory per job (bench/run-loadgen.sh
// prints the broker's RSS before and after).
//
//   tidegate-loadgen --server 127.0.0.1:50051 --clients 32 --seconds 10
//       --teams t0,t1,t2,t3 [-o json]
//
// With --attack-streams / --attack-clients a third phase repeats the mix
// while a hostile client holds idle WaitAdmission streams (as many as the
// broker allows of those asked for) and floods it with rejected and oversized
// Admits, so the well-behaved clients' p99 can be compared with the quiet one.
//
// Every loop is bounded by --seconds and stops by itself; it talks only to
// the address it is given (use a loopback address).
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "cli/auth_channel.h"
#include "cli/leader_channel.h"
#include "grpcpp/grpcpp.h"
#include "tidegate/v1/service.grpc.pb.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string server = "127.0.0.1:50051";
  int clients = 32;
  double seconds = 10;
  std::vector<std::string> teams = {"t0", "t1", "t2", "t3"};
  int admit_pct = 45, release_pct = 45;  // the rest: GetTeam
  std::string output = "table";
  int attack_streams = 0;  // idle WaitAdmission streams to try to open
  int attack_clients = 0;  // concurrent rejected / oversized Admits
  tidegate::cli::ChannelSecurity security;  // TLS and token, as `tidegate` (docs/security.md)
};

struct Stats {
  std::vector<double> latency_ms;
  int64_t calls = 0, decisions = 0, errors = 0;
};

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(p / 100.0 * v.size() + 0.999999);
  rank = std::clamp<size_t>(rank, 1, v.size());
  return v[rank - 1];
}

// One client: a chain of calls, each started from the previous one's
// completion, until the deadline.
class Worker {
 public:
  Worker(std::shared_ptr<grpc::Channel> channel, const Options& o, int id, bool noop, Clock::time_point until)
      : admission_(tidegate::v1::AdmissionService::NewStub(channel)),
        quota_(tidegate::v1::QuotaService::NewStub(channel)),
        diag_(tidegate::v1::DiagnosticsService::NewStub(channel)),
        o_(o), id_(id), noop_(noop), until_(until), rng_(id) {}

  void Start() { Next(); }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return done_; });
  }
  Stats& stats() { return stats_; }

 private:
  void Next() {
    if (Clock::now() >= until_) {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
      cv_.notify_all();
      return;
    }
    ctx_ = std::make_unique<grpc::ClientContext>();
    ctx_->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    started_ = Clock::now();
    if (noop_) {
      diag_->async()->Ping(ctx_.get(), &ping_req_, &ping_resp_, [this](grpc::Status s) { Done(s, false); });
      return;
    }
    const int pick = static_cast<int>(rng_() % 100);
    if (pick < o_.admit_pct || (pick < o_.admit_pct + o_.release_pct && mine_.empty())) {
      admit_req_.Clear();
      auto* job = admit_req_.mutable_job();
      job->set_job("lg-" + std::to_string(id_) + "-" + std::to_string(seq_++));
      job->set_team(o_.teams[rng_() % o_.teams.size()]);
      job->set_replicas(1);
      (*job->mutable_per_replica())["gpu"] = 1;
      pending_job_ = job->job();
      admission_->async()->Admit(ctx_.get(), &admit_req_, &admit_resp_, [this](grpc::Status s) {
        if (s.ok()) mine_.push_back(pending_job_);
        Done(s, true);
      });
    } else if (pick < o_.admit_pct + o_.release_pct) {
      release_req_.set_job(mine_.front());
      mine_.pop_front();
      admission_->async()->Release(ctx_.get(), &release_req_, &release_resp_, [this](grpc::Status s) { Done(s, true); });
    } else {
      team_req_.set_team(o_.teams[rng_() % o_.teams.size()]);
      quota_->async()->GetTeam(ctx_.get(), &team_req_, &team_resp_, [this](grpc::Status s) { Done(s, false); });
    }
  }
  void Done(const grpc::Status& s, bool decision) {
    stats_.latency_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - started_).count());
    ++stats_.calls;
    if (!s.ok()) {
      ++stats_.errors;
    } else if (decision) {
      ++stats_.decisions;
    }
    Next();
  }

  std::unique_ptr<tidegate::v1::AdmissionService::Stub> admission_;
  std::unique_ptr<tidegate::v1::QuotaService::Stub> quota_;
  std::unique_ptr<tidegate::v1::DiagnosticsService::Stub> diag_;
  const Options& o_;
  int id_;
  bool noop_;
  Clock::time_point until_;
  std::mt19937 rng_;
  std::unique_ptr<grpc::ClientContext> ctx_;
  Clock::time_point started_;
  tidegate::v1::PingRequest ping_req_;
  tidegate::v1::PingResponse ping_resp_;
  tidegate::v1::AdmitRequest admit_req_;
  tidegate::v1::AdmitResponse admit_resp_;
  tidegate::v1::ReleaseRequest release_req_;
  tidegate::v1::ReleaseResponse release_resp_;
  tidegate::v1::GetTeamRequest team_req_;
  tidegate::v1::TeamInfo team_resp_;
  std::deque<std::string> mine_;
  std::string pending_job_;
  int64_t seq_ = 0;
  Stats stats_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
};

// CPU time: this process's, and the whole machine's busy time (all CPUs,
// every process: /proc/stat without idle and iowait), so a phase can tell
// what the client itself cost and how full the cores were.
struct CpuClock {
  Clock::time_point at;
  double self_s = 0;
  double busy_s = 0;

  static CpuClock Now() {
    CpuClock c;
    c.at = Clock::now();
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    c.self_s = usage.ru_utime.tv_sec + usage.ru_stime.tv_sec + (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
    std::ifstream stat("/proc/stat");
    std::string cpu;
    double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    if (stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal && cpu == "cpu") {
      c.busy_s = (user + nice + system + irq + softirq + steal) / static_cast<double>(sysconf(_SC_CLK_TCK));
    }
    return c;
  }
};

struct Phase {
  double seconds = 0;
  Stats total;
  double self_cpu_s = 0;    // the load generator's own CPU during the phase
  double busy_cores = 0;    // the machine's busy cores on average, all processes
  double SelfUsPerCall() const { return total.calls > 0 ? self_cpu_s / total.calls * 1e6 : 0; }
};

Phase Run(const Options& o, bool noop, const std::string& label) {
  // Channels spread over a few connections, as real schedulers would be.
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  for (int i = 0; i < 4; ++i) {
    grpc::ChannelArguments args;
    args.SetInt("loadgen.channel", i);  // distinct args: distinct connections
    auto channel = tidegate::cli::MakeBrokerChannel(o.server, o.security, args);
    if (!channel.ok()) {
      std::cerr << "tidegate-loadgen: " << channel.status().message() << "\n";
      std::exit(2);
    }
    channels.push_back(*std::move(channel));
  }
  const auto start = Clock::now();
  const auto until = start + std::chrono::milliseconds(static_cast<int64_t>(o.seconds * 1000));
  std::vector<std::unique_ptr<Worker>> workers;
  for (int i = 0; i < o.clients; ++i) {
    workers.push_back(std::make_unique<Worker>(channels[i % channels.size()], o, i + (noop ? 100000 : 0), noop, until));
  }
  const CpuClock cpu0 = CpuClock::Now();
  for (auto& w : workers) w->Start();
  std::thread progress([&] {
    while (Clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      std::cerr << "  " << label << ": " << static_cast<int>(std::chrono::duration<double>(Clock::now() - start).count())
                << " s\r" << std::flush;
    }
  });
  for (auto& w : workers) w->Wait();
  const CpuClock cpu1 = CpuClock::Now();
  Phase p;
  // Until the last call ended, not until the progress line's next tick.
  p.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  progress.join();
  std::cerr << "\n";
  p.self_cpu_s = cpu1.self_s - cpu0.self_s;
  p.busy_cores = (cpu1.busy_s - cpu0.busy_s) / std::chrono::duration<double>(cpu1.at - cpu0.at).count();
  for (auto& w : workers) {
    Stats& s = w->stats();
    p.total.calls += s.calls;
    p.total.decisions += s.decisions;
    p.total.errors += s.errors;
    p.total.latency_ms.insert(p.total.latency_ms.end(), s.latency_ms.begin(), s.latency_ms.end());
  }
  return p;
}

// One idle WaitAdmission stream on a job that never fits: it stays open
// until cancelled. Counts whether the broker let it open.
class IdleStream : public grpc::ClientReadReactor<tidegate::v1::WaitAdmissionResponse> {
 public:
  IdleStream(tidegate::v1::AdmissionService::Stub* stub, const std::string& job, std::atomic<int>* open,
             std::atomic<int>* refused, std::atomic<int>* settled)
      : open_(open), refused_(refused), settled_(settled) {
    req_.set_job(job);
    stub->async()->WaitAdmission(&ctx_, &req_, this);
    StartRead(&resp_);
    StartCall();
  }
  void OnReadDone(bool ok) override {
    if (ok && !counted_) {
      counted_ = true;
      ++*open_;
      ++*settled_;
    }
    if (ok) StartRead(&resp_);
  }
  void OnDone(const grpc::Status& s) override {
    if (!counted_) {
      if (s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) ++*refused_;
      ++*settled_;
    }
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    cv_.notify_all();
  }
  void Cancel() { ctx_.TryCancel(); }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return done_; });
  }

 private:
  grpc::ClientContext ctx_;
  tidegate::v1::WaitAdmissionRequest req_;
  tidegate::v1::WaitAdmissionResponse resp_;
  std::atomic<int>* open_;
  std::atomic<int>* refused_;
  std::atomic<int>* settled_;
  bool counted_ = false;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
};

// The hostile client: idle streams, then a flood of bad Admits until stopped.
class Attacker {
 public:
  explicit Attacker(const Options& o) : o_(o) {
    channel_ = grpc::CreateChannel(o.server, grpc::InsecureChannelCredentials());
    stub_ = tidegate::v1::AdmissionService::NewStub(channel_);
  }
  // Queues a job that can never fit and opens the streams on it; returns once
  // each stream is open or refused.
  void OpenStreams() {
    grpc::ClientContext ctx;
    tidegate::v1::AdmitRequest req;
    req.mutable_job()->set_job("attack-waiter");
    req.mutable_job()->set_team(o_.teams[0]);
    (*req.mutable_job()->mutable_per_replica())["gpu"] = int64_t{1} << 40;
    tidegate::v1::AdmitResponse resp;
    stub_->Admit(&ctx, req, &resp);
    for (int i = 0; i < o_.attack_streams; ++i) {
      streams_.push_back(std::make_unique<IdleStream>(stub_.get(), "attack-waiter", &open_, &refused_, &settled_));
    }
    while (settled_.load() < o_.attack_streams) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  void StartFlood() {
    for (int i = 0; i < o_.attack_clients; ++i) {
      flooders_.emplace_back([this, i] {
        int64_t n = 0;
        while (!stop_.load()) {
          grpc::ClientContext ctx;
          ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
          tidegate::v1::AdmitRequest req;
          auto* job = req.mutable_job();
          if (n % 10 == 9) {  // one in ten oversized (a 1 MiB id)
            job->set_job(std::string(1 << 20, 'x'));
          } else {            // the rest rejected (an unknown team), with an unknown field
            job->set_job("attack-" + std::to_string(i) + "-" + std::to_string(n));
            job->GetReflection()->MutableUnknownFields(job)->AddLengthDelimited(999, std::string(1000, 'z'));
          }
          job->set_team("no-such-team");
          (*job->mutable_per_replica())["gpu"] = 1;
          tidegate::v1::AdmitResponse resp;
          stub_->Admit(&ctx, req, &resp);
          ++n;
          ++sent_;
        }
      });
    }
  }
  void Stop() {
    stop_ = true;
    for (auto& t : flooders_) t.join();
    for (auto& s : streams_) s->Cancel();
    for (auto& s : streams_) s->Wait();
  }
  int open() const { return open_.load(); }
  int refused() const { return refused_.load(); }
  int64_t sent() const { return sent_.load(); }

 private:
  const Options& o_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<tidegate::v1::AdmissionService::Stub> stub_;
  std::vector<std::unique_ptr<IdleStream>> streams_;
  std::vector<std::thread> flooders_;
  std::atomic<int> open_{0}, refused_{0}, settled_{0};
  std::atomic<int64_t> sent_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"tidegate-loadgen: gRPC load against tidegated; a no-op baseline, then Admit/Release/GetTeam"};
  app.add_option("--server", o.server, "tidegated address (loopback); several (a,b,c): the one that leads")
      ->capture_default_str();
  app.add_option("--clients", o.clients, "concurrent calls in flight")->check(CLI::Range(1, 4096))->capture_default_str();
  app.add_option("--seconds", o.seconds, "length of each phase")->check(CLI::Range(0.5, 600.0))->capture_default_str();
  app.add_option("--teams", o.teams, "leaf teams to admit into")->delimiter(',')->capture_default_str();
  app.add_option("--admit", o.admit_pct, "percent Admit")->check(CLI::Range(0, 100))->capture_default_str();
  app.add_option("--release", o.release_pct, "percent Release")->check(CLI::Range(0, 100))->capture_default_str();
  app.add_option("-o,--output", o.output, "table or json")->check(CLI::IsMember({"table", "json"}));
  app.add_option("--attack-streams", o.attack_streams, "idle WaitAdmission streams a hostile client tries to hold")
      ->check(CLI::Range(0, 100000));
  app.add_option("--attack-clients", o.attack_clients, "concurrent rejected/oversized Admits of a hostile client")
      ->check(CLI::Range(0, 1024));
  tidegate::cli::AddChannelSecurityOptions(app, &o.security);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  tidegate::cli::ApplySecurityEnvironment(&o.security);
  o.server = tidegate::cli::FindLeader(o.server, o.security, std::chrono::seconds(10));  // cli/leader_channel.h
  if (o.admit_pct + o.release_pct > 100) {
    std::cerr << "tidegate-loadgen: --admit + --release must be <= 100\n";
    return 2;
  }
  const Phase noop = Run(o, true, "no-op baseline");
  const Phase mix = Run(o, false, "admit/release/getteam");
  if (o.attack_streams > 0 || o.attack_clients > 0) {
    Attacker attacker(o);
    attacker.OpenStreams();
    attacker.StartFlood();
    const Phase attacked = Run(o, false, "the same under attack");
    attacker.Stop();
    const double quiet_p99 = Percentile(mix.total.latency_ms, 99);
    const double attacked_p99 = Percentile(attacked.total.latency_ms, 99);
    std::printf(
        "{\"clients\":%d,\"seconds\":%.1f,\"quiet_calls_per_s\":%.0f,\"quiet_p50_ms\":%.3f,\"quiet_p99_ms\":%.3f,"
        "\"attacked_calls_per_s\":%.0f,\"attacked_p50_ms\":%.3f,\"attacked_p99_ms\":%.3f,\"p99_ratio\":%.2f,"
        "\"attack_streams_open\":%d,\"attack_streams_refused\":%d,\"attack_calls\":%lld,\"errors\":%lld}\n",
        o.clients, o.seconds, mix.total.calls / mix.seconds, Percentile(mix.total.latency_ms, 50), quiet_p99,
        attacked.total.calls / attacked.seconds, Percentile(attacked.total.latency_ms, 50), attacked_p99,
        attacked_p99 / quiet_p99, attacker.open(), attacker.refused(), static_cast<long long>(attacker.sent()),
        static_cast<long long>(mix.total.errors + attacked.total.errors));
    return (mix.total.errors + attacked.total.errors) == 0 ? 0 : 1;
  }
  const double noop_rate = noop.total.calls / noop.seconds;
  const double call_rate = mix.total.calls / mix.seconds;
  const double decision_rate = mix.total.decisions / mix.seconds;
  if (o.output == "json") {
    std::printf(
        "{\"clients\":%d,\"seconds\":%.1f,\"noop_per_s\":%.0f,\"noop_p50_ms\":%.3f,\"noop_p99_ms\":%.3f,"
        "\"calls_per_s\":%.0f,\"decisions_per_s\":%.0f,\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"max_ms\":%.3f,"
        "\"decisions\":%lld,\"errors\":%lld,\"calls_vs_noop\":%.3f,\"loadgen_noop_cpu_us_per_call\":%.1f,"
        "\"loadgen_cpu_us_per_call\":%.1f,\"noop_busy_cores\":%.2f,\"busy_cores\":%.2f}\n",
        o.clients, o.seconds, noop_rate, Percentile(noop.total.latency_ms, 50), Percentile(noop.total.latency_ms, 99),
        call_rate, decision_rate, Percentile(mix.total.latency_ms, 50), Percentile(mix.total.latency_ms, 99),
        Percentile(mix.total.latency_ms, 100), static_cast<long long>(mix.total.decisions),
        static_cast<long long>(mix.total.errors + noop.total.errors), call_rate / noop_rate, noop.SelfUsPerCall(),
        mix.SelfUsPerCall(), noop.busy_cores, mix.busy_cores);
  } else {
    std::printf("clients %d, %.1f s per phase\n", o.clients, o.seconds);
    std::printf("no-op Ping:        %8.0f calls/s   p50 %.2f ms  p99 %.2f ms\n", noop_rate,
                Percentile(noop.total.latency_ms, 50), Percentile(noop.total.latency_ms, 99));
    std::printf("admit/release/get: %8.0f calls/s   %.0f decisions/s   p50 %.2f ms  p99 %.2f ms  (%.0f%% of no-op)\n",
                call_rate, decision_rate, Percentile(mix.total.latency_ms, 50), Percentile(mix.total.latency_ms, 99),
                100 * call_rate / noop_rate);
    std::printf("longest call: %.1f ms; decisions: %lld\n", Percentile(mix.total.latency_ms, 100),
                static_cast<long long>(mix.total.decisions));
    std::printf("errors: %lld\n", static_cast<long long>(mix.total.errors + noop.total.errors));
    std::printf("load generator CPU: no-op %.0f us per call, mix %.0f us per call\n", noop.SelfUsPerCall(),
                mix.SelfUsPerCall());
    std::printf("busy cores, all processes: no-op %.2f, mix %.2f of %ld\n", noop.busy_cores, mix.busy_cores,
                sysconf(_SC_NPROCESSORS_ONLN));
  }
  return (mix.total.errors + noop.total.errors) == 0 ? 0 : 1;
}
