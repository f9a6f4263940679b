// Job specs as the core accepts them: the bounds every submitted or adopted
// spec must meet, parsing into the core's Job (defaults filled in, the spec
// normalized so a resubmission compares equal), and the texts of a refusal.
// Every error is INVALID_ARGUMENT naming the field and the value.
#ifndef TIDEGATE_BROKER_CORE_JOB_SPEC_H_
#define TIDEGATE_BROKER_CORE_JOB_SPEC_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "broker/core/config.h"
#include "broker/core/events.h"
#include "broker/core/state.h"
#include "tidegate/v1/config.pb.h"

namespace tidegate::core {

// Validates a job spec against the config and builds the core's Job, with the
// spec normalized (defaults filled in). created_at defaults to `now`.
absl::StatusOr<Job> ParseJobSpec(const CompiledConfig& config, const v1::JobSpec& spec, Time now);

// ParseJobSpec for a submit, which may not record a job that is already
// draining (only adopt may).
absl::StatusOr<Job> ParseSubmit(const CompiledConfig& config, const v1::JobSpec& spec, Time now);

// An adopted job as ParseJobSpec builds it, except that an elastic job found
// running may state its current size in `replicas`: it is recorded at that
// size, even outside [min, max] (adopt has no checks; docs/design.md §9), and the
// ordinary rules grow or shrink it from there.
absl::StatusOr<Job> ParseAdopted(const CompiledConfig& config, const v1::JobSpec& spec, Time now);

// The bounds every submitted or adopted spec must meet before it is parsed:
// a printable id of bounded length, bounded labels, a real elastic range, a
// positive demand (not for `adopt`, which records what already runs).
absl::Status CheckSubmitBounds(const v1::JobSpec& spec, bool adopt);

// The `reject` event of a job spec that did not parse.
Event RejectEvent(const v1::JobSpec& spec, const absl::Status& why, Time now);
// The reason of the `error` for a submit of an existing id with another spec.
std::string DifferentSpecReason(const std::string& id);
// The same for an id retained after its job ended.
std::string EndedDifferentSpecReason(const std::string& id, const EndedJob& ended, int64_t retention_s);

}  // namespace tidegate::core

#endif  // TIDEGATE_BROKER_CORE_JOB_SPEC_H_
