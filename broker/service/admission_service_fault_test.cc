// Admission and resize acks while a commit's outcome is unknown, through the
// real services and CoreLoop on an in-process gRPC server, over a store
// whose commit can be applied and still report an error (the server
// committed, the answer was lost): a client is never told a decision or a
// release that the ledger does not hold.
#include <chrono>
#include <memory>
#include <string>

#include "broker/service/elastic_service.h"
#include "broker/service/failing_loop_for_tests.h"
#include "broker/service/services.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"

namespace tidegate::service {
namespace {

constexpr char kConfig[] = R"pb(
  clusters { name: "a" capacity { key: "gpu" value: 8 } }
  teams { name: "red" quota { key: "gpu" value { guaranteed: 4 borrow_limit: 0 } } }
  teams { name: "blue" quota { key: "gpu" value { guaranteed: 4 } } }
)pb";

class AdmissionServiceFaultTest : public FailingLoopTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(OpenLoop(kConfig));
    admission_ = std::make_unique<AdmissionServiceImpl>(loop_.get());
    elastic_ = std::make_unique<ElasticServiceImpl>(loop_.get());
    StartLoop([this](const PublishedChange& change) {
      admission_->Notify(change);
      elastic_->Notify(change);
    });
    grpc::ServerBuilder builder;
    builder.RegisterService(admission_.get());
    builder.RegisterService(elastic_.get());
    server_ = builder.BuildAndStart();
    stub_ = v1::AdmissionService::NewStub(server_->InProcessChannel(grpc::ChannelArguments()));
    elastic_stub_ = v1::ElasticService::NewStub(server_->InProcessChannel(grpc::ChannelArguments()));
  }
  void TearDown() override {
    if (server_) server_->Shutdown(std::chrono::system_clock::now());
    FailingLoopTest::TearDown();
  }

  grpc::Status Admit(const std::string& job, const std::string& team, int64_t gpus, v1::AdmitResponse* response) {
    v1::AdmitRequest request;
    request.mutable_job()->set_job(job);
    request.mutable_job()->set_team(team);
    request.mutable_job()->set_replicas(1);
    (*request.mutable_job()->mutable_per_replica())["gpu"] = gpus;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return stub_->Admit(&context, request, response);
  }
  grpc::Status Release(const std::string& job) {
    v1::ReleaseRequest request;
    request.set_job(job);
    v1::ReleaseResponse response;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return stub_->Release(&context, request, &response);
  }
  grpc::Status AckResize(const std::string& job, int64_t epoch, int64_t replicas, v1::AckResizeResponse* response) {
    v1::AckResizeRequest request;
    request.set_job(job);
    request.set_epoch(epoch);
    request.set_replicas(replicas);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return elastic_stub_->AckResize(&context, request, response);
  }
  std::unique_ptr<AdmissionServiceImpl> admission_;
  std::unique_ptr<ElasticServiceImpl> elastic_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::AdmissionService::Stub> stub_;
  std::unique_ptr<v1::ElasticService::Stub> elastic_stub_;
};

// The retry of an Admit whose commit was applied despite its error changes
// nothing; its answer is the ledger's decision (queued: red's own 4 GPUs
// are taken and it may not borrow), not a guess from a model without it.
TEST_F(AdmissionServiceFaultTest, ARetriedAdmitGetsTheDecisionTheLedgerHolds) {
  v1::AdmitResponse first;
  ASSERT_TRUE(Admit("r1", "red", 4, &first).ok());
  ASSERT_EQ(first.decision(), v1::DECISION_ADMITTED);
  store_->FailAfterWriting(absl::UnavailableError("server closed the connection unexpectedly"));
  v1::AdmitResponse lost;
  EXPECT_EQ(Admit("r2", "red", 2, &lost).error_code(), grpc::StatusCode::UNAVAILABLE);
  HealAndWaitForWrites();
  v1::AdmitResponse retried;
  const grpc::Status status = Admit("r2", "red", 2, &retried);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(retried.decision(), v1::DECISION_QUEUED);
  EXPECT_EQ(retried.job().state(), v1::JOB_STATE_QUEUED);
  auto row = memory_->Job("r2").value();
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->state, "queued");
}

// While the ledger cannot be read, a job absent from the published model
// may still be in it (its Admit's outcome is unknown): "not found" would
// let the client forget a job that may be running.
TEST_F(AdmissionServiceFaultTest, AReleaseOfAJobTheLedgerMayHoldWaitsForTheLedger) {
  store_->FailAfterWriting(absl::UnavailableError("server closed the connection unexpectedly"));
  store_->FailReads();
  v1::AdmitResponse lost;
  EXPECT_EQ(Admit("b1", "blue", 2, &lost).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(Release("b1").error_code(), grpc::StatusCode::UNAVAILABLE);
  HealAndWaitForWrites();
  const grpc::Status released = Release("b1");
  EXPECT_TRUE(released.ok()) << released.error_message();
  auto row = memory_->Job("b1").value();
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->state, "ended");
  EXPECT_EQ(Release("never-submitted").error_code(), grpc::StatusCode::NOT_FOUND);
}

