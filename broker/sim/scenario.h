// What the simulator accepts of a scenario file (docs/design.md §9), before any
// job is run: the checks that need no broker, the clock origin, and the
// config the core is built from.
#ifndef TIDEGATE_BROKER_SIM_SCENARIO_H_
#define TIDEGATE_BROKER_SIM_SCENARIO_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "broker/core/types.h"
#include "tidegate/v1/config.pb.h"

namespace tidegate::sim {

// INVALID_ARGUMENT naming the field ("events[3].at: -5 is negative"): an event
// with no kind or a negative `at`, a negative `until`, a malformed
// expectation.
absl::Status ValidateScenario(const v1::Scenario& scenario);

// `start` (RFC 3339; empty = 1970-01-01T00:00:00Z) as core time, ms since the
// epoch. INVALID_ARGUMENT naming the value when it does not parse.
absl::StatusOr<core::Time> ParseStart(const std::string& start);

// The scenario's clusters, teams and policy as a broker config.
v1::Config ScenarioConfig(const v1::Scenario& scenario);

}  // namespace tidegate::sim

#endif  // TIDEGATE_BROKER_SIM_SCENARIO_H_
