#include "broker/service/elastic_service.h"

#include "absl/strings/str_cat.h"
#include "broker/service/queued_writer.h"
#include "broker/service/services.h"

namespace tidegate::service {

// One WatchResizes stream.
class ElasticServiceImpl::Watcher : public QueuedWriter<v1::ResizeRequest> {
 public:
  Watcher(ElasticServiceImpl* svc, std::string job) : svc_(svc), job_(std::move(job)) {}

  void Start() {
    if (!svc_->watchers_.Add(job_, self<Watcher>())) {
      Close(ShuttingDown());  // opened after shutdown began.
      return;
    }
    Check();
  }

  // Sends the job's pending request if it is newer than the last one sent.
  void Check() {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    if (finished()) return;
    const CoreLoop::Lookup lookup = svc_->loop_->PublishedForLookup();
    const ReadModel* model = lookup.model.get();
    auto j = model->FindJob(job_);
    if (!j) {
      if (!checked_) {
        Done(UnknownJob(lookup, job_));
      } else {
        FinishAfterWrites();  // it ended: nothing more will come.
      }
      return;
    }
    if (!checked_ && j->spec().elastic().max() == 0) {
      Done(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        absl::StrCat("job '", job_, "' is not elastic (its spec has no elastic.min/max)")));
      return;
    }
    checked_ = true;
    if (j->has_resize() && j->resize().epoch() > last_epoch_) {
      last_epoch_ = j->resize().epoch();
      Send(j->resize());
    }
  }

 protected:
  void Unregister() override { svc_->watchers_.Remove(job_, this); }

 private:
  ElasticServiceImpl* svc_;
  std::string job_;
  bool checked_ = false;
  int64_t last_epoch_ = 0;
};

grpc::ServerWriteReactor<v1::ResizeRequest>* ElasticServiceImpl::WatchResizes(grpc::CallbackServerContext* ctx,
                                                                             const v1::WatchResizesRequest* req) {
  return OpenStream<Watcher>(ctx, streams_, "WatchResizes", CheckStreamRequestSize(*req, *loop_, "WatchResizes"),
                             this, req->job());
}

grpc::ServerUnaryReactor* ElasticServiceImpl::AckResize(grpc::CallbackServerContext* ctx,
                                                        const v1::AckResizeRequest* req, v1::AckResizeResponse* resp) {
  auto* reactor = ctx->DefaultReactor();
  const std::string id = req->job();
  const CoreLoop::Lookup lookup = loop_->PublishedForLookup();
  const ReadModel* model = lookup.model.get();
  auto j = model->FindJob(id);
  if (!j) {
    reactor->Finish(UnknownJob(lookup, id));
    return reactor;
  }
  if (j->spec().elastic().max() == 0) {
    reactor->Finish(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, absl::StrCat("job '", id, "' is not elastic")));
    return reactor;
  }
  // The retry of an ack that was applied (its answer lost, or refused with
  // "may have been applied"): the job already runs at that size.
  if (!j->has_resize() && req->epoch() > 0 && req->epoch() == j->resize_epoch() && req->replicas() == j->replicas()) {
    *resp->mutable_job() = *j;
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
  if (!j->has_resize() || j->resize().epoch() != req->epoch()) {
    reactor->Finish(grpc::Status(
        grpc::StatusCode::FAILED_PRECONDITION,
        absl::StrCat("epoch: ", req->epoch(), " is stale; job '", id, "' ",
                     j->has_resize() ? absl::StrCat("waits for an ack of epoch ", j->resize().epoch())
                                     : absl::StrCat("has no resize pending (latest epoch ", j->resize_epoch(), ")"))));
    return reactor;
  }
  internal::v1::Command cmd;
  cmd.mutable_ack_resize()->set_job(id);
  cmd.mutable_ack_resize()->set_epoch(req->epoch());
  cmd.mutable_ack_resize()->set_replicas(req->replicas());
  loop_->Submit(std::move(cmd), [reactor, resp, id](absl::StatusOr<Applied> applied) {
    if (!applied.ok()) {
      reactor->Finish(ToGrpc(applied.status()));
      return;
    }
    for (const auto& e : applied->events) {
      if (e.job != id || e.type != core::EventType::kError) continue;
      // The core re-checks: a request that moved on meanwhile is stale; a
      // size outside the request is bad input.
      const bool bad_size = e.reason.rfind("ack_resize.replicas", 0) == 0;
      reactor->Finish(grpc::Status(bad_size ? grpc::StatusCode::INVALID_ARGUMENT : grpc::StatusCode::FAILED_PRECONDITION,
                                   e.reason));
      return;
    }
    if (auto after = applied->model->FindJob(id)) *resp->mutable_job() = *after;
    reactor->Finish(grpc::Status::OK);
  });
  return reactor;
}

void ElasticServiceImpl::Notify(const PublishedChange& change) { watchers_.Wake(change.jobs); }

void ElasticServiceImpl::CloseStreams() { watchers_.CloseAll(ShuttingDown()); }

}  // namespace tidegate::service