// The same holds for reading the job: GetJob and WaitAdmission cannot tell
// "not found" until the ledger answers, then they tell what it holds.
TEST_F(AdmissionServiceFaultTest, ReadsOfAJobWhoseAdmitHasAnUnknownOutcomeWaitForTheLedger) {
  store_->FailAfterWriting(absl::UnavailableError("server closed the connection unexpectedly"));
  store_->FailReads();
  v1::AdmitResponse lost;
  EXPECT_EQ(Admit("b1", "blue", 2, &lost).error_code(), grpc::StatusCode::UNAVAILABLE);
  auto get_job = [this](const std::string& job, v1::JobInfo* info) {
    v1::GetJobRequest request;
    request.set_job(job);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return stub_->GetJob(&context, request, info);
  };
  auto wait_admission = [this](const std::string& job, v1::WaitAdmissionResponse* first) {
    v1::WaitAdmissionRequest request;
    request.set_job(job);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    auto reader = stub_->WaitAdmission(&context, request);
    const bool read = reader->Read(first);
    const grpc::Status status = reader->Finish();
    return read ? grpc::Status::OK : status;
  };
  v1::JobInfo info;
  v1::WaitAdmissionResponse first;
  EXPECT_EQ(get_job("b1", &info).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(wait_admission("b1", &first).error_code(), grpc::StatusCode::UNAVAILABLE);
  {
    v1::ReportCheckpointRequest request;
    request.set_job("b1");
    v1::ReportCheckpointResponse response;
    grpc::ClientContext context;
    EXPECT_EQ(stub_->ReportCheckpoint(&context, request, &response).error_code(), grpc::StatusCode::UNAVAILABLE);
  }
  v1::AckResizeResponse ack;
  EXPECT_EQ(AckResize("b1", 1, 1, &ack).error_code(), grpc::StatusCode::UNAVAILABLE);
  HealAndWaitForWrites();
  const grpc::Status got = get_job("b1", &info);
  ASSERT_TRUE(got.ok()) << got.error_message();
  EXPECT_EQ(info.state(), v1::JOB_STATE_ADMITTED);
  const grpc::Status waited = wait_admission("b1", &first);
  ASSERT_TRUE(waited.ok()) << waited.error_message();
  EXPECT_EQ(first.job().state(), v1::JOB_STATE_ADMITTED);
  EXPECT_EQ(get_job("never-submitted", &info).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(wait_admission("never-submitted", &first).error_code(), grpc::StatusCode::NOT_FOUND);
}

// A full disk fails before anything is written: the reload shows the ledger
// as acknowledged, so a job of the refused Admit is known not to exist.
TEST_F(AdmissionServiceFaultTest, AJobOfAnAdmitRefusedBeforeAnyWriteIsNotFound) {
  store_->Fail(absl::ResourceExhaustedError("database or disk is full"));
  store_->FailReads();  // so the answer rests on the error alone, not on a reload
  v1::AdmitResponse refused;
  EXPECT_EQ(Admit("b1", "blue", 2, &refused).error_code(), grpc::StatusCode::UNAVAILABLE);
  v1::GetJobRequest request;
  request.set_job("b1");
  v1::JobInfo info;
  grpc::ClientContext context;
  EXPECT_EQ(stub_->GetJob(&context, request, &info).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Release("b1").error_code(), grpc::StatusCode::NOT_FOUND);
}

// A refused ack says retrying is safe; the retry of an ack that was applied
// all the same is answered OK with the job as it is, not as stale.
TEST_F(AdmissionServiceFaultTest, ARetriedAckOfAResizeAppliedDespiteItsErrorSucceeds) {
  v1::AdmitRequest request;
  request.mutable_job()->set_job("e1");
  request.mutable_job()->set_team("blue");
  request.mutable_job()->mutable_elastic()->set_min(1);
  request.mutable_job()->mutable_elastic()->set_max(4);
  (*request.mutable_job()->mutable_per_replica())["gpu"] = 1;
  v1::AdmitResponse admitted;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub_->Admit(&context, request, &admitted).ok());
  }
  ASSERT_TRUE(admitted.job().has_resize()) << "an idle cluster grows a new elastic job at once";
  const v1::ResizeRequest grow = admitted.job().resize();
  store_->FailAfterWriting(absl::UnavailableError("server closed the connection unexpectedly"));
  v1::AckResizeResponse lost;
  const grpc::Status refused = AckResize("e1", grow.epoch(), grow.target_replicas(), &lost);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(refused.error_message().find("retrying is safe"), std::string::npos) << refused.error_message();
  HealAndWaitForWrites();
  v1::AckResizeResponse retried;
  const grpc::Status status = AckResize("e1", grow.epoch(), grow.target_replicas(), &retried);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(retried.job().replicas(), grow.target_replicas());
  EXPECT_FALSE(retried.job().has_resize());
  // Another size under the same epoch is still refused as stale.
  v1::AckResizeResponse other;
  EXPECT_EQ(AckResize("e1", grow.epoch(), grow.target_replicas() - 1, &other).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
}

}  // namespace
}  // namespace tidegate::service
