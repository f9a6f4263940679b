// Who may do what, end to end (docs/security.md): one real tidegated with TLS,
// client certificates from a test CA, bearer tokens and a roles file, all made
// at test time with `openssl`; clients connect through cli/auth_channel.h as
// `tidegate`, the agent and the load generator do.
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "api/yaml_loader.h"
#include "broker/service/auth_files.h"
#include "cli/auth_channel.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/server_process.h"
#include "tidegate/v1/agent.grpc.pb.h"
#include "tidegate/v1/service.grpc.pb.h"

namespace tidegate {
namespace {

using ::testing::HasSubstr;

constexpr char kConfig[] = R"(
clusters:
  - {name: a, kind: kubernetes, capacity: {gpu: 16}}
  - {name: b, kind: kubernetes, capacity: {gpu: 16}}
  - {name: c, kind: kubernetes, capacity: {gpu: 16}}
teams:
  - {name: ml, quota: {gpu: {guaranteed: 16}}}
  - {name: web, quota: {gpu: {guaranteed: 16}}}
policy: {default_grace_s: 1, tick_s: 1, requeue_backoff_s: 0}
)";

constexpr char kRoles[] = R"(
principals:
  root: [admin]
  lead-ml: [{viewer: ml}]
  sched-ml: [{scheduler: [ml]}]
  agent-a: [{agent: a}]
  agent-c: [{agent: c}]
  trainer: [{framework: "fw:"}]
)";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int Shell(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

// A CA, the broker's certificate (SAN 127.0.0.1) and client certificates
// whose CN names the principal; "stranger" is signed by another CA.
bool MakeCertificates(const std::string& dir) {
  std::ofstream(dir + "/server.ext") << "subjectAltName=IP:127.0.0.1,DNS:localhost\n";
  std::string script = "set -e; cd '" + dir + "'; "
      "key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out $1.key 2>/dev/null; }; "
      "ca() { key $1; openssl req -x509 -new -key $1.key -subj /CN=$1 -days 2 -out $1.crt; }; "
      "leaf() { key $1; openssl req -new -key $1.key -subj /CN=$1 -out $1.csr; "
      "  openssl x509 -req -in $1.csr -CA $2.crt -CAkey $2.key -CAcreateserial -days 2 $3 -out $1.crt 2>/dev/null; }; "
      "ca ca; ca other-ca; leaf server ca '-extfile server.ext'; "
      "for p in root lead-ml agent-a; do leaf $p ca; done; leaf stranger other-ca";
  std::ofstream(dir + "/make-certs.sh") << script << "\n";
  return Shell("sh '" + dir + "/make-certs.sh' >/dev/null 2>&1") == 0;
}

class AuthTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    ASSERT_TRUE(MakeCertificates(dir_->path())) << "openssl failed";
    std::ofstream(dir_->File("config.yaml")) << kConfig;
    std::ofstream(dir_->File("roles.yaml")) << kRoles;
    WriteTokens({{"sched-ml", "sched-token"}, {"agent-a", "agent-token"}, {"agent-c", "agent-c-token"},
                 {"trainer", "trainer-token"}, {"lead-ml", "old-token"}});
    server_ = new testing::ServerProcess(
        dir_->File("config.yaml"), dir_->File("t.db"),
        {"--tls-cert", dir_->File("server.crt"), "--tls-key", dir_->File("server.key"), "--client-ca",
         dir_->File("ca.crt"), "--roles", dir_->File("roles.yaml"), "--tokens", dir_->File("tokens")});
    ASSERT_TRUE(server_->Start()) << server_->Stderr();
  }
  static void TearDownTestSuite() {
    delete server_;
    delete dir_;
  }

  static void WriteTokens(const std::vector<std::pair<std::string, std::string>>& tokens) {
    std::ofstream out(dir_->File("tokens"));
    for (const auto& [principal, token] : tokens) out << principal << " " << service::auth::Sha256Hex(token) << "\n";
  }

  // A TLS channel trusting the test CA, as principal `cert` (a client
  // certificate) and/or with `token`.
  static std::shared_ptr<grpc::Channel> Channel(const std::string& cert, const std::string& token = "",
                                                const std::string& ca = "ca") {
    cli::ChannelSecurity security;
    security.tls = true;
    if (!ca.empty()) security.ca = dir_->File(ca + ".crt");
    if (!cert.empty()) {
      security.cert = dir_->File(cert + ".crt");
      security.key = dir_->File(cert + ".key");
    }
    security.token = token;
    auto channel = cli::MakeBrokerChannel(server_->address(), security, grpc::ChannelArguments());
    EXPECT_TRUE(channel.ok()) << channel.status();
    return *channel;
  }

  static grpc::Status Ping(const std::shared_ptr<grpc::Channel>& channel) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::PingResponse resp;
    return v1::DiagnosticsService::NewStub(channel)->Ping(&ctx, v1::PingRequest(), &resp);
  }

  static grpc::Status Admit(const std::shared_ptr<grpc::Channel>& channel, const std::string& job,
                            const std::string& team, const std::string& cluster) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::AdmitRequest req;
    req.mutable_job()->set_job(job);
    req.mutable_job()->set_team(team);
    req.mutable_job()->set_cluster(cluster);
    (*req.mutable_job()->mutable_per_replica())["gpu"] = 1;
    v1::AdmitResponse resp;
    return v1::AdmissionService::NewStub(channel)->Admit(&ctx, req, &resp);
  }

  static grpc::Status Release(const std::shared_ptr<grpc::Channel>& channel, const std::string& job) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::ReleaseRequest req;
    req.set_job(job);
    v1::ReleaseResponse resp;
    return v1::AdmissionService::NewStub(channel)->Release(&ctx, req, &resp);
  }

  static grpc::Status GetTeam(const std::shared_ptr<grpc::Channel>& channel, const std::string& team) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::GetTeamRequest req;
    req.set_team(team);
    v1::TeamInfo resp;
    return v1::QuotaService::NewStub(channel)->GetTeam(&ctx, req, &resp);
  }

  static grpc::Status ListJobs(const std::shared_ptr<grpc::Channel>& channel, const std::string& team) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::ListJobsRequest req;
    req.set_team(team);
    v1::ListJobsResponse resp;
    return v1::AdmissionService::NewStub(channel)->ListJobs(&ctx, req, &resp);
  }

  static grpc::Status ApplyConfig(const std::shared_ptr<grpc::Channel>& channel) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::ApplyConfigRequest req;
    req.set_dry_run(true);
    EXPECT_TRUE(api::LoadYamlFile(dir_->File("config.yaml"), req.mutable_config()).ok());
    v1::ApplyConfigResponse resp;
    return v1::QuotaService::NewStub(channel)->ApplyConfig(&ctx, req, &resp);
  }

  static grpc::Status AckResize(const std::shared_ptr<grpc::Channel>& channel, const std::string& job) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::AckResizeRequest req;
    req.set_job(job);
    req.set_epoch(1);
    req.set_replicas(1);
    v1::AckResizeResponse resp;
    return v1::ElasticService::NewStub(channel)->AckResize(&ctx, req, &resp);
  }

  // Says hello as the agent of `cluster` with an empty view; returns how the
  // stream ended, or OK once the broker answered `synced`.
  static grpc::Status AgentHello(const std::shared_ptr<grpc::Channel>& channel, const std::string& cluster) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    auto stub = v1::AgentService::NewStub(channel);
    auto stream = stub->Connect(&ctx);
    v1::AgentMessage hello;
    hello.mutable_hello()->set_cluster(cluster);
    hello.mutable_hello()->set_agent_id("e2e");
    v1::AgentMessage view;
    view.mutable_view();
    stream->Write(hello);
    stream->Write(view);
    v1::BrokerAction action;
    while (stream->Read(&action)) {
      if (action.has_synced()) {
        ctx.TryCancel();
        stream->Finish();
        return grpc::Status::OK;
      }
    }
    return stream->Finish();
  }

  static testing::TempDir* dir_;
  static testing::ServerProcess* server_;
};

testing::TempDir* AuthTest::dir_ = nullptr;
testing::ServerProcess* AuthTest::server_ = nullptr;

