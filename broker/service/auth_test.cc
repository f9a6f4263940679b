// The role table (auth.h) and the roles/tokens files (auth_files.h).
#include <fstream>

#include "broker/service/auth.h"
#include "broker/service/auth_files.h"
#include "gtest/gtest.h"

namespace tidegate::service::auth {
namespace {

constexpr char kRoles[] = R"(
principals:
  root: [admin]
  sched: [{scheduler: [ml, vision]}]
  agent-a: [{agent: a}]
  lead: [{viewer: "*"}]
  lead-ml: [{viewer: ml}]
  trainer: [{framework: "k8s:ml/"}]
  nobody: []
)";

class RoleTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto parsed = ParseRoles(kRoles, "roles.yaml");
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    roles_ = *parsed;
  }
  bool Allowed(const std::string& who, const std::string& method, CallScope scope) {
    return Authorize(who, roles_[who], "/tidegate.v1." + method, scope).ok();
  }
  static CallScope Job(std::string team, std::string cluster, std::string job) {
    return CallScope{std::move(team), std::move(cluster), std::move(job)};
  }
  std::map<std::string, std::vector<Role>> roles_;
};

TEST_F(RoleTableTest, EveryRpcOfTheApiHasARule) {
  for (const char* m :
       {"AdmissionService/Admit", "AdmissionService/Release", "AdmissionService/WaitAdmission",
        "AdmissionService/ReportCheckpoint", "AdmissionService/ListJobs", "AdmissionService/GetJob",
        "QuotaService/GetTeam", "QuotaService/ListTeams", "QuotaService/ListLoans", "QuotaService/GetUsage",
        "QuotaService/ApplyConfig", "ForecastService/Forecast", "ForecastService/RecommendReservations",
        "ForecastService/ProposeTide", "ElasticService/WatchResizes", "ElasticService/AckResize",
        "AgentService/Connect", "DiagnosticsService/Ping"}) {
    EXPECT_NE(RuleFor(std::string("/tidegate.v1.") + m), nullptr) << m;
  }
}

TEST_F(RoleTableTest, AdminMayDoEverythingAndOnlyAdminAppliesConfig) {
  for (const auto& rule : AllRules()) EXPECT_TRUE(Authorize("root", roles_["root"], rule.method, {}).ok());
  for (const char* who : {"sched", "agent-a", "lead", "lead-ml", "trainer", "nobody"}) {
    EXPECT_FALSE(Allowed(who, "QuotaService/ApplyConfig", {})) << who;
  }
  // An RPC without a rule is admin-only.
  EXPECT_TRUE(Authorize("root", roles_["root"], "/tidegate.v1.New/Thing", {}).ok());
  EXPECT_FALSE(Authorize("lead", roles_["lead"], "/tidegate.v1.New/Thing", {}).ok());
}

TEST_F(RoleTableTest, SchedulerWritesAndReadsItsTeamsOnly) {
  EXPECT_TRUE(Allowed("sched", "AdmissionService/Admit", Job("ml", "a", "j")));
  EXPECT_TRUE(Allowed("sched", "AdmissionService/Release", Job("vision", "b", "j")));
  EXPECT_TRUE(Allowed("sched", "AdmissionService/ReportCheckpoint", Job("ml", "a", "j")));
  EXPECT_TRUE(Allowed("sched", "AdmissionService/ListJobs", Job("ml", "", "")));
  EXPECT_FALSE(Allowed("sched", "AdmissionService/Admit", Job("web", "a", "j")));
  EXPECT_FALSE(Allowed("sched", "AdmissionService/ListJobs", Job("", "", "")));  // all teams
  EXPECT_FALSE(Allowed("sched", "ElasticService/AckResize", Job("ml", "a", "j")));
  EXPECT_FALSE(Allowed("sched", "AgentService/Connect", {}));
}

