// Fair-sharing victim search (docs/policy.md §5, fair sharing on): candidates
// taken from the team with the highest share first (the mirror of the
// admission order), each eviction tested by the preemption strategies. Runs
// on the live state with what-if removals undone before it returns.
#ifndef TIDEGATE_BROKER_CORE_VICTIMS_FAIR_SHARE_H_
#define TIDEGATE_BROKER_CORE_VICTIMS_FAIR_SHARE_H_

#include <vector>

#include "broker/core/state.h"
#include "broker/core/victims.h"

namespace tidegate::core {

// The victims that make job j fit (empty when none do). `contested` is the
// mask of contested resources for job j.
std::vector<Victim> FairShareVictims(State& state, int j, ResourceMask contested);

}  // namespace tidegate::core

#endif  // TIDEGATE_BROKER_CORE_VICTIMS_FAIR_SHARE_H_
