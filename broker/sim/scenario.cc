#include "broker/sim/scenario.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "broker/sim/expectations.h"

namespace tidegate::sim {

absl::Status ValidateScenario(const v1::Scenario& scenario) {
  for (int i = 0; i < scenario.events_size(); ++i) {
    const v1::ScenarioEvent& event = scenario.events(i);
    if (event.at() < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("events[", i, "].at: ", event.at(), " is negative"));
    }
    if (event.kind_case() == v1::ScenarioEvent::KIND_NOT_SET) {
      return absl::InvalidArgumentError(absl::StrCat(
          "events[", i,
          "]: needs one of submit, adopt, checkpoint, finish, set_quota, set_capacity"));
    }
  }
  if (scenario.has_until() && scenario.until() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("until: ", scenario.until(), " is negative"));
  }
  for (int i = 0; i < scenario.expect_size(); ++i) {
    if (absl::Status s = ValidateExpectation(scenario.expect(i), i); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<core::Time> ParseStart(const std::string& start) {
  if (start.empty()) return 0;
  absl::Time t;
  std::string err;
  if (!absl::ParseTime(absl::RFC3339_full, start, &t, &err)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "start: \"", start, "\" is not an RFC 3339 time (e.g. 2026-01-05T00:00:00Z): ", err));
  }
  return absl::ToUnixMillis(t);
}

v1::Config ScenarioConfig(const v1::Scenario& scenario) {
  v1::Config config;
  *config.mutable_clusters() = scenario.clusters();
  *config.mutable_teams() = scenario.teams();
  if (scenario.has_policy()) *config.mutable_policy() = scenario.policy();
  // Ended jobs stay known for the whole run unless the scenario says otherwise.
  if (!config.policy().has_ended_job_retention_s()) {
    config.mutable_policy()->set_ended_job_retention_s(std::numeric_limits<int64_t>::max() / 1000);
  }
  return config;
}

}  // namespace tidegate::sim
