// End to end: the real tidegated binary on 127.0.0.1 with a temporary SQLite
// ledger, driven by a gRPC client. Grace periods are 1 s so a reclaim
// completes in real time.
#include <fstream>
#include <thread>

#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/support/server_process.h"
#include "tidegate/v1/service.grpc.pb.h"

namespace tidegate {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kConfig[] = R"(
clusters:
  - {name: a, kind: kubernetes, capacity: {gpu: 16}}
teams:
  - {name: research, quota: {gpu: {guaranteed: 8}}}
  - {name: serving, quota: {gpu: {guaranteed: 8}}, preemption: {reclaim: any}}
policy: {default_grace_s: 1, tick_s: 1, requeue_backoff_s: 0}
)";

v1::JobSpec Job(const std::string& id, const std::string& team, int64_t replicas, int64_t gpus) {
  v1::JobSpec j;
  j.set_job(id);
  j.set_team(team);
  j.set_replicas(replicas);
  (*j.mutable_per_replica())["gpu"] = gpus;
  return j;
}

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = dir_.File("tidegate.yaml");
    std::ofstream(config_) << kConfig;
    db_ = dir_.File("tidegate.db");
    StartServer();
  }
  void StartServer() {
    server_ = std::make_unique<testing::ServerProcess>(config_, db_);
    ASSERT_TRUE(server_->Start()) << server_->Stderr();
    auto channel = server_->Channel();
    admission_ = v1::AdmissionService::NewStub(channel);
    quota_ = v1::QuotaService::NewStub(channel);
  }
  grpc::Status Admit(const v1::JobSpec& spec, v1::AdmitResponse* resp) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::AdmitRequest req;
    *req.mutable_job() = spec;
    return admission_->Admit(&ctx, req, resp);
  }
  v1::JobInfo GetJob(const std::string& id, grpc::Status* status = nullptr) {
    grpc::ClientContext ctx;
    v1::GetJobRequest req;
    req.set_job(id);
    v1::JobInfo out;
    grpc::Status s = admission_->GetJob(&ctx, req, &out);
    if (status) *status = s;
    return out;
  }
  v1::TeamInfo GetTeam(const std::string& name) {
    grpc::ClientContext ctx;
    v1::GetTeamRequest req;
    req.set_team(name);
    v1::TeamInfo out;
    EXPECT_TRUE(quota_->GetTeam(&ctx, req, &out).ok());
    return out;
  }

  testing::TempDir dir_;
  std::string config_, db_;
  std::unique_ptr<testing::ServerProcess> server_;
  std::unique_ptr<v1::AdmissionService::Stub> admission_;
  std::unique_ptr<v1::QuotaService::Stub> quota_;
};

TEST_F(ServiceTest, AdmitsWithinGuaranteeThenBorrowsThenReclaimsAfterGrace) {
  v1::AdmitResponse r1, r2, s1;
  ASSERT_TRUE(Admit(Job("r1", "research", 1, 8), &r1).ok());
  EXPECT_EQ(r1.decision(), v1::DECISION_ADMITTED);
  ASSERT_TRUE(Admit(Job("r2", "research", 2, 4), &r2).ok());
  EXPECT_EQ(r2.decision(), v1::DECISION_ADMITTED_BORROWING);
  EXPECT_EQ(r2.borrowed().at("gpu"), 8);
  EXPECT_EQ(GetTeam("research").resources(0).used(), 16);
  EXPECT_EQ(GetTeam("research").resources(0).borrowed(), 8);
  EXPECT_EQ(GetTeam("serving").resources(0).lent(), 8);

  ASSERT_TRUE(Admit(Job("s1", "serving", 1, 8), &s1).ok());
  EXPECT_EQ(s1.decision(), v1::DECISION_RECLAIMING);
  EXPECT_THAT(s1.victims(), ElementsAre("r2"));
  EXPECT_EQ(GetJob("r2").state(), v1::JOB_STATE_DRAINING);

  // WaitAdmission streams until s1 is admitted (after r2's 1 s grace).
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  v1::WaitAdmissionRequest wait;
  wait.set_job("s1");
  auto reader = admission_->WaitAdmission(&ctx, wait);
  v1::WaitAdmissionResponse update;
  std::vector<v1::JobState> states;
  while (reader->Read(&update)) states.push_back(update.job().state());
  ASSERT_TRUE(reader->Finish().ok());
  ASSERT_FALSE(states.empty());
  EXPECT_EQ(states.front(), v1::JOB_STATE_QUEUED);
  EXPECT_EQ(states.back(), v1::JOB_STATE_ADMITTED);
  EXPECT_EQ(GetJob("r2").state(), v1::JOB_STATE_QUEUED);
  EXPECT_EQ(GetJob("r2").queue_position(), 1);
  EXPECT_EQ(GetTeam("serving").resources(0).used(), 8);
}