TEST_F(AuthTest, TlsWithTheCaWorksAndClientsThatCannotVerifyAreRefused) {
  EXPECT_TRUE(Ping(Channel("root")).ok());
  // Plaintext to a TLS broker: no handshake, no call.
  auto plaintext = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
  EXPECT_EQ(Ping(plaintext).error_code(), grpc::StatusCode::UNAVAILABLE);
  // Without the test CA the client cannot verify the broker (system roots).
  EXPECT_EQ(Ping(Channel("root", "", "")).error_code(), grpc::StatusCode::UNAVAILABLE);
  // A client certificate from another CA fails the handshake.
  EXPECT_EQ(Ping(Channel("stranger")).error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST_F(AuthTest, NoIdentityOrAnUnknownTokenIsUnauthenticated) {
  grpc::Status s = Ping(Channel(""));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(s.error_message(), HasSubstr("no identity"));
  s = Ping(Channel("", "made-up-token"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(s.error_message(), HasSubstr("unknown or revoked bearer token"));
  // A bad token is refused even beside a good certificate.
  EXPECT_EQ(Ping(Channel("root", "made-up-token")).error_code(), grpc::StatusCode::UNAUTHENTICATED);
}

TEST_F(AuthTest, AdminByCertificateMayDoEverything) {
  auto root = Channel("root");
  EXPECT_TRUE(Admit(root, "admin:1", "web", "b").ok());
  EXPECT_TRUE(ListJobs(root, "").ok());
  EXPECT_TRUE(ApplyConfig(root).ok());
  EXPECT_TRUE(Release(root, "admin:1").ok());
}

TEST_F(AuthTest, ViewerByCertificateReadsItsTeamOnly) {
  auto lead = Channel("lead-ml");
  EXPECT_TRUE(GetTeam(lead, "ml").ok());
  EXPECT_TRUE(ListJobs(lead, "ml").ok());
  grpc::Status s = GetTeam(lead, "web");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(s.error_message(), HasSubstr("viewer or scheduler of team 'web'"));
  s = Admit(lead, "lead:1", "ml", "a");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(s.error_message(), HasSubstr("principal 'lead-ml' may not call /tidegate.v1.AdmissionService/Admit"));
  EXPECT_THAT(s.error_message(), HasSubstr("scheduler of team 'ml'"));
  s = ApplyConfig(lead);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(s.error_message(), HasSubstr("needs role admin"));
}

TEST_F(AuthTest, SchedulerByTokenAdmitsAndReleasesItsTeamsJobsOnly) {
  auto sched = Channel("", "sched-token");
  EXPECT_TRUE(Admit(sched, "sched:1", "ml", "b").ok());
  EXPECT_EQ(Admit(sched, "sched:2", "web", "b").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(ListJobs(sched, "").error_code(), grpc::StatusCode::PERMISSION_DENIED);  // every team
  EXPECT_TRUE(ListJobs(sched, "ml").ok());
  // Another team's job cannot be released, whoever admitted it.
  ASSERT_TRUE(Admit(Channel("root"), "web:9", "web", "b").ok());
  EXPECT_EQ(Release(sched, "web:9").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(Release(sched, "sched:1").ok());
  EXPECT_EQ(ApplyConfig(sched).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(AgentHello(sched, "c").error_code(), grpc::StatusCode::PERMISSION_DENIED);
}

TEST_F(AuthTest, AgentActsForItsOwnClusterOnly) {
  // By certificate and by token alike.
  for (const auto& agent : {Channel("agent-a"), Channel("", "agent-token")}) {
    EXPECT_TRUE(Admit(agent, "agent:" + std::to_string(reinterpret_cast<uintptr_t>(agent.get())), "web", "a").ok());
    EXPECT_EQ(Admit(agent, "agent:x", "web", "b").error_code(), grpc::StatusCode::PERMISSION_DENIED);
    grpc::Status s = AgentHello(agent, "b");
    EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
    EXPECT_THAT(s.error_message(), HasSubstr("agent of cluster 'b'"));
    EXPECT_EQ(GetTeam(agent, "web").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  }
  // Cluster c's own agent gets its stream (c has no jobs to lose).
  EXPECT_TRUE(AgentHello(Channel("", "agent-c-token"), "c").ok());
}

TEST_F(AuthTest, FrameworkAcksOnlyItsJobs) {
  auto trainer = Channel("", "trainer-token");
  // Allowed through; the broker then says the job does not exist.
  EXPECT_EQ(AckResize(trainer, "fw:bert").error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(AckResize(trainer, "other:bert").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Admit(trainer, "fw:1", "ml", "a").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(AckResize(Channel("lead-ml"), "fw:bert").error_code(), grpc::StatusCode::PERMISSION_DENIED);
}

TEST_F(AuthTest, SighupReloadsTokensRevokingTheOldOnes) {
  auto old_channel = Channel("", "old-token");
  ASSERT_TRUE(GetTeam(old_channel, "ml").ok());
  WriteTokens({{"sched-ml", "sched-token"}, {"agent-a", "agent-token"}, {"agent-c", "agent-c-token"},
               {"trainer", "trainer-token"}, {"lead-ml", "new-token"}});
  ASSERT_EQ(kill(server_->pid(), SIGHUP), 0);
  auto new_channel = Channel("", "new-token");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!GetTeam(new_channel, "ml").ok() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(GetTeam(new_channel, "ml").ok()) << server_->Stderr();
  grpc::Status s = GetTeam(old_channel, "ml");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(s.error_message(), HasSubstr("revoked"));
  EXPECT_THAT(server_->Stderr(), HasSubstr("SIGHUP: roles and tokens reloaded"));
}

TEST_F(AuthTest, TheCliConnectsWithTlsFlagsAndTokenEnvironment) {
  const std::string bin = testing::ServerProcess::BinDir() + "/tidegate";
  const std::string out = dir_->File("cli.out");
  const std::string tls = " --server " + server_->address() + " --ca " + dir_->File("ca.crt");
  EXPECT_EQ(Shell(bin + tls + " --cert " + dir_->File("root.crt") + " --key " + dir_->File("root.key") +
                  " teams >" + out + " 2>&1"), 0) << ReadFile(out);
  EXPECT_THAT(ReadFile(out), HasSubstr("web"));
  // A viewer of ml asking for every team's jobs: refused, exit 6 naming the role.
  EXPECT_EQ(Shell("TIDEGATE_TOKEN=new-token TIDEGATE_CA=" + dir_->File("ca.crt") + " " + bin + " --server " +
                  server_->address() + " jobs >" + out + " 2>&1"), 6) << ReadFile(out);
  EXPECT_THAT(ReadFile(out), HasSubstr("PERMISSION_DENIED"));
  // Without the CA: the broker cannot be verified.
  EXPECT_EQ(Shell(bin + " --server " + server_->address() + " --tls teams >" + out + " 2>&1"), 5) << ReadFile(out);
  // The operator's helper prints the tokens-file line.
  EXPECT_EQ(Shell("echo sched-token | " + bin + " auth hash-token sched-ml >" + out), 0);
  EXPECT_EQ(ReadFile(out), "sched-ml " + service::auth::Sha256Hex("sched-token") + "\n");
}

TEST_F(AuthTest, TheJournalRecordsWhoAskedAndReplayIgnoresIt) {
  ASSERT_TRUE(Admit(Channel("", "sched-token"), "audit:1", "ml", "b").ok());
  ASSERT_TRUE(Release(Channel("root"), "audit:1").ok());
  const std::string bin = testing::ServerProcess::BinDir() + "/tidegate";
  const std::string out = dir_->File("audit.out");
  ASSERT_EQ(Shell(bin + " audit --db " + dir_->File("t.db") + " --job audit:1 -o json >" + out), 0);
  const std::string json = ReadFile(out);
  EXPECT_THAT(json, HasSubstr(R"("kind":"submit","peer":"ipv4:127.0.0.1:)"));
  EXPECT_THAT(json, HasSubstr(R"("principal":"sched-ml")"));
  EXPECT_THAT(json, HasSubstr(R"("kind":"finish")"));
  EXPECT_THAT(json, HasSubstr(R"("principal":"root")"));
  // Replaying the journal (origins included) reproduces the stored state.
  EXPECT_EQ(Shell(bin + " ledger verify --db " + dir_->File("t.db") + " >" + out + " 2>&1"), 0) << ReadFile(out);
}

TEST(AuthSafeDefaultsTest, NetworkListenWithoutTlsAndRolesIsRefused) {
  testing::TempDir dir;
  std::ofstream(dir.File("config.yaml")) << kConfig;
  const std::string base = testing::ServerProcess::BinDir() + "/tidegated --config " + dir.File("config.yaml") +
                           " --db " + dir.File("t.db") + " --init --listen 0.0.0.0:0 2>" + dir.File("err");
  EXPECT_EQ(Shell(base), 2);
  EXPECT_THAT(ReadFile(dir.File("err")), HasSubstr("--insecure"));
  EXPECT_THAT(ReadFile(dir.File("err")), HasSubstr("'0.0.0.0:0' is reachable from the network"));
  // A roles file without TLS is not enough either.
  std::ofstream(dir.File("roles.yaml")) << kRoles;
  EXPECT_EQ(Shell(base + " --roles " + dir.File("roles.yaml")), 2);
  EXPECT_THAT(ReadFile(dir.File("err")), HasSubstr("TLS is off"));
}

}  // namespace
}  // namespace tidegate
