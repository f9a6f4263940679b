#include "broker/sim/scenario.h"

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "broker/sim/expectations.h"

namespace tidegate::sim {
namespace {

constexpr char kIssue4[] = "elastic growth and tide arrive with issue 4";

absl::Status CheckJob(const v1::JobSpec& job, int index, const char* kind) {
  if (job.elastic().max() > 0) {
    return absl::UnimplementedError(absl::StrCat(
        "events[", index, "].", kind, ".elastic: job ", job.job(), " is elastic (elastic: {min: ",
        job.elastic().min(), ", max: ", job.elastic().max(),
        "}); the simulator refuses elastic jobs for now: ", kIssue4));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckSupported(const v1::Scenario& scenario) {
  for (int i = 0; i < scenario.teams_size(); ++i) {
    const v1::Team& team = scenario.teams(i);
    if (team.tide_size() > 0) {
      return absl::UnimplementedError(
          absl::StrCat("teams[", i, "].tide: team ", team.name(),
                       " has tide rules; the simulator refuses tide for now: ", kIssue4));
    }
  }
  for (int i = 0; i < scenario.events_size(); ++i) {
    const v1::ScenarioEvent& event = scenario.events(i);
    if (event.has_submit()) {
      if (absl::Status s = CheckJob(event.submit(), i, "submit"); !s.ok()) return s;
    } else if (event.has_adopt()) {
      if (absl::Status s = CheckJob(event.adopt(), i, "adopt"); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

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
  return config;
}

}  // namespace tidegate::sim
