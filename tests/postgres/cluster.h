// A test cluster for the failover tests: three real tidegated processes on
// one PostgreSQL ledger (tests/postgres/with_postgres.sh names it in
// TIDEGATE_PG), and client threads that admit and release jobs against
// whoever leads, recording every decision a broker acknowledged.
#ifndef TIDEGATE_TESTS_POSTGRES_CLUSTER_H_
#define TIDEGATE_TESTS_POSTGRES_CLUSTER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "tests/support/server_process.h"
#include "tidegate/v1/service.grpc.pb.h"

namespace tidegate::testing {

using SteadyClock = std::chrono::steady_clock;

// A tidegated on the shared ledger `db`, on a fixed port (a broker must know
// the address it advertises before it starts), its log in `dir`.
class Broker {
 public:
  Broker(std::string dir, std::string config, std::string db, int port, int lease_ms);
  // Flags for every later Start (e.g. --http-listen).
  void AddArgs(std::vector<std::string> args) { extra_args_ = std::move(args); }
  // Starts it and waits until it listens (as a standby first); false if it
  // did not come up.
  bool Start();
  void Signal(int sig) { process_->Signal(sig); }
  void Kill() { process_->Kill(); }  // SIGKILL and reap
  int Terminate() { return process_->Terminate(); }  // SIGTERM; its exit code
  int Wait() { return process_->Wait(); }  // its exit code once it exits by itself; -1 if it runs on
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  std::string Stderr() const { return process_ != nullptr ? process_->Stderr() : ""; }

 private:
  std::string dir_, config_, db_;
  int port_, lease_ms_;
  std::vector<std::string> extra_args_;
  std::unique_ptr<ServerProcess> process_;  // SIGKILLed when replaced or destroyed
};

struct Ack {
  std::string job;
  bool admitted = false;  // the decision said admitted (else queued)
  bool released = false;  // a Release of it was acknowledged
};

class Clients {
 public:
  Clients(std::vector<std::string> addresses, int threads, int capacity_gpu);
  ~Clients();  // stops
  void Stop();
  int64_t acks() const { return acks_.load(); }
  // The acknowledged decisions so far (a copy).
  std::vector<Ack> Acked() const;
  // When the latest Admit was acknowledged (by any broker, or by one other
  // than `not_by`).
  SteadyClock::time_point last_admit_ack() const;
  SteadyClock::time_point last_admit_ack_not_by(const std::string& address) const;

 private:
  void Run(int id);
  std::vector<std::string> addresses_;
  std::vector<std::shared_ptr<grpc::Channel>> channels_;
  std::atomic<int> leader_{0};
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> acks_{0};
  mutable std::mutex mu_;
  std::map<std::string, Ack> acked_;            // guarded by mu_
  SteadyClock::time_point last_admit_ack_{};   // guarded by mu_
  std::map<int, SteadyClock::time_point> last_admit_ack_by_;  // broker index -> time; guarded by mu_
  std::vector<std::thread> threads_;
};

// One Admit of a one-GPU job of red to the broker at `address`, waiting up
// to 20 s for the answer.
grpc::Status AdmitOneGpu(const std::string& address, const std::string& job);

}  // namespace tidegate::testing

#endif  // TIDEGATE_TESTS_POSTGRES_CLUSTER_H_
