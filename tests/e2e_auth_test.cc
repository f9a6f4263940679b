// Who may do what, end to end (docs/security.md); the broker and its
// certificates are in e2e_auth_fixture.h.
#include "tests/e2e_auth_fixture.h"

#include "gmock/gmock.h"

namespace tidegate {

using ::testing::HasSubstr;

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
  // The ended job is still its team's: the scheduler may read it and
  // release it again (a retry), as an admin may.
  EXPECT_TRUE(Release(sched, "sched:1").ok());
  grpc::ClientContext ctx;
  v1::GetJobRequest get;
  get.set_job("sched:1");
  v1::JobInfo ended;
  EXPECT_TRUE(v1::AdmissionService::NewStub(sched)->GetJob(&ctx, get, &ended).ok());
  EXPECT_EQ(ended.state(), v1::JOB_STATE_ENDED);
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
    // tidegate-agent lists its cluster's jobs, and only those.
    for (const auto& [cluster, code] : {std::pair{"a", grpc::StatusCode::OK},
                                        std::pair{"b", grpc::StatusCode::PERMISSION_DENIED},
                                        std::pair{"", grpc::StatusCode::PERMISSION_DENIED}}) {
      grpc::ClientContext ctx;
      v1::ListJobsRequest req;
      req.set_cluster(cluster);
      v1::ListJobsResponse resp;
      EXPECT_EQ(v1::AdmissionService::NewStub(agent)->ListJobs(&ctx, req, &resp).error_code(), code) << cluster;
      for (const auto& j : resp.jobs()) EXPECT_EQ(j.cluster(), "a");
    }
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
               {"trainer", "trainer-token"}, {"lead-ml", "new-token"}, {"nobody", "nobody-token"}});
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
  // A viewer of ml asking for every team's jobs: refused, exit 7 naming the role.
  EXPECT_EQ(Shell("TIDEGATE_TOKEN=new-token TIDEGATE_CA=" + dir_->File("ca.crt") + " " + bin + " --server " +
                  server_->address() + " jobs >" + out + " 2>&1"), 7) << ReadFile(out);
  EXPECT_THAT(ReadFile(out), HasSubstr("PERMISSION_DENIED"));
  // Without the CA: the broker cannot be verified.
  EXPECT_EQ(Shell(bin + " --server " + server_->address() + " --tls teams >" + out + " 2>&1"), 5) << ReadFile(out);
  // The operator's helper prints the tokens-file line.
  EXPECT_EQ(Shell("echo sched-token | " + bin + " auth hash-token sched-ml >" + out), 0);
  EXPECT_EQ(ReadFile(out), "sched-ml " + service::auth::Sha256Hex("sched-token") + "\n");
}

TEST_F(AuthTest, HistoryShowsWhoAskedAndReplayIgnoresIt) {
  ASSERT_TRUE(Admit(Channel("", "sched-token"), "audit:1", "ml", "b").ok());
  ASSERT_TRUE(Release(Channel("root"), "audit:1").ok());
  const std::string bin = testing::ServerProcess::BinDir() + "/tidegate";
  const std::string out = dir_->File("history.out");
  const std::string history = bin + " history --db " + dir_->File("t.db");
  ASSERT_EQ(Shell(history + " --job audit:1 -o json >" + out), 0) << ReadFile(out);
  std::string json = ReadFile(out);
  EXPECT_THAT(json, HasSubstr(R"("journal_kind":"submit","kind":"admit","others_job":false,"owner":"sched-ml","peer":"ipv4:127.0.0.1:)"));
  EXPECT_THAT(json, HasSubstr(R"("principal":"sched-ml")"));
  // A release of another principal's job names the job's owner.
  EXPECT_THAT(json, HasSubstr(R"("journal_kind":"finish","kind":"release","others_job":true,"owner":"sched-ml")"));
  EXPECT_THAT(json, HasSubstr(R"("principal":"root","seq")"));
  // `audit` is the same command; --kind takes the journal's name too.
  ASSERT_EQ(Shell(bin + " audit --db " + dir_->File("t.db") + " --kind finish --team ml >" + out), 0);
  EXPECT_THAT(ReadFile(out), HasSubstr("audit:1 (admitted by sched-ml)"));
  EXPECT_EQ(Shell(history + " --kind nonsense >" + out + " 2>&1"), 2);
  EXPECT_THAT(ReadFile(out), HasSubstr("--kind 'nonsense' is no kind; one of admit, release,"));
  // Replaying the journal (origins included) reproduces the stored state.
  EXPECT_EQ(Shell(bin + " ledger verify --db " + dir_->File("t.db") + " >" + out + " 2>&1"), 0) << ReadFile(out);
}

TEST_F(AuthTest, HistoryShowsTheAdminWhoChangedTheConfigThroughTheCli) {
  const std::string bin = testing::ServerProcess::BinDir() + "/tidegate";
  const std::string out = dir_->File("config-history.out");
  std::string changed = kConfig;
  changed.replace(changed.find("name: web, quota: {gpu: {guaranteed: 16}}"),
                  std::string("name: web, quota: {gpu: {guaranteed: 16}}").size(),
                  "name: web, quota: {gpu: {guaranteed: 15}}");
  std::ofstream(dir_->File("changed.yaml")) << changed;
  ASSERT_EQ(Shell(bin + " --server " + server_->address() + " --ca " + dir_->File("ca.crt") + " --cert " +
                  dir_->File("root.crt") + " --key " + dir_->File("root.key") + " config apply " +
                  dir_->File("changed.yaml") + " >" + out + " 2>&1"), 0) << ReadFile(out);
  ASSERT_EQ(Shell(bin + " history --db " + dir_->File("t.db") + " --kind config --team web >" + out), 0);
  const std::string table = ReadFile(out);
  EXPECT_THAT(table, HasSubstr("config"));
  EXPECT_THAT(table, HasSubstr("root"));
  EXPECT_THAT(table, HasSubstr("web gpu guaranteed 16 -> 15"));
  // ml's history has no config change naming it.
  ASSERT_EQ(Shell(bin + " history --db " + dir_->File("t.db") + " --kind config --team ml -o json >" + out), 0);
  EXPECT_THAT(ReadFile(out), ::testing::Not(HasSubstr("guaranteed 16 -> 15")));
}

TEST_F(AuthTest, AnAgentStreamsCommandsAreAttributedToTheAgent) {
  // Cluster c's agent reports a new capacity: a journalled set_capacity.
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  auto stream = v1::AgentService::NewStub(Channel("", "agent-c-token"))->Connect(&ctx);
  v1::AgentMessage hello, view, capacity;
  hello.mutable_hello()->set_cluster("c");
  hello.mutable_hello()->set_agent_id("e2e");
  view.mutable_view();
  (*capacity.mutable_capacity()->mutable_capacity())["gpu"] = 12;
  ASSERT_TRUE(stream->Write(hello) && stream->Write(view) && stream->Write(capacity));
  const std::string bin = testing::ServerProcess::BinDir() + "/tidegate";
  const std::string out = dir_->File("agent-history.out");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::string json;
  while (std::chrono::steady_clock::now() < deadline) {
    ASSERT_EQ(Shell(bin + " history --db " + dir_->File("t.db") + " --kind capacity -o json >" + out), 0);
    json = ReadFile(out);
    if (json.find("capacity of c") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_THAT(json, HasSubstr(R"("about":"capacity of c")"));
  EXPECT_THAT(json, HasSubstr(R"("principal":"agent-c")"));
  ctx.TryCancel();
  stream->Finish();
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

}  // namespace tidegate
