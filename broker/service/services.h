// The gRPC handlers (docs/design.md §7): AdmissionService and QuotaService on the
// callback API. Writes go through the CoreLoop (answered after the group
// commit); reads come from its published ReadModel or the ledger's query
// tables. absl::Status becomes grpc::Status only here.
//
// Threading: thread-safe; handlers run on gRPC's threads.
#ifndef TIDEGATE_BROKER_SERVICE_SERVICES_H_
#define TIDEGATE_BROKER_SERVICE_SERVICES_H_

#include <memory>
#include <deque>
#include <vector>

#include "broker/service/core_loop.h"
#include "broker/service/recent_rejections.h"
#include "broker/service/stream_limits.h"
#include "broker/service/stream_registry.h"
#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "ledger/store.h"
#include "tidegate/v1/service.grpc.pb.h"

namespace tidegate::service {

grpc::Status ToGrpc(const absl::Status& status);
// INVALID_ARGUMENT when a stream's opening request is larger than a command
// may be (--max-request-bytes): the stream would hold it while it is open.
grpc::Status CheckStreamRequestSize(const google::protobuf::Message& request, const CoreLoop& loop, const char* what);

// The answer about a job `lookup`'s model does not hold: NOT_FOUND, or
// UNAVAILABLE while a failed commit's outcome is unknown, since the ledger
// may hold the job all the same (its Admit failed after the server committed
// it) and "not found" would let a client forget a job that may run.
grpc::Status UnknownJob(const CoreLoop::Lookup& lookup, const std::string& id);

class AdmissionServiceImpl final : public v1::AdmissionService::CallbackService {
 public:
  // `streams` (may be null: unbounded) bounds WaitAdmission streams.
  explicit AdmissionServiceImpl(CoreLoop* loop, StreamLimiter* streams = nullptr) : loop_(loop), streams_(streams) {}

  grpc::ServerUnaryReactor* Admit(grpc::CallbackServerContext* ctx, const v1::AdmitRequest* req,
                                  v1::AdmitResponse* resp) override;
  grpc::ServerWriteReactor<v1::WaitAdmissionResponse>* WaitAdmission(grpc::CallbackServerContext* ctx,
                                                                     const v1::WaitAdmissionRequest* req) override;
  grpc::ServerUnaryReactor* Release(grpc::CallbackServerContext* ctx, const v1::ReleaseRequest* req,
                                    v1::ReleaseResponse* resp) override;
  grpc::ServerUnaryReactor* ReportCheckpoint(grpc::CallbackServerContext* ctx,
                                             const v1::ReportCheckpointRequest* req,
                                             v1::ReportCheckpointResponse* resp) override;
  grpc::ServerUnaryReactor* ListJobs(grpc::CallbackServerContext* ctx, const v1::ListJobsRequest* req,
                                     v1::ListJobsResponse* resp) override;
  grpc::ServerUnaryReactor* GetJob(grpc::CallbackServerContext* ctx, const v1::GetJobRequest* req,
                                   v1::JobInfo* resp) override;

  // Wakes the WaitAdmission streams of the jobs a batch changed; the server
  // calls it after every batch.
  void Notify(const PublishedChange& change);
  // Ends every WaitAdmission stream with UNAVAILABLE (shutdown: clients
  // reconnect to the next broker), so Shutdown need not wait for them.
  void CloseStreams();
  // Admits refused lately, answered by GetJob and ListJobs(REJECTED).
  const RecentRejections& rejections() const { return rejections_; }

 private:
  // Keeps the refusal of `spec` for GetJob and ListJobs (not journalled).
  void RememberRejection(const v1::JobSpec& spec, const std::string& reason);

  CoreLoop* loop_;
  StreamLimiter* streams_;
  RecentRejections rejections_;
  class Waiter;
  friend class Waiter;
  StreamRegistry<Waiter> waiters_;  // by job
};

class QuotaServiceImpl final : public v1::QuotaService::CallbackService {
 public:
  // `reader` serves ListLoans and GetUsage (a read-only connection to the
  // ledger); it is used under a lock.
  QuotaServiceImpl(CoreLoop* loop, std::unique_ptr<ledger::Store> reader)
      : loop_(loop), reader_(std::move(reader)) {}

  grpc::ServerUnaryReactor* GetTeam(grpc::CallbackServerContext* ctx, const v1::GetTeamRequest* req,
                                    v1::TeamInfo* resp) override;
  grpc::ServerUnaryReactor* ListTeams(grpc::CallbackServerContext* ctx, const v1::ListTeamsRequest* req,
                                      v1::ListTeamsResponse* resp) override;
  grpc::ServerUnaryReactor* ListLoans(grpc::CallbackServerContext* ctx, const v1::ListLoansRequest* req,
                                      v1::ListLoansResponse* resp) override;
  grpc::ServerUnaryReactor* GetUsage(grpc::CallbackServerContext* ctx, const v1::GetUsageRequest* req,
                                     v1::GetUsageResponse* resp) override;
  grpc::ServerUnaryReactor* ApplyConfig(grpc::CallbackServerContext* ctx, const v1::ApplyConfigRequest* req,
                                        v1::ApplyConfigResponse* resp) override;

  // The --config file tidegated started from: ApplyConfig warns when the new
  // config contradicts it, since a restart applies that file again. Set
  // before serving.
  void SetStartupConfigFile(std::string path) { startup_config_path_ = std::move(path); }

 private:
  // The warning for `next` against the start-up file as it is now; "" when
  // they agree or there is no such file.
  std::string StartupFileWarning(const v1::Config& next) const;

  CoreLoop* loop_;
  std::string startup_config_path_;
  absl::Mutex reader_mu_;
  std::unique_ptr<ledger::Store> reader_ ABSL_GUARDED_BY(reader_mu_);
};

class DiagnosticsServiceImpl final : public v1::DiagnosticsService::CallbackService {
 public:
  explicit DiagnosticsServiceImpl(CoreLoop* loop) : loop_(loop) {}
  grpc::ServerUnaryReactor* Ping(grpc::CallbackServerContext* ctx, const v1::PingRequest*,
                                 v1::PingResponse* resp) override {
    resp->set_seq(loop_->Published()->seq());
    auto* reactor = ctx->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

 private:
  CoreLoop* loop_;
};

// ConfigDiff: api/text/config_diff.h.

}  // namespace tidegate::service

#endif  // TIDEGATE_BROKER_SERVICE_SERVICES_H_
