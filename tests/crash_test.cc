// Crash recovery: several clients stream Admit and Release while the real
// tidegated is killed with SIGKILL at random moments (a bounded number of
// rounds, seeded). After each restart every acknowledged decision is there,
// nothing unacknowledged is half-applied (usage equals the demand of the jobs
// that hold capacity), and at the end `tidegate ledger verify` passes.
//
// The broker runs as it would on a network: TLS (certificates issued by
// deploy/security/issue-certs.sh), a roles file and bearer tokens. The clients
// are a scheduler of both teams; the checks after each restart read as admin.
// The journal's record of who asked survives the crashes.
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "broker/service/auth_files.h"
#include "cli/auth_channel.h"
#include "gtest/gtest.h"
#include "tests/support/server_process.h"
#include "tidegate/v1/service.grpc.pb.h"

namespace tidegate {
namespace {

constexpr char kConfig[] = R"(
clusters:
  - {name: a, capacity: {gpu: 64}}
teams:
  - {name: red, quota: {gpu: {guaranteed: 32}}}
  - {name: blue, quota: {gpu: {guaranteed: 32}}}
policy: {default_grace_s: 0, tick_s: 1}
)";

constexpr char kRoles[] = R"(
principals:
  root: [admin]
  sched: [{scheduler: [red, blue]}]
)";

constexpr int kRounds = 4;

// TLS material, roles and tokens in `dir`; false if openssl failed.
bool SetUpSecurity(const testing::TempDir& dir) {
  const char* source = std::getenv("TIDEGATE_SOURCE_DIR");
  const std::string script = std::string(source ? source : ".") + "/deploy/security/issue-certs.sh";
  if (std::system(("cd '" + dir.path() + "' && sh '" + script + "' 127.0.0.1 >/dev/null 2>&1").c_str()) != 0) {
    return false;
  }
  std::ofstream(dir.File("roles.yaml")) << kRoles;
  std::ofstream(dir.File("tokens")) << "root " << service::auth::Sha256Hex("root-token") << "\n"
                                    << "sched " << service::auth::Sha256Hex("sched-token") << "\n";
  return true;
}

std::vector<std::string> SecureFlags(const testing::TempDir& dir) {
  return {"--tls-cert", dir.File("broker.crt"), "--tls-key", dir.File("broker.key"),
          "--roles",    dir.File("roles.yaml"), "--tokens",  dir.File("tokens")};
}

// A TLS channel that verifies the broker against the test CA, with a token.
std::shared_ptr<grpc::Channel> SecureChannel(const testing::TempDir& dir, const testing::ServerProcess& server,
                                             const std::string& token) {
  cli::ChannelSecurity security;
  security.tls = true;
  security.ca = dir.File("ca.crt");
  security.token = token;
  auto channel = cli::MakeBrokerChannel(server.address(), security, grpc::ChannelArguments());
  EXPECT_TRUE(channel.ok()) << channel.status();
  return *channel;
}
constexpr int kClients = 4;

struct Acked {
  std::mutex mu;
  std::set<std::string> admitted;  // acknowledged Admit (any decision), not released
  std::set<std::string> released;  // acknowledged Release
  // Release sent, no answer (the server was killed): it may or may not have
  // been committed, and either is correct.
  std::set<std::string> uncertain;
};

void Client(std::shared_ptr<grpc::Channel> channel, int round, int id, std::atomic<bool>* stop, Acked* acked) {
  auto stub = v1::AdmissionService::NewStub(channel);
  std::vector<std::string> mine;
  std::mt19937 rng(round * 100 + id);
  for (int n = 0; !stop->load(); ++n) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
    if (!mine.empty() && rng() % 2 == 0) {
      const std::string job = mine.back();
      {
        std::lock_guard<std::mutex> lock(acked->mu);
        acked->admitted.erase(job);
        acked->uncertain.insert(job);
      }
      v1::ReleaseRequest req;
      req.set_job(job);
      v1::ReleaseResponse resp;
      grpc::Status s = stub->Release(&ctx, req, &resp);
      if (!s.ok()) return;  // the server went away: stop.
      mine.pop_back();
      std::lock_guard<std::mutex> lock(acked->mu);
      acked->uncertain.erase(job);
      acked->released.insert(job);
      continue;
    }
    const std::string job = "r" + std::to_string(round) + "-c" + std::to_string(id) + "-" + std::to_string(n);
    v1::AdmitRequest req;
    req.mutable_job()->set_job(job);
    req.mutable_job()->set_team(id % 2 ? "red" : "blue");
    req.mutable_job()->set_replicas(1);
    (*req.mutable_job()->mutable_per_replica())["gpu"] = 1 + rng() % 3;
    v1::AdmitResponse resp;
    grpc::Status s = stub->Admit(&ctx, req, &resp);
    if (!s.ok()) return;
    mine.push_back(job);
    std::lock_guard<std::mutex> lock(acked->mu);
    acked->admitted.insert(job);
  }
}

