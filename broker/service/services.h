// The gRPC handlers (DESIGN.md §7): AdmissionService and QuotaService on the
// callback API. Writes go through the CoreLoop (answered after the group
// commit); reads come from its published ReadModel or the ledger's query
// tables. absl::Status becomes grpc::Status only here.
//
// Threading: thread-safe; handlers run on gRPC's threads.
#ifndef TIDEGATE_BROKER_SERVICE_SERVICES_H_
#define TIDEGATE_BROKER_SERVICE_SERVICES_H_

#include <memory>
#include <deque>
#include <mutex>
#include <vector>

#include "broker/service/core_loop.h"
#include "ledger/store.h"
#include "tidegate/v1/service.grpc.pb.h"

namespace tidegate::service {

grpc::Status ToGrpc(const absl::Status& status);

class AdmissionServiceImpl final : public v1::AdmissionService::CallbackService {
 public:
  explicit AdmissionServiceImpl(CoreLoop* loop) : loop_(loop) {}

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

  // Wakes WaitAdmission streams; the server calls it after every batch.
  void Notify();
  // Ends every WaitAdmission stream with UNAVAILABLE (shutdown: clients
  // reconnect to the next broker), so Shutdown need not wait for them.
  void CloseStreams();

 private:
  CoreLoop* loop_;
  class Waiter;
  friend class Waiter;
  std::mutex mu_;
  std::vector<std::shared_ptr<Waiter>> registry_;  // guarded by mu_
  bool closing_ = false;  // CloseStreams ran: new streams end UNAVAILABLE at once. Guarded by mu_.
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

 private:
  CoreLoop* loop_;
  std::mutex reader_mu_;
  std::unique_ptr<ledger::Store> reader_;  // guarded by reader_mu_
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

// A human-readable diff of two configs, one change per line.
std::vector<std::string> ConfigDiff(const v1::Config& before, const v1::Config& after);

}  // namespace tidegate::service

#endif  // TIDEGATE_BROKER_SERVICE_SERVICES_H_
