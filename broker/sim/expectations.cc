#include "broker/sim/expectations.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/text/enum_names.h"

namespace tidegate::sim {
namespace {

std::string SortedList(std::vector<std::string> ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return absl::StrCat("[", absl::StrJoin(ids, ", "), "]");
}

const char* BoolName(bool b) { return b ? "true" : "false"; }

std::string Subject(const v1::Expectation& e) {
  return e.by().empty() ? absl::StrCat("at ", e.at(), ": ", e.job())
                        : absl::StrCat("at ", e.at(), ": by ", e.by());
}

// "state admitted, replicas 6, borrowing true"
std::string Wanted(const v1::Expectation& e) {
  std::string out = absl::StrCat("state ", text::JobStateName(e.state()));
  if (e.has_replicas()) absl::StrAppend(&out, ", replicas ", e.replicas());
  if (e.has_borrowing()) absl::StrAppend(&out, ", borrowing ", BoolName(e.borrowing()));
  return out;
}

}  // namespace

absl::Status ValidateExpectation(const v1::Expectation& e, int index) {
  const std::string where = absl::StrCat("expect[", index, "]");
  if (e.at() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(where, ".at: ", e.at(), " is negative"));
  }
  if (!e.by().empty()) {
    if (!e.job().empty() || e.state() != v1::JOB_STATE_UNSPECIFIED || e.has_replicas() ||
        e.has_borrowing()) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": a `by` expectation takes only `preempted`, not job, state, replicas or "
                 "borrowing"));
    }
    return absl::OkStatus();
  }
  if (e.job().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": needs either `job` and `state`, or `by` and `preempted`"));
  }
  if (e.preempted_size() > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ".preempted: needs `by` (the job the victims make room for)"));
  }
  if (e.state() == v1::JOB_STATE_UNSPECIFIED) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ".state: required (queued, admitted, draining, ended or rejected)"));
  }
  return absl::OkStatus();
}

ExpectationResult CheckJobExpectation(const v1::Expectation& e, int index,
                                      const JobStatus* status) {
  ExpectationResult result{index, e.at(), false, ""};
  if (status == nullptr) {
    result.message =
        absl::StrCat(Subject(e), ": expected ", Wanted(e), ", got no record of this job");
    return result;
  }
  std::vector<std::string> diffs;
  if (status->state != e.state()) {
    diffs.push_back(absl::StrCat("expected state ", text::JobStateName(e.state()), ", got ",
                                 text::JobStateName(status->state)));
  }
  if (e.has_replicas() && status->replicas != e.replicas()) {
    diffs.push_back(
        absl::StrCat("expected replicas ", e.replicas(), ", got ", status->replicas));
  }
  if (e.has_borrowing() && status->borrowing != e.borrowing()) {
    diffs.push_back(absl::StrCat("expected borrowing ", BoolName(e.borrowing()), ", got ",
                                 BoolName(status->borrowing)));
  }
  result.passed = diffs.empty();
  result.message = result.passed ? absl::StrCat(Subject(e), ": ", Wanted(e))
                                 : absl::StrCat(Subject(e), ": ", absl::StrJoin(diffs, "; "));
  return result;
}

ExpectationResult CheckVictimExpectation(const v1::Expectation& e, int index,
                                         std::vector<std::string> victims) {
  ExpectationResult result{index, e.at(), false, ""};
  std::vector<std::string> want(e.preempted().begin(), e.preempted().end());
  const std::string want_list = SortedList(want);
  const std::string got_list = SortedList(std::move(victims));
  result.passed = want_list == got_list;
  result.message =
      result.passed
          ? absl::StrCat(Subject(e), ": preempted ", want_list)
          : absl::StrCat(Subject(e), ": expected preempted ", want_list, ", got ", got_list);
  return result;
}

ExpectationResult NotReached(const v1::Expectation& e, int index, int64_t until_s) {
  return ExpectationResult{
      index, e.at(), false,
      absl::StrCat(Subject(e), ": not reached (the run ends at until: ", until_s, ")")};
}

}  // namespace tidegate::sim