v1::JobInfo GetJob(v1::AdmissionService::Stub& stub, const std::string& job, grpc::Status* status) {
  grpc::ClientContext ctx;
  v1::GetJobRequest req;
  req.set_job(job);
  v1::JobInfo info;
  *status = stub.GetJob(&ctx, req, &info);
  return info;
}

// After a restart: every acknowledged admit is known, every acknowledged
// release has ended; unanswered releases are settled by what the broker says,
// for the later rounds.
void ExpectAcknowledgedKept(v1::AdmissionService::Stub& stub, Acked& acked) {
  std::lock_guard<std::mutex> lock(acked.mu);
  grpc::Status s;
  for (const auto& job : acked.admitted) {
    GetJob(stub, job, &s);
    EXPECT_TRUE(s.ok()) << "acknowledged admit of " << job << " was lost";
  }
  for (const auto& job : acked.released) {
    // Released jobs stay known as ended for the retention window.
    const v1::JobInfo info = GetJob(stub, job, &s);
    EXPECT_TRUE(s.ok() && info.state() == v1::JOB_STATE_ENDED)
        << "acknowledged release of " << job << " was lost: " << s.error_message() << " "
        << v1::JobState_Name(info.state());
  }
  for (const auto& job : std::set<std::string>(acked.uncertain)) {
    const v1::JobInfo info = GetJob(stub, job, &s);
    const bool live = s.ok() && info.state() != v1::JOB_STATE_ENDED;
    (live ? acked.admitted : acked.released).insert(job);
  }
  acked.uncertain.clear();
}

// Nothing half-applied: each team's usage is the demand of its jobs that hold
// capacity.
void ExpectUsageIsTheJobsDemand(v1::AdmissionService::Stub& stub, v1::QuotaService::Stub& quota) {
  grpc::ClientContext list_ctx;
  v1::ListJobsResponse jobs;
  ASSERT_TRUE(stub.ListJobs(&list_ctx, v1::ListJobsRequest(), &jobs).ok());
  std::map<std::string, int64_t> holding;
  for (const auto& j : jobs.jobs()) {
    if (j.state() == v1::JOB_STATE_ADMITTED || j.state() == v1::JOB_STATE_DRAINING) {
      holding[j.team()] += j.demand().at("gpu");
    }
  }
  grpc::ClientContext teams_ctx;
  v1::ListTeamsResponse teams;
  ASSERT_TRUE(quota.ListTeams(&teams_ctx, v1::ListTeamsRequest(), &teams).ok());
  for (const auto& t : teams.teams()) EXPECT_EQ(t.resources(0).used(), holding[t.name()]) << t.name();
}

TEST(CrashTest, KillNineLosesNothingAcknowledgedAndLedgerVerifies) {
  testing::TempDir dir;
  const std::string config = dir.File("tidegate.yaml");
  std::ofstream(config) << kConfig;
  const std::string db = dir.File("tidegate.db");
  ASSERT_TRUE(SetUpSecurity(dir)) << "openssl failed";
  Acked acked;
  std::mt19937 rng(20261122);
  for (int round = 0; round < kRounds; ++round) {
    testing::ServerProcess server(config, db, SecureFlags(dir));
    ASSERT_TRUE(server.Start()) << server.Stderr();
    auto channel = SecureChannel(dir, server, "sched-token");
    std::atomic<bool> stop{false};
    std::vector<std::thread> clients;
    for (int c = 0; c < kClients; ++c) clients.emplace_back(Client, channel, round, c, &stop, &acked);
    std::this_thread::sleep_for(std::chrono::milliseconds(150 + rng() % 500));
    server.Kill();  // SIGKILL mid-stream
    stop = true;
    for (auto& t : clients) t.join();

    // Restart: everything acknowledged is there, and nothing is half-applied.
    testing::ServerProcess again(config, db, SecureFlags(dir));
    ASSERT_TRUE(again.Start()) << again.Stderr();
    auto admin = SecureChannel(dir, again, "root-token");
    ExpectAcknowledgedKept(*v1::AdmissionService::NewStub(admin), acked);
    ExpectUsageIsTheJobsDemand(*v1::AdmissionService::NewStub(admin), *v1::QuotaService::NewStub(admin));
    EXPECT_EQ(again.Terminate(), 0);
  }
  EXPECT_GT(acked.admitted.size() + acked.released.size(), 0u) << "the clients never got an answer";
  const std::string verify =
      testing::ServerProcess::BinDir() + "/tidegate ledger verify --db " + db + " > " + dir.File("verify.txt");
  const int rc = std::system(verify.c_str());
  EXPECT_EQ(rc, 0) << testing::ReadFile(dir.File("verify.txt"));
  // Every acknowledged admit is recorded as the scheduler's.
  const std::string history = testing::ServerProcess::BinDir() + "/tidegate history --db " + db +
                              " --kind admit --principal sched -o json > " + dir.File("history.json");
  ASSERT_EQ(std::system(history.c_str()), 0);
  const std::string json = testing::ReadFile(dir.File("history.json"));
  for (const auto& job : acked.admitted) EXPECT_NE(json.find("\"job\":\"" + job + "\""), std::string::npos) << job;
}

}  // namespace
}  // namespace tidegate
