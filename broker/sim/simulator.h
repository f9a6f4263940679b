// The scenario simulator (docs/design.md §9): runs a v1::Scenario, optionally with
// a job trace, through the broker core on a virtual clock, and reports every
// decision record, a summary and the expectations' results.
//
// The clock. Core time is ms since the epoch: an event at `at` seconds happens
// at start_ms + at * 1000. The run visits, in time order, every instant where
// something happens and nothing else:
//   - a core deadline (Broker::NextDeadline: a grace period ends, a backoff
//     expires) gets its own Apply(Tick, t) at exactly that t, so a victim whose
//     grace ends at 130 leaves at 130 even when no event happens then;
//   - a job completion (run_s) applies Command{finish} at its time;
//   - an event instant runs, in this order: the core's due work, then due
//     completions, then all `adopt` events of the instant as ONE AdoptJobs
//     command, then the other events in file order, one command each, then
//     any work they made due at the same instant;
//   - expectations at `at` are checked after all of that.
//   - every policy.tick_s (default 10; 0 counts as 1, as in the service)
//     from start, an Apply(Tick)
//     after the instant's events: a cycle on every tick (docs/policy.md §4), since
//     lost work, and with it the victim order, moves with time alone.
//
// The run ends at the latest `at` of any event, trace row or expectation, or
// at `until` when given; events and expectations after `until` are not run
// (expectations there fail as "not reached").
//
// Elastic jobs progress at replicas / max of full speed; simulated frameworks
// ack resize requests after policy.sim_ack_delay_s.
//
// Cost: per step O(records it produced + log jobs); nothing is proportional to
// teams x jobs, so an 82k-row trace replays in seconds.
//
// Threading: Simulate is a pure function of its arguments (callbacks run on
// the calling thread).
#ifndef TIDEGATE_BROKER_SIM_SIMULATOR_H_
#define TIDEGATE_BROKER_SIM_SIMULATOR_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "broker/core/events.h"
#include "broker/core/types.h"
#include "broker/sim/expectations.h"
#include "broker/sim/summary.h"
#include "broker/sim/trace.h"
#include "tidegate/v1/config.pb.h"

namespace tidegate::sim {

struct SimOptions {
  // Rows to replay as rigid submits (see PlanTrace); nullptr for none.
  const Trace* trace = nullptr;
  // Every record, in order, as it is produced. `start_ms` is the clock origin
  // (subtract it from event.at for scenario seconds).
  std::function<void(const core::Event& event, core::Time start_ms)> on_record;
  // Called each time simulated time passes another tenth of the run, with the
  // fraction done (0.1, 0.2, ... 1.0) and the records so far.
  std::function<void(double fraction, int64_t records)> on_progress;
};

struct SimResult {
  core::Time start_ms = 0;
  core::Time end_ms = 0;
  Summary summary;
  std::vector<ExpectationResult> expectations;  // in `expect` order.
  int64_t records = 0;
  int64_t events_after_until = 0;              // events not run.
  std::vector<std::string> unknown_trace_teams;  // distinct, sorted.

  int FailedExpectations() const;
};

// Runs `scenario`. Errors: INVALID_ARGUMENT (bad scenario, start or config,
// naming the field), INTERNAL (the
// core broke its contract, e.g. a deadline that never clears).
absl::StatusOr<SimResult> Simulate(const v1::Scenario& scenario, const SimOptions& options);

}  // namespace tidegate::sim

#endif  // TIDEGATE_BROKER_SIM_SIMULATOR_H_
