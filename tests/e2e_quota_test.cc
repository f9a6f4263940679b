// End to end: what team leads read (teams, loans) and what a platform owner
// changes (config apply, restarts), against the real tidegated on 127.0.0.1
// with the example config (deploy/examples/tidegate.yaml):
//
//   org 48 (ml's 40 + a pool of 8) ─ ml 40, borrow limit 16 ─ research 16
//                                                           └ training 24, lends ≤ 16
//   serving 16, never borrows; 64 GPUs.
//
// One server for the suite; each test releases the jobs it admitted. The
// restart test runs its own server on its own ledger.
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "api/yaml_loader.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/support/server_process.h"
#include "tidegate/v1/service.grpc.pb.h"

namespace tidegate {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using testing::SourceDir;

std::string ExamplePath() { return SourceDir() + "/deploy/examples/tidegate.yaml"; }

v1::Config Example() {
  v1::Config config;
  EXPECT_TRUE(api::LoadYamlFile(ExamplePath(), &config).ok());
  return config;
}

v1::ResourceQuota& GpuQuota(v1::Config& config, const std::string& team) {
  for (auto& t : *config.mutable_teams()) {
    if (t.name() == team) return (*t.mutable_quota())["gpu"];
  }
  ADD_FAILURE() << "no team " << team;
  static v1::ResourceQuota none;
  return none;
}

class Broker {
 public:
  Broker(const std::string& config, const std::string& db) : server_(config, db) {}
  bool Start() {
    if (!server_.Start()) return false;
    admission_ = v1::AdmissionService::NewStub(server_.Channel());
    quota_ = v1::QuotaService::NewStub(server_.Channel());
    return true;
  }
  testing::ServerProcess& server() { return server_; }

  v1::AdmitResponse Admit(const std::string& id, const std::string& team, int64_t replicas,
                          int64_t gpus) {
    grpc::ClientContext ctx;
    v1::AdmitRequest req;
    req.mutable_job()->set_job(id);
    req.mutable_job()->set_team(team);
    req.mutable_job()->set_replicas(replicas);
    (*req.mutable_job()->mutable_per_replica())["gpu"] = gpus;
    v1::AdmitResponse resp;
    EXPECT_TRUE(admission_->Admit(&ctx, req, &resp).ok()) << id;
    return resp;
  }
  void Release(const std::string& id) {
    grpc::ClientContext ctx;
    v1::ReleaseRequest req;
    req.set_job(id);
    v1::ReleaseResponse resp;
    EXPECT_TRUE(admission_->Release(&ctx, req, &resp).ok()) << id;
  }
  // The gpu figures of every team, by name.
  std::map<std::string, v1::TeamInfo> Teams() {
    grpc::ClientContext ctx;
    v1::ListTeamsResponse resp;
    EXPECT_TRUE(quota_->ListTeams(&ctx, v1::ListTeamsRequest(), &resp).ok());
    std::map<std::string, v1::TeamInfo> out;
    for (const auto& t : resp.teams()) out[t.name()] = t;
    return out;
  }
  std::vector<v1::Loan> Loans() {
    grpc::ClientContext ctx;
    v1::ListLoansResponse resp;
    EXPECT_TRUE(quota_->ListLoans(&ctx, v1::ListLoansRequest(), &resp).ok());
    return {resp.loans().begin(), resp.loans().end()};
  }
  grpc::Status Apply(const v1::Config& config, bool dry_run, v1::ApplyConfigResponse* resp) {
    grpc::ClientContext ctx;
    v1::ApplyConfigRequest req;
    *req.mutable_config() = config;
    req.set_dry_run(dry_run);
    return quota_->ApplyConfig(&ctx, req, resp);
  }

