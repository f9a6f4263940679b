// The tide in the core (docs/policy.md §6): its schedule (the next lead and
// boundary), the guards that keep admission and growth under a coming quota,
// and reclaim at the lead. The Decider's tide verbs are defined in
// tide_reclaim.cc too; the calendar itself (which rule is active when) is
// tide.h.
#ifndef TIDEGATE_BROKER_CORE_TIDE_RECLAIM_H_
#define TIDEGATE_BROKER_CORE_TIDE_RECLAIM_H_

#include <memory>
#include <vector>

#include "broker/core/config.h"
#include "broker/core/state.h"
#include "broker/core/types.h"
#include "tidegate/v1/config.pb.h"

namespace tidegate::core {

// Recomputes the tide schedule (next lead, next boundary) and the guards
// from the state's base config and cursors: after Create, Restore or a
// config change.
void ResetTide(State& s);

// The teams whose own tide rule raises their guarantee or private part
// (g - lend_limit) at a boundary, as node indices of `coming` (the quota in
// force from the boundary, under the rules `at`); `was` is the quota just
// before it (under the rules `before`), both of base config `source`. An
// ancestor that rises only through a child's sum is not one of them. Lead
// reclaim and the guard are for these rises.
std::vector<int> RisingTeams(const v1::Config& source, const TideActive& before, const TideActive& at,
                             const CompiledConfig& was, const CompiledConfig& coming);

// The state's base config compiled under the tide rules active at `t` (the
// quota in force at t), from State::Tide's caches; `active` receives those
// rules when given.
std::shared_ptr<const absl::StatusOr<CompiledConfig>> CompiledQuotaAt(State& s, Time t, TideActive* active = nullptr);

}  // namespace tidegate::core

#endif  // TIDEGATE_BROKER_CORE_TIDE_RECLAIM_H_
