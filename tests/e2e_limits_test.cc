// Hostile clients against the real tidegated (docs/limits.md): oversized
// messages, unknown fields, bursts of rejects, more streams than a client may
// hold, and pages of lists. One broker for the whole binary; each test uses
// its own job ids.
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/support/server_process.h"
#include "tidegate/v1/service.grpc.pb.h"

namespace tidegate {
namespace {

using ::testing::HasSubstr;

constexpr int kStreamsPerPeer = 40;

constexpr char kConfig[] = R"(
clusters:
  - {name: a, capacity: {gpu: 8}}
teams:
  - {name: research, quota: {gpu: {guaranteed: 8}}}
  - {name: serving, quota: {gpu: {guaranteed: 0}}}
)";

v1::JobSpec Job(const std::string& id, const std::string& team, int64_t gpus) {
  v1::JobSpec j;
  j.set_job(id);
  j.set_team(team);
  (*j.mutable_per_replica())["gpu"] = gpus;
  return j;
}

bool HasUnknownFields(const google::protobuf::Message& m) {
  return m.GetReflection()->GetUnknownFields(m).field_count() > 0;
}

class LimitsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    std::ofstream(dir_->File("tidegate.yaml")) << kConfig;
    server_ = new testing::ServerProcess(dir_->File("tidegate.yaml"), dir_->File("tidegate.db"),
                                         {"--max-streams-per-peer", std::to_string(kStreamsPerPeer)});
    ASSERT_TRUE(server_->Start()) << server_->Stderr();
  }
  static void TearDownTestSuite() {
    delete server_;
    delete dir_;
  }
  void SetUp() override {
    auto channel = server_->Channel();
    admission_ = v1::AdmissionService::NewStub(channel);
    diagnostics_ = v1::DiagnosticsService::NewStub(channel);
  }

  grpc::Status Admit(const v1::JobSpec& spec, v1::AdmitResponse* resp = nullptr) {
    v1::AdmitRequest req;
    *req.mutable_job() = spec;
    return AdmitRaw(req, resp);
  }
  grpc::Status AdmitRaw(const v1::AdmitRequest& req, v1::AdmitResponse* resp = nullptr) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::AdmitResponse ignored;
    return admission_->Admit(&ctx, req, resp ? resp : &ignored);
  }
  // The ledger's latest journal entry.
  int64_t Seq() {
    grpc::ClientContext ctx;
    v1::PingResponse resp;
    EXPECT_TRUE(diagnostics_->Ping(&ctx, v1::PingRequest(), &resp).ok());
    return resp.seq();
  }

  static testing::TempDir* dir_;
  static testing::ServerProcess* server_;
  std::unique_ptr<v1::AdmissionService::Stub> admission_;
  std::unique_ptr<v1::DiagnosticsService::Stub> diagnostics_;
};
testing::TempDir* LimitsTest::dir_ = nullptr;
testing::ServerProcess* LimitsTest::server_ = nullptr;

TEST_F(LimitsTest, AnOversizedAdmitIsRefusedAndNothingIsJournalled) {
  const int64_t before = Seq();
  // Past the per-command limit (64 KiB): INVALID_ARGUMENT naming the size.
  // (A valid id and 100 KiB of labels: the id's own bound is checked first.)
  v1::JobSpec big = Job("big-labels", "research", 1);
  for (int i = 0; i < 100; ++i) (*big.mutable_labels())["l" + std::to_string(i)] = std::string(1000, 'x');
  grpc::Status s = Admit(big);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("more than the 65536 accepted (--max-request-bytes)"));
  // Past the largest message of any method (4 MiB): gRPC refuses it unread.
  s = Admit(Job(std::string(5 << 20, 'x'), "research", 1));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(Seq(), before);
}

TEST_F(LimitsTest, UnknownFieldsAreNeitherJournalledNorServedBack) {
  v1::AdmitRequest req;
  *req.mutable_job() = Job("unknown-fields", "serving", 1);
  req.mutable_job()->GetReflection()->MutableUnknownFields(req.mutable_job())->AddLengthDelimited(
      999, std::string(30000, 'z'));
  v1::AdmitResponse resp;
  ASSERT_TRUE(AdmitRaw(req, &resp).ok());
  EXPECT_FALSE(HasUnknownFields(resp.job().spec()));
  grpc::ClientContext ctx;
  v1::GetJobRequest get;
  get.set_job("unknown-fields");
  v1::JobInfo job;
  ASSERT_TRUE(admission_->GetJob(&ctx, get, &job).ok());
  EXPECT_FALSE(HasUnknownFields(job.spec()));
  EXPECT_LT(job.ByteSizeLong(), 1000u);
}