 private:
  testing::ServerProcess server_;
  std::unique_ptr<v1::AdmissionService::Stub> admission_;
  std::unique_ptr<v1::QuotaService::Stub> quota_;
};

class QuotaTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    broker_ = new Broker(ExamplePath(), dir_->File("t.db"));
    ASSERT_TRUE(broker_->Start()) << broker_->server().Stderr();
  }
  static void TearDownTestSuite() {
    delete broker_;
    delete dir_;
  }
  static testing::TempDir* dir_;
  static Broker* broker_;
};
testing::TempDir* QuotaTest::dir_ = nullptr;
Broker* QuotaTest::broker_ = nullptr;

const v1::TeamResource& Gpu(const v1::TeamInfo& team) { return team.resources(0); }

TEST_F(QuotaTest, OnAnEmptyBrokerUsedIsZeroAndPrivatePartsHaveTheirOwnColumn) {
  auto teams = broker_->Teams();
  // training lends at most 16 of its 24: 8 are held for it, by it and above.
  for (const char* name : {"org", "ml", "training"}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(Gpu(teams[name]).used(), 0);
    EXPECT_EQ(Gpu(teams[name]).private_(), 8);
    EXPECT_EQ(Gpu(teams[name]).borrowed(), 0);
    EXPECT_EQ(Gpu(teams[name]).lent(), 0);
  }
  EXPECT_EQ(Gpu(teams["research"]).private_(), 0);
  EXPECT_EQ(Gpu(teams["serving"]).private_(), 0);
}