TEST_F(ServiceTest, SameIdSameSpecIsIdempotentAndAnotherSpecIsAlreadyExists) {
  v1::AdmitResponse first, again, other;
  ASSERT_TRUE(Admit(Job("j", "research", 1, 2), &first).ok());
  ASSERT_TRUE(Admit(Job("j", "research", 1, 2), &again).ok());
  EXPECT_EQ(again.decision(), first.decision());
  grpc::Status s = Admit(Job("j", "research", 1, 3), &other);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::ALREADY_EXISTS);
  EXPECT_EQ(GetTeam("research").resources(0).used(), 2);
}

// A retry answers the decision it repeats whole: how much the job borrows
// too, also after a restart (from the snapshot a clean stop writes).
TEST_F(ServiceTest, ARetriedAdmitOfABorrowingJobRepeatsWhatItBorrows) {
  v1::AdmitResponse first, borrower, again;
  ASSERT_TRUE(Admit(Job("r1", "research", 1, 8), &first).ok());
  ASSERT_TRUE(Admit(Job("r2", "research", 2, 4), &borrower).ok());
  ASSERT_EQ(borrower.decision(), v1::DECISION_ADMITTED_BORROWING);
  ASSERT_EQ(borrower.borrowed().at("gpu"), 8);
  ASSERT_TRUE(Admit(Job("r2", "research", 2, 4), &again).ok());
  EXPECT_EQ(again.decision(), v1::DECISION_ADMITTED_BORROWING);
  EXPECT_EQ(again.borrowed().size(), 1u);
  EXPECT_EQ(again.borrowed().at("gpu"), 8);
  EXPECT_EQ(GetJob("r2").borrowed().at("gpu"), 8);
  EXPECT_TRUE(GetJob("r1").borrowed().empty());
  admission_.reset();  // an open client channel holds up the shutdown by seconds
  quota_.reset();
  EXPECT_EQ(server_->Terminate(), 0);
  StartServer();
  v1::AdmitResponse restarted;
  ASSERT_TRUE(Admit(Job("r2", "research", 2, 4), &restarted).ok());
  EXPECT_EQ(restarted.decision(), v1::DECISION_ADMITTED_BORROWING);
  EXPECT_EQ(restarted.borrowed().at("gpu"), 8);
  EXPECT_EQ(GetJob("r2").borrowed().at("gpu"), 8);
}