TEST_F(LimitsTest, ABurstOfRejectsLeavesTheLedgerAsItWas) {
  const int64_t before = Seq();
  for (int i = 0; i < 2000; ++i) {
    const grpc::Status s = Admit(Job("reject-" + std::to_string(i), "nobody", 1));
    ASSERT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    if (i == 0) {
      EXPECT_THAT(s.error_message(), HasSubstr("team: 'nobody' is not a team"));
    }
  }
  EXPECT_EQ(Seq(), before);
}

TEST_F(LimitsTest, StreamsPastThePerClientLimitAreResourceExhaustedAndSlotsComeBack) {
  ASSERT_TRUE(Admit(Job("stream-filler", "research", 8)).ok());
  ASSERT_TRUE(Admit(Job("stream-waiter", "research", 8)).ok());  // queued behind the filler
  v1::WaitAdmissionRequest req;
  req.set_job("stream-waiter");
  struct Stream {
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::ClientReader<v1::WaitAdmissionResponse>> reader;
  };
  auto open = [&](Stream* s) {
    // A deadline, so that a stream the broker wrongly keeps open fails the
    // test instead of hanging it.
    s->ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    s->reader = admission_->WaitAdmission(&s->ctx, req);
    v1::WaitAdmissionResponse first;
    return s->reader->Read(&first);  // the job's state now: the stream is open
  };
  std::vector<std::unique_ptr<Stream>> streams;
  for (int i = 0; i < kStreamsPerPeer; ++i) {
    streams.push_back(std::make_unique<Stream>());
    ASSERT_TRUE(open(streams.back().get())) << "stream " << i;
  }
  Stream refused;
  EXPECT_FALSE(open(&refused));
  const grpc::Status status = refused.reader->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(status.error_message(), HasSubstr("--max-streams-per-peer 40"));
  // Other calls from the same client still work.
  EXPECT_GE(Seq(), 1);
  // Closing one stream gives its slot back (once the broker saw it end).
  streams.front()->ctx.TryCancel();
  streams.front()->reader->Finish();
  streams.erase(streams.begin());
  bool reopened = false;
  for (int attempt = 0; attempt < 1000 && !reopened; ++attempt) {
    auto s = std::make_unique<Stream>();
    if (open(s.get())) {
      streams.push_back(std::move(s));
      reopened = true;
    } else {
      s->reader->Finish();
    }
  }
  EXPECT_TRUE(reopened);
  for (auto& s : streams) {
    s->ctx.TryCancel();
    s->reader->Finish();
  }
}

TEST_F(LimitsTest, ListJobsPagesInIdOrderUntilAnEmptyToken) {
  for (const char* id : {"page-c", "page-a", "page-e", "page-b", "page-d"}) {
    ASSERT_TRUE(Admit(Job(id, "serving", 1)).ok()) << id;
  }
  v1::ListJobsRequest req;
  req.set_team("serving");
  req.set_page_size(2);
  std::vector<std::string> ids;
  int pages = 0;
  do {
    grpc::ClientContext ctx;
    v1::ListJobsResponse resp;
    ASSERT_TRUE(admission_->ListJobs(&ctx, req, &resp).ok());
    EXPECT_LE(resp.jobs_size(), 2);
    for (const auto& j : resp.jobs()) {
      if (j.job().rfind("page-", 0) == 0) ids.push_back(j.job());
    }
    req.set_page_token(resp.next_page_token());
    ++pages;
  } while (!req.page_token().empty() && pages < 100);
  EXPECT_EQ(ids, (std::vector<std::string>{"page-a", "page-b", "page-c", "page-d", "page-e"}));
  // A token from another filter is refused.
  v1::ListJobsRequest first;
  first.set_team("serving");
  first.set_page_size(1);
  grpc::ClientContext ctx1;
  v1::ListJobsResponse resp1;
  ASSERT_TRUE(admission_->ListJobs(&ctx1, first, &resp1).ok());
  ASSERT_FALSE(resp1.next_page_token().empty());
  v1::ListJobsRequest other;
  other.set_page_token(resp1.next_page_token());
  grpc::ClientContext ctx2;
  v1::ListJobsResponse resp2;
  const grpc::Status s = admission_->ListJobs(&ctx2, other, &resp2);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("page_token"));
}

}  // namespace
}  // namespace tidegate
