// The HTTP endpoint of a real tidegated with TLS, roles and bearer tokens
// (docs/observability.md, docs/security.md): HTTPS with the broker's
// certificate, the same principals and roles as gRPC, the probes open to
// all, and a network address refused without TLS and roles.
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "tests/support/server_process.h"

namespace tidegate {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kConfig[] = R"(
clusters:
  - {name: a, capacity: {gpu: 8}}
teams:
  - {name: red, quota: {gpu: {guaranteed: 4}}}
  - {name: blue, quota: {gpu: {guaranteed: 4}}}
)";

constexpr char kRoles[] = R"(
principals:
  lead-red: [{viewer: [red]}]
  monitoring: [{viewer: "*"}]
  nobody: []
)";

int Shell(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

class HttpAuth : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    const std::string source = testing::SourceDir();
    ASSERT_EQ(Shell("cd " + dir_->path() + " && sh " + source + "/deploy/security/issue-certs.sh 127.0.0.1 >/dev/null 2>&1"), 0);
    std::ofstream(dir_->File("tidegate.yaml")) << kConfig;
    std::ofstream(dir_->File("roles.yaml")) << kRoles;
    const std::string tokens = dir_->File("tokens");
    for (const char* principal : {"lead-red", "monitoring", "nobody"}) {
      ASSERT_EQ(Shell("printf '%s %s\\n' " + std::string(principal) + " $(printf %s " + principal +
                      "-token | sha256sum | cut -d' ' -f1) >> " + tokens),
                0);
    }
    broker_ = new testing::ServerProcess(
        dir_->File("tidegate.yaml"), dir_->File("tidegate.db"),
        {"--tls-cert", dir_->File("broker.crt"), "--tls-key", dir_->File("broker.key"), "--roles",
         dir_->File("roles.yaml"), "--tokens", tokens, "--http-listen", "127.0.0.1:0"});
    ASSERT_TRUE(broker_->Start()) << broker_->Stderr();
    port_ = broker_->HttpPort();
    ASSERT_GT(port_, 0) << broker_->Stderr();
    ASSERT_THAT(broker_->Stderr(), HasSubstr("(HTTPS)"));
  }
  static void TearDownTestSuite() {
    delete broker_;
    delete dir_;
  }

  // GET over HTTPS, verifying the broker against the test CA; `token` as a
  // bearer header unless empty.
  static httplib::Result Get(const std::string& path, const std::string& token = "",
                             const httplib::Headers& extra = {}) {
    httplib::SSLClient client("127.0.0.1", port_);
    client.set_ca_cert_path(dir_->File("ca.crt").c_str());
    client.enable_server_certificate_verification(true);
    httplib::Headers headers = extra;
    if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
    return client.Get(path.c_str(), headers);
  }
  static int Status(const std::string& path, const std::string& token = "") {
    auto res = Get(path, token);
    return res ? res->status : -static_cast<int>(res.error());
  }

  static testing::TempDir* dir_;
  static testing::ServerProcess* broker_;
  static int port_;
};
testing::TempDir* HttpAuth::dir_ = nullptr;
testing::ServerProcess* HttpAuth::broker_ = nullptr;
int HttpAuth::port_ = 0;

TEST_F(HttpAuth, ProbesAnswerAnyoneButTeamDataNeedsAToken) {
  EXPECT_EQ(Status("/healthz"), 200);
  EXPECT_EQ(Status("/readyz"), 200);
  auto res = Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
  EXPECT_EQ(res->get_header_value("WWW-Authenticate"), "Bearer realm=\"tidegate\"");
  EXPECT_THAT(res->body, Not(HasSubstr("tidegate_team")));
  EXPECT_EQ(Status("/"), 401);
  EXPECT_EQ(Status("/team?name=red"), 401);
  EXPECT_EQ(Status("/team?name=red", "forged-token"), 401);
}

TEST_F(HttpAuth, AViewerSeesItsTeamsOnlyAndMetricsNeedEveryTeam) {
  EXPECT_EQ(Status("/team?name=red", "lead-red-token"), 200);
  auto blue = Get("/team?name=blue", "lead-red-token");
  ASSERT_TRUE(blue);
  EXPECT_EQ(blue->status, 403);
  EXPECT_THAT(blue->body, HasSubstr("lead-red"));  // who was refused, as gRPC says it
  EXPECT_EQ(Status("/api/watch?view=team&name=blue&since=x", "lead-red-token"), 403);
  EXPECT_EQ(Status("/team/forecast.svg?name=blue", "lead-red-token"), 403);

  auto tree = Get("/", "lead-red-token");
  ASSERT_TRUE(tree);
  EXPECT_EQ(tree->status, 200);
  EXPECT_THAT(tree->body, HasSubstr("<a href=\"/team?name=red\">red</a>"));
  EXPECT_THAT(tree->body, Not(HasSubstr("name=blue")));

  EXPECT_EQ(Status("/metrics", "lead-red-token"), 403);  // it would show blue's figures
  EXPECT_EQ(Status("/metrics", "nobody-token"), 403);
  auto metrics = Get("/metrics", "monitoring-token");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_THAT(metrics->body, HasSubstr("tidegate_team_guaranteed{team=\"blue\",resource=\"gpu\"} 4"));
}

TEST_F(HttpAuth, ABrowserSignsInOnceAndItsCookieStandsForTheToken) {
  httplib::SSLClient client("127.0.0.1", port_);
  client.set_ca_cert_path(dir_->File("ca.crt").c_str());
  client.enable_server_certificate_verification(true);
  auto signed_in = client.Post("/login", "token=lead-red-token", "application/x-www-form-urlencoded");
  ASSERT_TRUE(signed_in);
  EXPECT_EQ(signed_in->status, 303);
  const std::string cookie = signed_in->get_header_value("Set-Cookie");
  EXPECT_THAT(cookie, HasSubstr("tidegate_token=lead-red-token"));
  EXPECT_THAT(cookie, HasSubstr("HttpOnly"));
  EXPECT_THAT(cookie, HasSubstr("Secure"));  // HTTPS
  auto page = Get("/team?name=red", "", {{"Cookie", "tidegate_token=lead-red-token"}});
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(Get("/team?name=blue", "", {{"Cookie", "tidegate_token=lead-red-token"}})->status, 403);
}

TEST_F(HttpAuth, ANetworkAddressWithoutTlsAndRolesIsRefused) {
  testing::ServerProcess open(dir_->File("tidegate.yaml"), dir_->File("other.db"), {"--http-listen", "0.0.0.0:0"});
  EXPECT_FALSE(open.Start());
  EXPECT_EQ(open.exit_code(), 2);
  EXPECT_THAT(open.Stderr(), HasSubstr("--http-listen '0.0.0.0:0' is reachable from the network, but TLS is off"));
  testing::ServerProcess malformed(dir_->File("tidegate.yaml"), dir_->File("other.db"), {"--http-listen", "8080"});
  EXPECT_FALSE(malformed.Start());
  EXPECT_EQ(malformed.exit_code(), 2);
  EXPECT_THAT(malformed.Stderr(), HasSubstr("--http-listen '8080' is not HOST:PORT"));
}

}  // namespace
}  // namespace tidegate
