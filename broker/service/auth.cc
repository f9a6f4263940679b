#include "broker/service/auth.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace tidegate::service::auth {
namespace {

const std::vector<MethodRule>& Table() {
  static const auto* table = new std::vector<MethodRule>{
      {"/tidegate.v1.AdmissionService/Admit", Access::kJobWrite},
      {"/tidegate.v1.AdmissionService/Release", Access::kJobWrite},
      {"/tidegate.v1.AdmissionService/WaitAdmission", Access::kJobRead},
      {"/tidegate.v1.AdmissionService/ReportCheckpoint", Access::kCheckpoint},
      {"/tidegate.v1.AdmissionService/ListJobs", Access::kJobList},
      {"/tidegate.v1.AdmissionService/GetJob", Access::kJobRead},
      {"/tidegate.v1.QuotaService/GetTeam", Access::kTeamRead},
      {"/tidegate.v1.QuotaService/ListTeams", Access::kAnyRole},
      {"/tidegate.v1.QuotaService/ListLoans", Access::kTeamRead},
      {"/tidegate.v1.QuotaService/GetUsage", Access::kTeamRead},
      {"/tidegate.v1.QuotaService/ApplyConfig", Access::kAdmin},
      {"/tidegate.v1.ForecastService/Forecast", Access::kTeamRead},
      {"/tidegate.v1.ForecastService/RecommendReservations", Access::kTeamRead},
      {"/tidegate.v1.ForecastService/ProposeTide", Access::kTeamRead},
      {"/tidegate.v1.ElasticService/WatchResizes", Access::kElastic},
      {"/tidegate.v1.ElasticService/AckResize", Access::kElastic},
      {"/tidegate.v1.AgentService/Connect", Access::kAgentStream},
      {"/tidegate.v1.DiagnosticsService/Ping", Access::kAnyRole},
  };
  return *table;
}

// A team read without a team (all teams) needs all of them.
bool ReadsTeam(const Role& role, const std::string& team) {
  if (role.kind == RoleKind::kViewer && role.all_teams) return true;
  if (role.kind != RoleKind::kViewer && role.kind != RoleKind::kScheduler) return false;
  return !team.empty() && role.teams.count(team) > 0;
}

bool SchedulesTeam(const Role& role, const std::string& team) {
  return role.kind == RoleKind::kScheduler && !team.empty() && role.teams.count(team) > 0;
}

bool AgentOf(const Role& role, const std::string& cluster) {
  return role.kind == RoleKind::kAgent && !cluster.empty() && role.cluster == cluster;
}

bool FrameworkOf(const Role& role, const std::string& job) {
  return role.kind == RoleKind::kFramework && !job.empty() && absl::StartsWith(job, role.job_prefix);
}

bool Grants(const Role& role, Access access, const CallScope& scope) {
  if (role.kind == RoleKind::kAdmin) return true;
  switch (access) {
    case Access::kAdmin:
      return false;
    case Access::kAnyRole:
      return true;
    case Access::kTeamRead:
      return ReadsTeam(role, scope.team);
    case Access::kJobList:
      return ReadsTeam(role, scope.team) || AgentOf(role, scope.cluster);
    case Access::kJobRead:
      return ReadsTeam(role, scope.team) || AgentOf(role, scope.cluster) || FrameworkOf(role, scope.job);
    case Access::kJobWrite:
      return SchedulesTeam(role, scope.team) || AgentOf(role, scope.cluster);
    case Access::kCheckpoint:
      return SchedulesTeam(role, scope.team) || FrameworkOf(role, scope.job);
    case Access::kElastic:
      return FrameworkOf(role, scope.job);
    case Access::kAgentStream:
      return role.kind == RoleKind::kAgent;
  }
  return false;
}

std::string Quoted(const std::string& s) { return s.empty() ? "all" : absl::StrCat("'", s, "'"); }

// The roles that would allow the call, for the error message.
std::string Needed(Access access, const CallScope& scope) {
  const std::string team = absl::StrCat("team ", Quoted(scope.team));
  switch (access) {
    case Access::kAdmin:
      return "admin";
    case Access::kAnyRole:
      return "any role";
    case Access::kTeamRead:
      return scope.team.empty() ? "admin or viewer of all teams"
                                : absl::StrCat("admin, or viewer or scheduler of ", team);
    case Access::kJobList:
      return absl::StrCat(scope.team.empty() ? "admin or viewer of all teams"
                                             : absl::StrCat("admin, or viewer or scheduler of ", team),
                          ", or agent of cluster ", Quoted(scope.cluster), " (with ListJobsRequest.cluster set)");
    case Access::kJobRead:
      return absl::StrCat("admin, viewer or scheduler of ", team, ", agent of cluster ", Quoted(scope.cluster),
                          ", or framework of job ", Quoted(scope.job));
    case Access::kJobWrite:
      return absl::StrCat("admin, scheduler of ", team, ", or agent of cluster ", Quoted(scope.cluster));
    case Access::kCheckpoint:
      return absl::StrCat("admin, scheduler of ", team, ", or framework of job ", Quoted(scope.job));
    case Access::kElastic:
      return absl::StrCat("admin or framework of job ", Quoted(scope.job));
    case Access::kAgentStream:
      return "admin or agent";
  }
  return "admin";
}

}  // namespace

const std::vector<MethodRule>& AllRules() { return Table(); }

const MethodRule* RuleFor(const std::string& method) {
  for (const auto& rule : Table()) {
    if (method == rule.method) return &rule;
  }
  return nullptr;
}

absl::Status Authorize(const std::string& principal, const std::vector<Role>& roles, const std::string& method,
                       const CallScope& scope) {
  const MethodRule* rule = RuleFor(method);
  if (rule == nullptr) {
    // An RPC added without a rule is refused to all but admin until classified.
    for (const auto& role : roles) {
      if (role.kind == RoleKind::kAdmin) return absl::OkStatus();
    }
    return absl::PermissionDeniedError(
        absl::StrCat("principal '", principal, "' may not call ", method, ": it needs role admin"));
  }
  for (const auto& role : roles) {
    if (Grants(role, rule->access, scope)) return absl::OkStatus();
  }
  return absl::PermissionDeniedError(absl::StrCat("principal '", principal, "' may not call ", method,
                                                  ": it needs role ", Needed(rule->access, scope),
                                                  roles.empty() ? " (it has no roles)" : ""));
}

bool MayActAsAgentOf(const std::vector<Role>& roles, const std::string& cluster) {
  for (const auto& role : roles) {
    if (role.kind == RoleKind::kAdmin || AgentOf(role, cluster)) return true;
  }
  return false;
}

std::string RoleKindName(RoleKind kind) {
  switch (kind) {
    case RoleKind::kAdmin: return "admin";
    case RoleKind::kScheduler: return "scheduler";
    case RoleKind::kAgent: return "agent";
    case RoleKind::kViewer: return "viewer";
    case RoleKind::kFramework: return "framework";
  }
  return "unknown";
}

}  // namespace tidegate::service::auth
