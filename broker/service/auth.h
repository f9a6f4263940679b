// Who may do what (docs/security.md): principals, their roles, and the table
// of which role each RPC needs. Pure: no gRPC, no files; auth_files.h loads
// the policy, auth_services.h applies it to every call.
//
// A principal is a name: the subject (SAN, else CN) of a verified client
// certificate, or the name a bearer token is registered under. Its roles come
// from the roles file:
//   admin                  everything, including ApplyConfig;
//   scheduler: [teams]     Admit, Release, ReportCheckpoint and reads of those teams;
//   agent: CLUSTER         AgentService for that cluster only; Admit/Release,
//                          job reads and ListJobs limited to that cluster;
//   viewer: [teams] | "*"  reads of those teams (or all);
//   framework: PREFIX      WatchResizes, AckResize, ReportCheckpoint and job
//                          reads of jobs whose id starts with PREFIX.
#ifndef TIDEGATE_BROKER_SERVICE_AUTH_H_
#define TIDEGATE_BROKER_SERVICE_AUTH_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace tidegate::service::auth {

enum class RoleKind { kAdmin, kScheduler, kAgent, kViewer, kFramework };

struct Role {
  RoleKind kind = RoleKind::kViewer;
  std::set<std::string> teams;  // scheduler, viewer
  bool all_teams = false;       // viewer: "*"
  std::string cluster;          // agent
  std::string job_prefix;       // framework
};

// What an RPC needs; the table (MethodRule) maps each method to one.
enum class Access {
  kAdmin,        // admin only (ApplyConfig).
  kAnyRole,      // any principal with a role (Ping, ListTeams).
  kTeamRead,     // reads of a team: admin, scheduler/viewer of the team.
  kJobList,      // ListJobs: as kTeamRead, or agent of the cluster the list is limited to.
  kJobRead,      // reads of one job: as kTeamRead, or agent of its cluster, or framework of its id.
  kJobWrite,     // Admit, Release: admin, scheduler of the team, agent of the cluster.
  kCheckpoint,   // admin, scheduler of the team, framework of the job.
  kElastic,      // WatchResizes, AckResize: admin, framework of the job.
  kAgentStream,  // AgentService.Connect: admin, agent (its cluster checked at hello).
};

// What one call is about, as far as the table needs to know. Empty strings
// are unknown or "all" (an empty team on a team read means every team).
struct CallScope {
  std::string team;
  std::string cluster;
  std::string job;
};

struct MethodRule {
  const char* method;  // "/tidegate.v1.AdmissionService/Admit"
  Access access;
};

// The rule of a full gRPC method name; nullptr for a method not in the table
// (refused: a method nobody classified is nobody's).
const MethodRule* RuleFor(const std::string& method);
// Every rule, for tests and docs.
const std::vector<MethodRule>& AllRules();

// OK, or PERMISSION_DENIED naming the principal, the method and the role that
// would allow it. `roles` are the principal's roles (empty: none).
absl::Status Authorize(const std::string& principal, const std::vector<Role>& roles,
                       const std::string& method, const CallScope& scope);

// The cluster an AgentService stream of these roles may say hello as: "" for
// admin (any), else the agent role's cluster; PERMISSION_DENIED-worthy
// mismatches are the caller's to report.
bool MayActAsAgentOf(const std::vector<Role>& roles, const std::string& cluster);

std::string RoleKindName(RoleKind kind);

}  // namespace tidegate::service::auth

#endif  // TIDEGATE_BROKER_SERVICE_AUTH_H_
