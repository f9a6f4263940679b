// Bounds on open server streams (WaitAdmission, WatchResizes, agent
// Connect): per peer host and in total, so idle streams from one client
// cannot take the broker's memory or its other clients' share of it
// (docs/limits.md). Past a bound the new stream ends at once with
// RESOURCE_EXHAUSTED; an open stream gives its slot back when it ends.
//
// Threading: thread-safe.
#ifndef TIDEGATE_BROKER_SERVICE_STREAM_LIMITS_H_
#define TIDEGATE_BROKER_SERVICE_STREAM_LIMITS_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"

namespace tidegate::service {

struct StreamLimits {
  int64_t max_total = 8192;     // --max-streams
  int64_t max_per_peer = 1024;  // --max-streams-per-peer
};

// gRPC's peer string without the client's port ("ipv4:10.0.0.7:51234" ->
// "ipv4:10.0.0.7"), so that one host's connections count together.
std::string PeerHost(const std::string& peer);

class StreamLimiter {
 public:
  explicit StreamLimiter(StreamLimits limits) : limits_(limits) {}

  // Holds one slot; gives it back when destroyed.
  class Slot {
   public:
    Slot(StreamLimiter* limiter, std::string host) : limiter_(limiter), host_(std::move(host)) {}
    ~Slot() { limiter_->Release(host_); }
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;

   private:
    StreamLimiter* limiter_;
    std::string host_;
  };

  // A slot for a stream of `what` (the method, for the message) from `peer`,
  // or RESOURCE_EXHAUSTED naming the bound that is reached.
  grpc::Status Acquire(const std::string& peer, const char* what, std::unique_ptr<Slot>* slot);

  int64_t open() const;

 private:
  void Release(const std::string& host);

  const StreamLimits limits_;
  mutable absl::Mutex mu_;
  int64_t total_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<std::string, int64_t> by_peer_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tidegate::service

#endif  // TIDEGATE_BROKER_SERVICE_STREAM_LIMITS_H_
