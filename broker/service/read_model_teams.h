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

#include <vector>

#include "tidegate/v1/config.pb.h"
#include "tidegate/v1/service.pb.h"

namespace tidegate::service {

// `teams`: every team of `config`, as ToTeamInfo made them from the core.
// Rewrites the figures above in place.
void FillTeamFigures(const v1::Config& config, std::vector<v1::TeamInfo>* teams);

}  // namespace tidegate::service

#endif  // TIDEGATE_BROKER_SERVICE_READ_MODEL_TEAMS_H_
