// Reasons: why a job waits, stated with numbers (docs/jobs.md lists them).
// The reasons themselves are Decider members (reasons.cc); this is the one
// helper other files share.
#ifndef TIDEGATE_BROKER_CORE_REASONS_H_
#define TIDEGATE_BROKER_CORE_REASONS_H_

#include <string>

#include "broker/core/types.h"

namespace tidegate::core {

// A time as reasons state it: "2026-01-05T18:27:00Z" (UTC).
std::string ReasonTime(Time ms);

}  // namespace tidegate::core

#endif  // TIDEGATE_BROKER_CORE_REASONS_H_
