// ElasticService (docs/design.md §5, §7): elastic training frameworks watch their
// job's resize requests and ack them. Requests come from the core (growth,
// reclaim shrinks, tide); acks go back to it as `ack_resize` commands.
//
// Threading: thread-safe; handlers run on gRPC's threads, Notify on the core
// loop's responder thread.
#ifndef TIDEGATE_BROKER_SERVICE_ELASTIC_SERVICE_H_
#define TIDEGATE_BROKER_SERVICE_ELASTIC_SERVICE_H_

#include "broker/service/core_loop.h"
#include "broker/service/stream_limits.h"
#include "broker/service/stream_registry.h"
#include "tidegate/v1/service.grpc.pb.h"

namespace tidegate::service {

class ElasticServiceImpl final : public v1::ElasticService::CallbackService {
 public:
  // `streams` (may be null: unbounded) bounds WatchResizes streams.
  explicit ElasticServiceImpl(CoreLoop* loop, StreamLimiter* streams = nullptr) : loop_(loop), streams_(streams) {}

  // Streams the job's pending request at once (a reconnecting subscriber
  // catches up), then every new one, until the job ends. NOT_FOUND for an
  // unknown job (UNAVAILABLE while a failed commit's outcome is unknown:
  // UnknownJob in services.h), FAILED_PRECONDITION for a rigid one.
  grpc::ServerWriteReactor<v1::ResizeRequest>* WatchResizes(grpc::CallbackServerContext* ctx,
                                                           const v1::WatchResizesRequest* req) override;
  // FAILED_PRECONDITION for a stale epoch (or no request pending),
  // INVALID_ARGUMENT for replicas outside what the request allows.
  grpc::ServerUnaryReactor* AckResize(grpc::CallbackServerContext* ctx, const v1::AckResizeRequest* req,
                                      v1::AckResizeResponse* resp) override;

  // Wakes the streams of the jobs a batch changed; the server calls it after
  // every batch.
  void Notify(const PublishedChange& change);
  // Ends every stream with UNAVAILABLE (shutdown: clients reconnect).
  void CloseStreams();

 private:
  class Watcher;
  CoreLoop* loop_;
  StreamLimiter* streams_;
  StreamRegistry<Watcher> watchers_;  // by job
};

}  // namespace tidegate::service

#endif  // TIDEGATE_BROKER_SERVICE_ELASTIC_SERVICE_H_
