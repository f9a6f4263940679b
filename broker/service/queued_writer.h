// A server-streaming reactor that queues its messages: gRPC allows one write
// in flight, so Send() queues and each OnWriteDone starts the next. Used by
// the streams that follow the published model (WaitAdmission, WatchResizes):
// a subclass decides what to send and when to end; this class does the
// writing, cancellation and shutdown.
//
// Threading: every method takes mu_ (recursive: gRPC may run a reaction
// inline with the call that started a write).
#ifndef TIDEGATE_BROKER_SERVICE_QUEUED_WRITER_H_
#define TIDEGATE_BROKER_SERVICE_QUEUED_WRITER_H_

#include <deque>
#include <mutex>
#include <optional>

#include "grpcpp/grpcpp.h"

namespace tidegate::service {

template <typename Message>
class QueuedWriter : public grpc::ServerWriteReactor<Message> {
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

 protected:
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
};

}  // namespace tidegate::service

#endif  // TIDEGATE_BROKER_SERVICE_QUEUED_WRITER_H_
