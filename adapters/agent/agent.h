// The cluster agent (docs/design.md §7): one per cluster, between a ClusterDriver
// and the broker's AgentService.Connect stream (api/tidegate/v1/agent.proto).
//
// Every poll it observes the cluster and
//   - reports capacity changes, jobs that started (the broker adopts those it
//     did not admit), ended, or went back to waiting after an eviction;
//   - admits every waiting job through AdmissionService.Admit (idempotent per
//     job id) and keeps the job's annotation in step with the broker's answer
//     ("tidegate: queued: <reason>; see `tidegate job ID`");
//   - leaves jobs it cannot map (bad input) waiting, annotated and logged.
// Actions from the broker: start -> driver.Start; evict -> driver.Signal, then
// driver.Stop at the deadline; each is acked. On every (re)connection it
// sends hello, capacity and its full view, and admits nothing until the
// broker answers `synced`. Losing the broker or the scheduler loses nothing:
// both are retried with backoff, and the view is replayed.
//
// Threading: Run() on one thread; a reader thread per connection only queues
// the broker's actions. Stop() is thread-safe.
#ifndef TIDEGATE_ADAPTERS_AGENT_AGENT_H_
#define TIDEGATE_ADAPTERS_AGENT_AGENT_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <functional>
#include <memory>
#include <set>
#include <string>

#include "adapters/agent/agent_clock.h"
#include "adapters/agent/driver.h"
#include "grpcpp/grpcpp.h"
#include "tidegate/v1/agent.grpc.pb.h"
#include "tidegate/v1/service.grpc.pb.h"

namespace tidegate::adapters {

struct AgentOptions {
  std::string cluster;                          // --cluster, a cluster of the broker's config.
  v1::ClusterKind kind = v1::CLUSTER_KIND_SLURM;
  std::string agent_id;                         // for the broker's logs.
  int64_t poll_ms = 1000;                       // --poll-ms: between observations.
  int64_t max_backoff_ms = 10000;               // errors back off up to this.
  // Several brokers on one ledger (docs/ha.md): a channel to the one that
  // leads now, asked again whenever the stream to the broker ends or cannot
  // be opened. Unset: the channel given to the constructor, always.
  std::function<std::shared_ptr<grpc::Channel>()> find_leader;
  // Time for grace deadlines and the waits between polls (agent_clock.h);
  // unset: the system clock. Must outlive the agent.
  AgentClock* clock = nullptr;
};

class Agent {
 public:
  Agent(AgentOptions options, std::shared_ptr<grpc::Channel> channel, ClusterDriver* driver);
  ~Agent();
  // Runs until Stop(). Returns 0.
  int Run();
  void Stop();

 private:
  struct Stream;
  bool Connect();                        // hello, capacity, view; false when the broker is away.
  void FollowLeader();                   // with find_leader: new stubs to the leader (no stream open).
  void HandleActions();                  // what the reader queued.
  void EnforceDeadlines();
  bool Poll();                           // false when the cluster could not be observed.
  void Diff(const ClusterView& now);
  void AdmitWaiting(const ClusterView& now);
  bool Send(const v1::AgentMessage& m);  // false when the stream broke.
  void Ack(int64_t action, const std::string& job, const absl::Status& s);
  void Sleep(int64_t ms);

  AgentOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::AgentService::Stub> agents_;
  std::unique_ptr<v1::AdmissionService::Stub> admission_;
  ClusterDriver* driver_;
  std::atomic<bool> stop_{false};
  std::unique_ptr<AgentClock> own_clock_;  // when options_.clock is unset
  AgentClock* clock_;

  std::unique_ptr<Stream> stream_;
  bool synced_ = false;
  bool have_view_ = false;
  ClusterView view_;                          // the last observation.
  std::map<std::string, int64_t> sent_capacity_;
  bool capacity_sent_ = false;
  std::set<std::string> admitted_;            // Admit answered on this connection.
  std::map<std::string, int64_t> draining_;   // evicted job -> grace deadline (ms).
  std::set<std::string> stopped_;             // Stop() done after the deadline.
};

}  // namespace tidegate::adapters

#endif  // TIDEGATE_ADAPTERS_AGENT_AGENT_H_
