// Classical victim search (docs/policy.md §3, fair sharing off): who makes room
// for a queued job. Candidates from the job's own team and, level by level up
// to its sharing domain, from teams that borrow; tried in passes (with and
// without borrowing), each on the live state with what-if removals that are
// undone before it returns: the state is unchanged on return.
#ifndef TIDEGATE_BROKER_CORE_VICTIMS_CLASSICAL_H_
#define TIDEGATE_BROKER_CORE_VICTIMS_CLASSICAL_H_

#include <vector>

#include "broker/core/state.h"
#include "broker/core/victims.h"

namespace tidegate::core {

// Returns the victims of the first successful pass (empty when no pass
// fits). `contested` is the mask of contested resources for job j.
std::vector<Victim> ClassicalVictims(State& state, int j, ResourceMask contested);

// May running job c of J's team be J's victim under the team's within_team
// policy (docs/policy.md §3)?
bool SameTeamAllowed(const TeamPolicy& pol, const Job& J, const Job& c);

}  // namespace tidegate::core

#endif  // TIDEGATE_BROKER_CORE_VICTIMS_CLASSICAL_H_