TEST_F(RoleTableTest, AgentActsInItsClusterOnly) {
  EXPECT_TRUE(Allowed("agent-a", "AgentService/Connect", {}));
  EXPECT_TRUE(MayActAsAgentOf(roles_["agent-a"], "a"));
  EXPECT_FALSE(MayActAsAgentOf(roles_["agent-a"], "b"));
  EXPECT_TRUE(MayActAsAgentOf(roles_["root"], "b"));
  EXPECT_TRUE(Allowed("agent-a", "AdmissionService/Admit", Job("web", "a", "j")));
  EXPECT_FALSE(Allowed("agent-a", "AdmissionService/Admit", Job("web", "b", "j")));
  EXPECT_TRUE(Allowed("agent-a", "AdmissionService/GetJob", Job("web", "a", "j")));
  EXPECT_FALSE(Allowed("agent-a", "QuotaService/GetTeam", Job("web", "", "")));
  // It lists the jobs of its own cluster, of every team; nothing wider.
  EXPECT_TRUE(Allowed("agent-a", "AdmissionService/ListJobs", Job("", "a", "")));
  EXPECT_FALSE(Allowed("agent-a", "AdmissionService/ListJobs", Job("", "b", "")));
  EXPECT_FALSE(Allowed("agent-a", "AdmissionService/ListJobs", Job("", "", "")));
}

TEST_F(RoleTableTest, ViewerOnlyReads) {
  EXPECT_TRUE(Allowed("lead", "AdmissionService/ListJobs", Job("", "", "")));
  EXPECT_TRUE(Allowed("lead", "QuotaService/GetUsage", Job("web", "", "")));
  EXPECT_FALSE(Allowed("lead", "AdmissionService/Admit", Job("web", "a", "j")));
  EXPECT_FALSE(Allowed("lead", "AdmissionService/Release", Job("web", "a", "j")));
  EXPECT_TRUE(Allowed("lead-ml", "QuotaService/GetTeam", Job("ml", "", "")));
  EXPECT_FALSE(Allowed("lead-ml", "QuotaService/GetTeam", Job("web", "", "")));
  EXPECT_FALSE(Allowed("lead-ml", "QuotaService/ListLoans", Job("", "", "")));
}

TEST_F(RoleTableTest, FrameworkHandlesItsJobsResizes) {
  EXPECT_TRUE(Allowed("trainer", "ElasticService/WatchResizes", Job("", "", "k8s:ml/bert")));
  EXPECT_TRUE(Allowed("trainer", "ElasticService/AckResize", Job("ml", "a", "k8s:ml/bert")));
  EXPECT_TRUE(Allowed("trainer", "AdmissionService/ReportCheckpoint", Job("ml", "a", "k8s:ml/bert")));
  EXPECT_FALSE(Allowed("trainer", "ElasticService/AckResize", Job("ml", "a", "k8s:web/x")));
  EXPECT_FALSE(Allowed("trainer", "AdmissionService/Release", Job("ml", "a", "k8s:ml/bert")));
}

TEST_F(RoleTableTest, DenialNamesTheMissingRole) {
  absl::Status s = Authorize("lead-ml", roles_["lead-ml"], "/tidegate.v1.AdmissionService/Admit", Job("ml", "a", "j"));
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(s.message().find("scheduler of team 'ml'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("'lead-ml'"), std::string::npos) << s.message();
  s = Authorize("nobody", roles_["nobody"], "/tidegate.v1.QuotaService/ApplyConfig", {});
  EXPECT_NE(s.message().find("needs role admin (it has no roles)"), std::string::npos) << s.message();
}

TEST(RolesFileTest, BadRolesAreRefusedNamingThePrincipal) {
  auto bad = ParseRoles("principals:\n  x: [{owner: ml}]\n", "r.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("principals.x: unknown role 'owner'"), std::string::npos);
  bad = ParseRoles("principals:\n  x: [scheduler]\n", "r.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("role 'scheduler' needs a value"), std::string::npos);
  bad = ParseRoles("teams: []\n", "r.yaml");
  EXPECT_FALSE(bad.ok());
}

TEST(TokensFileTest, HashesAreLoadedAndPlainTokensRefused) {
  const std::string dir = ::testing::TempDir();
  std::ofstream(dir + "/roles.yaml") << "principals:\n  ci: [admin]\n";
  std::ofstream(dir + "/tokens") << "# ci's token\nci " << Sha256Hex("s3cret") << "\n";
  auto policy = LoadPolicy(dir + "/roles.yaml", dir + "/tokens");
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_EQ(policy->token_principal.at(Sha256Hex("s3cret")), "ci");
  std::ofstream(dir + "/tokens") << "ci s3cret\n";
  policy = LoadPolicy(dir + "/roles.yaml", dir + "/tokens");
  ASSERT_FALSE(policy.ok());
  EXPECT_NE(policy.status().message().find("tokens:1: expected `PRINCIPAL SHA256HEX`"), std::string::npos)
      << policy.status().message();
}

}  // namespace
}  // namespace tidegate::service::auth
