// The fixture of the end-to-end auth tests (e2e_auth_test.cc,
// e2e_auth_rpc_table_test.cc, one binary and one broker): one real tidegated
// with TLS, client certificates from a test CA, bearer tokens and a roles
// file, all made at test time with `openssl`; clients connect through
// cli/auth_channel.h as `tidegate`, the agent and the load generator do.
#ifndef TIDEGATE_TESTS_E2E_AUTH_FIXTURE_H_
#define TIDEGATE_TESTS_E2E_AUTH_FIXTURE_H_

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "api/yaml_loader.h"
#include "broker/service/auth_files.h"
#include "cli/auth_channel.h"
#include "gtest/gtest.h"
#include "tests/support/server_process.h"
#include "tidegate/v1/agent.grpc.pb.h"
#include "tidegate/v1/service.grpc.pb.h"

namespace tidegate {

inline constexpr char kConfig[] = R"(
clusters:
  - {name: a, kind: kubernetes, capacity: {gpu: 16}}
  - {name: b, kind: kubernetes, capacity: {gpu: 16}}
  - {name: c, kind: kubernetes, capacity: {gpu: 16}}
teams:
  - {name: ml, quota: {gpu: {guaranteed: 16}}}
  - {name: web, quota: {gpu: {guaranteed: 16}}}
policy: {default_grace_s: 1, tick_s: 1, requeue_backoff_s: 0}
)";

inline constexpr char kRoles[] = R"(
principals:
  root: [admin]
  lead-ml: [{viewer: ml}]
  sched-ml: [{scheduler: [ml]}]
  agent-a: [{agent: a}]
  agent-c: [{agent: c}]
  trainer: [{framework: "fw:"}]
  nobody: []
)";

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline int Shell(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

// A CA, the broker's certificate (SAN 127.0.0.1) and client certificates
// whose CN names the principal; "stranger" is signed by another CA.
inline bool MakeCertificates(const std::string& dir) {
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
 public:
  static std::string File(const std::string& name) { return dir_->File(name); }

 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    ASSERT_TRUE(MakeCertificates(dir_->path())) << "openssl failed";
    std::ofstream(dir_->File("config.yaml")) << kConfig;
    std::ofstream(dir_->File("roles.yaml")) << kRoles;
    WriteTokens({{"sched-ml", "sched-token"}, {"agent-a", "agent-token"}, {"agent-c", "agent-c-token"},
                 {"trainer", "trainer-token"}, {"lead-ml", "old-token"}, {"nobody", "nobody-token"}});
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

}  // namespace tidegate

#endif  // TIDEGATE_TESTS_E2E_AUTH_FIXTURE_H_
