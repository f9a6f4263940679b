// The daily tide (DESIGN.md §5, POLICY.md §6): a team's quota follows a
// weekly calendar of rules over its base quota. Pure functions of the config
// and a time; the admission code decides what a change does to jobs.
//
// A rule {days, from, to, timezone, quota} is active on each listed local
// weekday from `from` (inclusive) to `to` (exclusive). `to` may be "24:00";
// a `to` at or before `from` means the window runs past midnight into the
// next day (docs/decisions.md). Overlapping rules: the last listed wins, and a
// rule's quota overrides the base entry field by field.
#ifndef TIDEGATE_BROKER_CORE_TIDE_H_
#define TIDEGATE_BROKER_CORE_TIDE_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "broker/core/types.h"
#include "tidegate/v1/config.pb.h"

namespace tidegate::core {

// Checks every rule: days given, from/to as "HH:MM" (to may be "24:00"),
// from != to, a known IANA timezone, non-negative quota fields. The error
// names team, rule index, field and value.
absl::Status ValidateTide(const v1::Config& config);

// Does any team have tide rules?
bool HasTide(const v1::Config& config);

// `base` with every rule active at `t` applied to its team's quota.
v1::Config EffectiveConfig(const v1::Config& base, Time t);

// The first instant strictly after `after` at which some rule starts or ends
// (the effective config may change), or nullopt when no team has rules.
// Looks at most 8 days ahead, so a weekly calendar always finds one.
std::optional<Time> NextTideBoundary(const v1::Config& base, Time after);

// For one team: the first boundary of its own rules strictly after `after`.
std::optional<Time> NextTeamTideBoundary(const v1::Team& team, Time after);

}  // namespace tidegate::core

#endif  // TIDEGATE_BROKER_CORE_TIDE_H_
