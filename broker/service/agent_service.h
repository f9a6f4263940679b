// AgentService (api/tidegate/v1/agent.proto, docs/design.md §1 and §7): the broker
// end of the per-cluster agent streams.
//
// What arrives becomes core commands through the CoreLoop:
//   capacity -> set_capacity; view -> adopt (running jobs the broker does not
//   know) and finish (its jobs of the cluster the agent no longer has), then
//   `synced`; started -> adopt when unknown; ended -> finish; gone -> vacate
//   (a draining victim) or finish (a job that stopped while admitted);
//   replicas -> ack_resize.
// What leaves is derived from the published ReadModel after every batch
// (Notify): `start` once per connection for every ADMITTED job of the
// cluster, `evict` once for every DRAINING one, with the deadline the
// connection first saw (now + grace_s; the core enforces the real one). A
// reconnecting agent therefore gets every action still due.
//
// Threading: thread-safe; handlers run on gRPC's threads, Notify on the
// CoreLoop's responder thread.
#ifndef TIDEGATE_BROKER_SERVICE_AGENT_SERVICE_H_
#define TIDEGATE_BROKER_SERVICE_AGENT_SERVICE_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "broker/service/core_loop.h"
#include "broker/service/stream_limits.h"
#include "broker/service/stream_registry.h"
#include "tidegate/v1/agent.grpc.pb.h"

namespace tidegate::service {

class AgentServiceImpl final : public v1::AgentService::CallbackService {
 public:
  // `streams` (may be null: unbounded) bounds Connect streams, counted from
  // the moment they open (before hello).
  explicit AgentServiceImpl(CoreLoop* loop, StreamLimiter* streams = nullptr) : loop_(loop), streams_(streams) {}

  grpc::ServerBidiReactor<v1::AgentMessage, v1::BrokerAction>* Connect(grpc::CallbackServerContext* ctx) override;

  // Sends the actions the latest published model calls for; the server calls
  // it after every batch.
  void Notify();
  // The clusters whose agent is connected now (said hello), for metrics.
  std::vector<std::string> ConnectedClusters();
  // Ends every stream with UNAVAILABLE (shutdown: agents reconnect).
  void CloseStreams();

  // Which cluster a stream may say hello as: called at Connect with the
  // call's context, it returns the check applied to hello.cluster (a non-OK
  // status ends the stream with it). Unset: any cluster. Set before serving.
  using ClusterCheck = std::function<grpc::Status(const std::string& cluster)>;
  void SetClaimCheck(std::function<ClusterCheck(grpc::CallbackServerContext*)> check) {
    claim_check_ = std::move(check);
  }

 private:
  class Connection;
  friend class Connection;
  // Registers `conn` as the agent of its cluster; an older stream for the
  // same cluster is closed with ABORTED.
  void Claim(const std::shared_ptr<Connection>& conn);
  void Forget(const Connection* conn);

  CoreLoop* loop_;
  StreamLimiter* streams_;
  std::function<ClusterCheck(grpc::CallbackServerContext*)> claim_check_;
  StreamRegistry<Connection> connections_;  // by cluster, once it said hello
};

}  // namespace tidegate::service

#endif  // TIDEGATE_BROKER_SERVICE_AGENT_SERVICE_H_
