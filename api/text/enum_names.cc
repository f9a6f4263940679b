#include "api/text/enum_names.h"

#include <string_view>

#include "absl/strings/str_cat.h"

namespace tidegate::text {

const char* JobStateName(v1::JobState state) {
  switch (state) {
    case v1::JOB_STATE_QUEUED: return "queued";
    case v1::JOB_STATE_ADMITTED: return "admitted";
    case v1::JOB_STATE_DRAINING: return "draining";
    case v1::JOB_STATE_ENDED: return "ended";
    case v1::JOB_STATE_REJECTED: return "rejected";
    default: return "unknown";
  }
}

std::string DecisionName(v1::Decision decision) {
  const std::string& full = v1::Decision_Name(decision);
  constexpr std::string_view kPrefix = "DECISION_";
  if (full.empty()) return absl::StrCat("DECISION ", static_cast<int>(decision));
  return full.substr(kPrefix.size());
}

}  // namespace tidegate::text
