// A server-streaming reactor that queues its messages: gRPC allows one write
// in flight, so Send() queues and each OnWriteDone starts the next. The one
// writer of the broker's streams (WaitAdmission, WatchResizes, agent
// Connect): a subclass decides what to send and when to end; this class does
// the writing, cancellation, shutdown and the stream's lifetime.
//
// Contract:
//   - The queue is unbounded: what a stream sends is bounded by the model
//     (one message per change of one job; an agent's actions of one cluster).
//   - Close(status) ends the stream once the write in flight is done; what is
//     still queued is dropped (the client reconnects and catches up).
//   - A failed write (the client went away) ends the stream with CANCELLED.
//   - OpenStream keeps the stream alive and its stream slot held until gRPC
//     calls OnDone, where the subclass leaves its registry (Unregister).
//
// `Reactor` is the gRPC reactor base (a write or a bidi reactor); tests pass
// a fake with StartWrite, Finish and the On* reactions.
//
// Threading: every method takes mu_ (recursive, hence not an absl::Mutex:
// gRPC may run a reaction inline with the call that started a write).
#ifndef TIDEGATE_BROKER_SERVICE_QUEUED_WRITER_H_
#define TIDEGATE_BROKER_SERVICE_QUEUED_WRITER_H_

#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "broker/service/stream_limits.h"
#include "grpcpp/grpcpp.h"

namespace tidegate::service {

template <typename Message, typename Reactor = grpc::ServerWriteReactor<Message>>
class QueuedWriter : public Reactor {
 public:
  // Ends the stream with `status` once the write in flight is done.
  void Close(const grpc::Status& status) {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    if (!writing_) Done(status);
    else close_with_ = status;
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    writing_ = false;
    if (!ok) {
      Done(grpc::Status(grpc::StatusCode::CANCELLED, "the client went away"));
      return;
    }
    if (close_with_) {
      Done(*close_with_);
      return;
    }
    Pump();
  }
  void OnCancel() override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    Done(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled"));
  }
  void OnDone() override {
    Unregister();
    std::shared_ptr<QueuedWriter> self;
    {
      std::lock_guard<std::recursive_mutex> lock(mu_);
      self = std::move(self_);
    }
    slot_.reset();
    // `self` may be the last reference: the object goes with it.
  }

  // Keeps the stream alive, with its stream slot, until OnDone. OpenStream
  // calls it, then Start().
  void Hold(std::shared_ptr<QueuedWriter> self, std::unique_ptr<StreamLimiter::Slot> slot) {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    self_ = std::move(self);
    slot_ = std::move(slot);
  }
  // Ends the stream at once, before it began (refused); alive until OnDone.
  void Refuse(std::shared_ptr<QueuedWriter> self, const grpc::Status& status) {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    self_ = std::move(self);
    Done(status);
  }

 protected:
  // Leaves the stream's registry; called once, from OnDone.
  virtual void Unregister() {}

  // The stream itself as `Derived` (null once gRPC is done with it).
  template <typename Derived>
  std::shared_ptr<Derived> self() {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    return std::static_pointer_cast<Derived>(self_);
  }

  // All below: call with mu_ held.
  void Send(Message message) {
    pending_.push_back(std::move(message));
    Pump();
  }
  // Ends the stream with OK after what is queued has been written.
  void FinishAfterWrites() {
    finish_after_writes_ = true;
    Pump();
  }
  void Done(grpc::Status status) {
    if (finished_) return;
    finished_ = true;
    this->Finish(status);
  }
  bool finished() const { return finished_; }

  std::recursive_mutex mu_;

 private:
  void Pump() {
    if (finished_ || writing_) return;
    if (!pending_.empty()) {
      current_ = std::move(pending_.front());
      pending_.pop_front();
      writing_ = true;
      this->StartWrite(&current_);
      return;
    }
    if (finish_after_writes_) Done(grpc::Status::OK);
  }

  bool finished_ = false;
  bool writing_ = false;
  bool finish_after_writes_ = false;
  std::deque<Message> pending_;
  Message current_;
  std::optional<grpc::Status> close_with_;
  std::shared_ptr<QueuedWriter> self_;
  std::unique_ptr<StreamLimiter::Slot> slot_;
};

// How the broker ends its open streams at shutdown: clients reconnect, to
// the next broker or once this one is back.
inline grpc::Status ShuttingDown() {
  return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the broker is shutting down; reconnect");
}

// Opens a stream of `Stream` (a QueuedWriter with `void Start()`), built from
// `args`: unless `refused` already, it takes a slot of `limiter` (null:
// unbounded) for the call's peer, then starts. A refused stream ends at once
// with the status.
template <typename Stream, typename... Args>
Stream* OpenStream(grpc::CallbackServerContext* ctx, StreamLimiter* limiter, const char* what, grpc::Status refused,
                   Args&&... args) {
  std::unique_ptr<StreamLimiter::Slot> slot;
  if (refused.ok() && limiter != nullptr) refused = limiter->Acquire(ctx->peer(), what, &slot);
  auto stream = std::make_shared<Stream>(std::forward<Args>(args)...);
  if (!refused.ok()) {
    stream->Refuse(stream, refused);
  } else {
    stream->Hold(stream, std::move(slot));
    stream->Start();
  }
  return stream.get();
}

}  // namespace tidegate::service

#endif  // TIDEGATE_BROKER_SERVICE_QUEUED_WRITER_H_
