// The team figures readers see (`tidegate teams`, GetTeam, ListTeams), from
// the core's per-team views. Separate from the job read model so the rules
// that team leads read live in one place:
//   - used: what jobs hold (an inner team: its subtree's jobs), never the
//     idle private parts docs/policy.md's u(n) counts;
//   - private: guarantee kept from lending that no job uses now;
//   - borrowed: max(0, u − g) as the policy sees it (used + private − g);
//   - lent: of its guarantee, what teams outside it use now, attributed by
//     ledger::AttributeLoans (the same rule the GPU-hours of `loans` use);
//   - queued, running_jobs, queued_jobs: an inner team's are its subtree's.
// Sums are checked: a sum that overflows int64 shows int64's maximum, never
// a wrapped number, and does not change any other team's figures.
//
// Pure; thread-compatible.
#ifndef TIDEGATE_BROKER_SERVICE_READ_MODEL_TEAMS_H_
#define TIDEGATE_BROKER_SERVICE_READ_MODEL_TEAMS_H_

#include <cstdint>
#include <vector>

#include "tidegate/v1/config.pb.h"
#include "tidegate/v1/service.pb.h"

namespace tidegate::service {

// The figures of one team, as FillTeamFigures writes them.
struct TeamFigures {
  struct Resource {
    int64_t queued = 0;
    bool known = false;  // false: keep the core's used and borrowed (the accountant logs why)
    int64_t used = 0, private_idle = 0, borrowed = 0, lent = 0;
  };
  bool inner = false;  // an inner team shows its subtree's job counts
  int64_t running_jobs = 0, queued_jobs = 0;
  std::vector<Resource> resources;  // the team's resources, in its order
};

// `teams`: every team of `config`, as ToTeamInfo made them from the core.
// Figures parallel to `teams`; ApplyTeamFigures writes one team's, so a
// reader of one team copies one team.
std::vector<TeamFigures> ComputeTeamFigures(const v1::Config& config, const std::vector<const v1::TeamInfo*>& teams);
void ApplyTeamFigures(const TeamFigures& figures, v1::TeamInfo* team);
// Both, in place, for every team.
void FillTeamFigures(const v1::Config& config, std::vector<v1::TeamInfo>* teams);

}  // namespace tidegate::service

#endif  // TIDEGATE_BROKER_SERVICE_READ_MODEL_TEAMS_H_
