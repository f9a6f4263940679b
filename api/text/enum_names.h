// The names the broker, the CLI, the simulator and the web view print for
// the schema's enums: one spelling everywhere, so a job's state reads the
// same in `tidegate jobs`, the jobs table of the ledger and the web page.
#ifndef TIDEGATE_API_TEXT_ENUM_NAMES_H_
#define TIDEGATE_API_TEXT_ENUM_NAMES_H_

#include <string>

#include "tidegate/v1/config.pb.h"

namespace tidegate::text {

// "queued", "admitted", "draining", "ended", "rejected"; "unknown" for
// anything else (UNSPECIFIED included). The ledger's jobs table stores these.
const char* JobStateName(v1::JobState state);

// The decision without its prefix, as the CLI and the simulator print it:
// "ADMITTED_BORROWING"; "DECISION <n>" for a number outside the enum.
std::string DecisionName(v1::Decision decision);

}  // namespace tidegate::text

#endif  // TIDEGATE_API_TEXT_ENUM_NAMES_H_