TEST_F(ServiceTest, BadInputIsInvalidArgumentNamingFieldAndValueAndChangesNothing) {
  v1::AdmitResponse resp;
  grpc::Status s = Admit(Job("x", "nobody", 1, 1), &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("team: 'nobody'"));
  s = Admit(Job("y", "research", 0, 1), &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("replicas: 0"));
  s = Admit(Job("z", "research", 4611686018427387904, 4), &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("overflows int64"));
  grpc::Status get;
  // A reject is not journalled; the service keeps it in memory (docs/jobs.md).
  EXPECT_EQ(GetJob("x", &get).state(), v1::JOB_STATE_REJECTED) << get.error_message();
  EXPECT_EQ(GetTeam("research").resources(0).used(), 0);

  grpc::ClientContext ctx;
  v1::ReleaseRequest rel;
  rel.set_job("never-submitted");
  v1::ReleaseResponse rr;
  EXPECT_EQ(admission_->Release(&ctx, rel, &rr).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(ServiceTest, SigtermExitsZeroAndRestartKeepsEveryDecision) {
  v1::AdmitResponse resp;
  ASSERT_TRUE(Admit(Job("a1", "research", 1, 8), &resp).ok());
  ASSERT_TRUE(Admit(Job("a2", "research", 1, 4), &resp).ok());
  ASSERT_TRUE(Admit(Job("q1", "research", 1, 16), &resp).ok());
  EXPECT_EQ(resp.decision(), v1::DECISION_QUEUED);
  EXPECT_FALSE(resp.reason().empty());
  {
    grpc::ClientContext ctx;
    v1::ReleaseRequest rel;
    rel.set_job("a2");
    v1::ReleaseResponse rr;
    ASSERT_TRUE(admission_->Release(&ctx, rel, &rr).ok());
  }
  admission_.reset();  // an open client channel holds up the shutdown by seconds
  quota_.reset();
  EXPECT_EQ(server_->Terminate(), 0);
  StartServer();
  EXPECT_EQ(GetJob("a1").state(), v1::JOB_STATE_ADMITTED);
  EXPECT_EQ(GetJob("q1").state(), v1::JOB_STATE_QUEUED);
  // A released job stays known as ended across the restart.
  grpc::Status gone;
  EXPECT_EQ(GetJob("a2", &gone).state(), v1::JOB_STATE_ENDED);
  EXPECT_TRUE(gone.ok()) << gone.error_message();
  EXPECT_EQ(GetTeam("research").resources(0).used(), 8);
}

TEST_F(ServiceTest, ListsJobsByTeamAndStateAndAppliesConfigWithDiff) {
  v1::AdmitResponse resp;
  ASSERT_TRUE(Admit(Job("r1", "research", 1, 4), &resp).ok());
  ASSERT_TRUE(Admit(Job("s1", "serving", 1, 2), &resp).ok());
  {
    grpc::ClientContext ctx;
    v1::ListJobsRequest req;
    req.set_team("research");
    v1::ListJobsResponse out;
    ASSERT_TRUE(admission_->ListJobs(&ctx, req, &out).ok());
    ASSERT_EQ(out.jobs_size(), 1);
    EXPECT_EQ(out.jobs(0).job(), "r1");
  }
  v1::ApplyConfigRequest apply;
  auto* c = apply.mutable_config();
  auto* cl = c->add_clusters();
  cl->set_name("a");
  (*cl->mutable_capacity())["gpu"] = 16;
  auto* t1 = c->add_teams();
  t1->set_name("research");
  (*t1->mutable_quota())["gpu"].set_guaranteed(12);
  auto* t2 = c->add_teams();
  t2->set_name("serving");
  (*t2->mutable_quota())["gpu"].set_guaranteed(4);
  apply.set_dry_run(true);
  {
    grpc::ClientContext ctx;
    v1::ApplyConfigResponse out;
    ASSERT_TRUE(quota_->ApplyConfig(&ctx, apply, &out).ok());
    EXPECT_FALSE(out.applied());
    ASSERT_FALSE(out.diff().empty());
    EXPECT_EQ(GetTeam("research").resources(0).guaranteed(), 8);
  }
  apply.set_dry_run(false);
  {
    grpc::ClientContext ctx;
    v1::ApplyConfigResponse out;
    ASSERT_TRUE(quota_->ApplyConfig(&ctx, apply, &out).ok());
    EXPECT_TRUE(out.applied());
    EXPECT_EQ(GetTeam("research").resources(0).guaranteed(), 12);
  }
  (*apply.mutable_config()->mutable_teams(0)->mutable_quota())["gpu"].set_guaranteed(-1);
  grpc::ClientContext ctx;
  v1::ApplyConfigResponse out;
  grpc::Status s = quota_->ApplyConfig(&ctx, apply, &out);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("-1"));
}

}  // namespace
}  // namespace tidegate