TEST_F(QuotaTest, TheWalkthroughsLoansComeFromTheNearestLendersNotFromServing) {
  // research runs 40 of its 16: 16 admitted, then 24 borrowed.
  EXPECT_EQ(broker_->Admit("r1", "research", 2, 8).decision(), v1::DECISION_ADMITTED);
  EXPECT_EQ(broker_->Admit("r2", "research", 3, 8).decision(), v1::DECISION_ADMITTED_BORROWING);
  EXPECT_EQ(broker_->Admit("q1", "research", 1, 40).decision(), v1::DECISION_QUEUED);
  auto teams = broker_->Teams();
  EXPECT_EQ(Gpu(teams["research"]).used(), 40);
  EXPECT_EQ(Gpu(teams["research"]).borrowed(), 24);
  // training's sibling guarantee first (its lend limit, 16), then org's pool (8).
  EXPECT_EQ(Gpu(teams["training"]).lent(), 16);
  EXPECT_EQ(Gpu(teams["serving"]).lent(), 0);
  // ml holds 40 + training's private 8 = 48 of its 40: it borrows org's 8.
  EXPECT_EQ(Gpu(teams["ml"]).used(), 40);
  EXPECT_EQ(Gpu(teams["ml"]).private_(), 8);
  EXPECT_EQ(Gpu(teams["ml"]).borrowed(), 8);
  EXPECT_EQ(Gpu(teams["org"]).borrowed(), 0);
  // Inner teams count their subtree's jobs and queued demand.
  for (const char* name : {"ml", "org"}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(teams[name].running_jobs(), 2);
    EXPECT_EQ(teams[name].queued_jobs(), 1);
    EXPECT_EQ(Gpu(teams[name]).queued(), 40);
  }

  // The ledger's loans (written about once a second) follow the same rule:
  // research borrows from training and from org's pool, 2:1, never from serving.
  std::map<std::string, double> hours;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    hours.clear();
    for (const auto& loan : broker_->Loans()) hours[loan.borrower() + "<-" + loan.lender()] += loan.hours();
    if (hours["research<-training"] > 0 && hours["research<-org"] > 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_GT(hours["research<-org"], 0);
  EXPECT_NEAR(hours["research<-training"] / hours["research<-org"], 2.0, 1e-6);
  EXPECT_EQ(hours.count("research<-serving"), 0u);
  EXPECT_EQ(hours.size(), 2u);

  // serving then takes its whole guarantee without any reclaim: it lent nothing.
  EXPECT_EQ(broker_->Admit("s1", "serving", 2, 8).decision(), v1::DECISION_ADMITTED);
  for (const char* id : {"r1", "r2", "q1", "s1"}) broker_->Release(id);
}

TEST_F(QuotaTest, DryRunRunsTheChecksOfTheRealApplyAndDiffsFieldByField) {
  broker_->Admit("d1", "research", 1, 8);
  // A change the real apply refuses: research, which has a job, would become
  // an inner team.
  v1::Config refused = Example();
  auto* child = refused.add_teams();
  child->set_name("research-sub");
  child->set_parent("research");
  v1::ApplyConfigResponse dry_resp, real_resp;
  const grpc::Status dry = broker_->Apply(refused, /*dry_run=*/true, &dry_resp);
  const grpc::Status real = broker_->Apply(refused, /*dry_run=*/false, &real_resp);
  EXPECT_EQ(real.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << real.error_message();
  EXPECT_EQ(dry.error_code(), real.error_code()) << dry.error_message();
  EXPECT_EQ(dry.error_message(), real.error_message());

  // A change it accepts: the diff names team, resource, field, old and new.
  v1::Config changed = Example();
  GpuQuota(changed, "research").set_guaranteed(8);
  GpuQuota(changed, "serving").set_borrow_limit(4);
  v1::ApplyConfigResponse ok_resp;
  ASSERT_TRUE(broker_->Apply(changed, /*dry_run=*/true, &ok_resp).ok());
  EXPECT_FALSE(ok_resp.applied());
  EXPECT_THAT(ok_resp.diff(), Contains("research gpu guaranteed 16 -> 8"));
  EXPECT_THAT(ok_resp.diff(), Contains("serving gpu borrow_limit 0 -> 4"));
  EXPECT_EQ(ok_resp.diff_size(), 2);
  EXPECT_EQ(Gpu(broker_->Teams()["research"]).guaranteed(), 16);  // nothing applied
  broker_->Release("d1");
}

TEST(ConfigRestartTest, TheStartupFileIsAppliedAgainWithItsDiffLoggedAndApplyWarns) {
  testing::TempDir dir;
  const std::string file = dir.File("tidegate.yaml");
  {
    std::ifstream in(ExamplePath());
    std::stringstream text;
    text << in.rdbuf();
    std::ofstream(file) << text.str();
  }
  const std::string db = dir.File("t.db");
  v1::Config changed = Example();
  GpuQuota(changed, "serving").set_borrow_limit(4);
  {
    Broker broker(file, db);
    ASSERT_TRUE(broker.Start()) << broker.server().Stderr();
    v1::ApplyConfigResponse resp;
    ASSERT_TRUE(broker.Apply(changed, /*dry_run=*/false, &resp).ok());
    EXPECT_TRUE(resp.applied());
    // The file it started from still says 0: a restart will apply it again.
    ASSERT_EQ(resp.warnings_size(), 1);
    EXPECT_THAT(resp.warnings(0), HasSubstr("started with --config " + file));
    EXPECT_THAT(resp.warnings(0), HasSubstr("serving gpu borrow_limit 4 -> 0"));
    EXPECT_EQ(Gpu(broker.Teams()["serving"]).borrow_limit(), 4);
    EXPECT_EQ(broker.server().Terminate(), 0);
  }
  Broker restarted(file, db);
  ASSERT_TRUE(restarted.Start()) << restarted.server().Stderr();
  EXPECT_EQ(Gpu(restarted.Teams()["serving"]).borrow_limit(), 0);  // the file is in force
  const std::string log = restarted.server().Stderr();
  EXPECT_THAT(log, HasSubstr("applying the file as a journalled config change (1 change)"));
  EXPECT_THAT(log, HasSubstr("serving gpu borrow_limit 4 -> 0"));

  // Applying what the file says raises no warning.
  v1::ApplyConfigResponse same;
  ASSERT_TRUE(restarted.Apply(Example(), /*dry_run=*/false, &same).ok());
  EXPECT_EQ(same.warnings_size(), 0);
}

}  // namespace
}  // namespace tidegate
