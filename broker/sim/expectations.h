// Checking a scenario's `expect` list (docs/design.md §9). Two kinds:
//   {at, job, state, replicas?, borrowing?}  the job's state after every step
//                                            at `at`, from the records;
//   {at, by, preempted: [ids]}               exactly the victims chosen at
//                                            `at` for `by` (order-insensitive).
// An expectation with a non-empty `by` is of the second kind (`preempted: []`
// expects no victims at all).
//
// Messages read "at 130: s1: expected state admitted, got queued" and
// "at 100: by s1: expected preempted [r2, r3], got [r3]" (ids sorted).
#ifndef TIDEGATE_BROKER_SIM_EXPECTATIONS_H_
#define TIDEGATE_BROKER_SIM_EXPECTATIONS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "broker/sim/job_states.h"
#include "tidegate/v1/config.pb.h"

namespace tidegate::sim {

struct ExpectationResult {
  int index = 0;         // position in the scenario's `expect` list.
  int64_t at = 0;        // seconds from start.
  bool passed = false;
  std::string message;   // what was expected and, on failure, what happened.
};

// INVALID_ARGUMENT naming "expect[i]" when an expectation is neither kind:
// no job and no by, a job without a state, or a by with job fields.
absl::Status ValidateExpectation(const v1::Expectation& expectation, int index);

// A job expectation against the job's status (nullptr: no record named it).
ExpectationResult CheckJobExpectation(const v1::Expectation& expectation, int index,
                                      const JobStatus* status);

// A victims expectation against the victims chosen at `at` for `by`, in any
// order and possibly with repeats (a set is compared).
ExpectationResult CheckVictimExpectation(const v1::Expectation& expectation, int index,
                                         std::vector<std::string> victims);

// An expectation the run never reached (it lies after `until`).
ExpectationResult NotReached(const v1::Expectation& expectation, int index, int64_t until_s);

}  // namespace tidegate::sim

#endif  // TIDEGATE_BROKER_SIM_EXPECTATIONS_H_
