#include "tests/postgres/cluster.h"

#include <random>

#include "cli/leader_channel.h"

namespace tidegate::testing {

Broker::Broker(std::string dir, std::string config, std::string db, int port, int lease_ms)
    : dir_(std::move(dir)), config_(std::move(config)), db_(std::move(db)), port_(port), lease_ms_(lease_ms) {}

bool Broker::Start() {
  std::vector<std::string> args = {"--lease-ms", std::to_string(lease_ms_)};
  args.insert(args.end(), extra_args_.begin(), extra_args_.end());
  process_ = std::make_unique<ServerProcess>(config_, db_, std::move(args));
  process_->set_listen(address());
  process_->set_log(dir_ + "/broker-" + std::to_string(port_) + ".log");
  return process_->Start();
}

Clients::Clients(std::vector<std::string> addresses, int threads, int capacity_gpu) : addresses_(std::move(addresses)) {
  // Reconnect quickly: a new leader's port refuses connections for a moment
  // while its standby server makes way (docs/ha.md: client settings).
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  for (const std::string& a : addresses_) {
    channels_.push_back(grpc::CreateCustomChannel(a, grpc::InsecureChannelCredentials(), args));
  }
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this, i] { Run(i); });
}

Clients::~Clients() { Stop(); }

void Clients::Stop() {
  stop_ = true;
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

std::vector<Ack> Clients::Acked() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Ack> out;
  for (const auto& [job, ack] : acked_) out.push_back(ack);
  return out;
}

SteadyClock::time_point Clients::last_admit_ack() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_admit_ack_;
}

SteadyClock::time_point Clients::last_admit_ack_not_by(const std::string& address) const {
  std::lock_guard<std::mutex> lock(mu_);
  SteadyClock::time_point latest{};
  for (const auto& [index, at] : last_admit_ack_by_) {
    if (addresses_[index] != address) latest = std::max(latest, at);
  }
  return latest;
}

void Clients::Run(int id) {
  std::mt19937 rng(id);
  // Acknowledged (admitted or queued) and not yet released: releasing queued
  // jobs too keeps the queue, and so each round's replay, small.
  std::vector<std::string> admitted;
  std::string pending;                // an Admit whose outcome is unknown: retried as it was
  int64_t pending_gpus = 0;
  int next = 0;
  while (!stop_) {
    const int at = leader_.load();
    auto admission = v1::AdmissionService::NewStub(channels_[at]);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
    grpc::Status status;
    const bool release = !admitted.empty() && pending.empty() && (admitted.size() > 8 || rng() % 2 == 0);
    if (release) {
      v1::ReleaseRequest request;
      request.set_job(admitted.front());
      v1::ReleaseResponse response;
      status = admission->Release(&context, request, &response);
      if (status.ok()) {
        std::lock_guard<std::mutex> lock(mu_);
        acked_[admitted.front()].released = true;
        admitted.erase(admitted.begin());
      }
    } else {
      if (pending.empty()) {
        pending = "c" + std::to_string(id) + "-" + std::to_string(next++);
        pending_gpus = 1 + static_cast<int64_t>(rng() % 3);
      }
      v1::AdmitRequest request;
      request.mutable_job()->set_job(pending);
      request.mutable_job()->set_team(id % 2 == 0 ? "red" : "blue");
      request.mutable_job()->set_replicas(1);
      (*request.mutable_job()->mutable_per_replica())["gpu"] = pending_gpus;
      v1::AdmitResponse response;
      status = admission->Admit(&context, request, &response);
      if (status.ok()) {
        const bool in = response.decision() == v1::DECISION_ADMITTED;
        std::lock_guard<std::mutex> lock(mu_);
        acked_[pending] = Ack{pending, in, false};
        last_admit_ack_ = SteadyClock::now();
        last_admit_ack_by_[at] = last_admit_ack_;
        admitted.push_back(pending);
        pending.clear();
      }
    }
    if (status.ok()) {
      ++acks_;
      continue;
    }
    if (status.error_code() != grpc::StatusCode::UNAVAILABLE &&
        status.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) {
      // The leader answered, with a refusal (e.g. releasing a job whose
      // earlier, unanswered Release was applied): not acknowledged, move on.
      if (release) {
        admitted.erase(admitted.begin());
      } else {
        pending.clear();
      }
      continue;
    }
    // Follow the leader a standby named; otherwise try the next broker.
    const std::string hint = cli::LeaderHint(context);
    int to = (at + 1) % static_cast<int>(addresses_.size());
    for (size_t i = 0; i < addresses_.size(); ++i) {
      if (!hint.empty() && addresses_[i] == hint) to = static_cast<int>(i);
    }
    int expected = at;
    leader_.compare_exchange_strong(expected, to);
    if (hint.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

grpc::Status AdmitOneGpu(const std::string& address, const std::string& job) {
  auto stub = v1::AdmissionService::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  v1::AdmitRequest request;
  request.mutable_job()->set_job(job);
  request.mutable_job()->set_team("red");
  request.mutable_job()->set_replicas(1);
  (*request.mutable_job()->mutable_per_replica())["gpu"] = 1;
  v1::AdmitResponse response;
  return stub->Admit(&context, request, &response);
}

}  // namespace tidegate::testing
