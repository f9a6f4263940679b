// Values the broker subcommands read from flags and print in tables: resource
// lists, durations and dates, job states and decisions, and the `-o json`
// rendering of any API message. Pure functions (the current time is passed
// in), so the tests pin every format.
//
// Conventions, the same in every table:
//   - resources: GPU-like first ("gpu", "nvidia.com/gpu", "mig-1g.10gb"), then
//     the rest by name; a list is written "gpu=32,cpu=4000", the --per-replica
//     syntax;
//   - job states lower case ("queued"), decisions as docs/design.md §3 writes them
//     ("ADMITTED_BORROWING");
//   - times in UTC, RFC 3339 ("2024-05-01T13:05:12Z"); ages like "45s", "12m",
//     "3h4m", "2d3h";
//   - resource-hours with two decimals, shares with three.
//
// Flag parsers return INVALID_ARGUMENT naming the flag and the value, e.g.
// "--per-replica 'gpu=eight': 'eight' is not a positive integer".
#ifndef TIDEGATE_CLI_VALUE_FORMAT_H_
#define TIDEGATE_CLI_VALUE_FORMAT_H_

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "api/text/enum_names.h"
#include "google/protobuf/map.h"
#include "tidegate/v1/config.pb.h"

namespace google::protobuf {
class Message;
}  // namespace google::protobuf

namespace tidegate::cli {

// ---------------------------------------------------------------- resources

// Whether a resource is a GPU or a slice of one: its name contains "gpu" (any
// case) or its last path part starts with "mig-".
bool IsGpuLike(std::string_view resource);

// `names` sorted GPU-like first, then by name, without duplicates.
std::vector<std::string> OrderResources(std::vector<std::string> names);

// "gpu=32,cpu=4000" in OrderResources order; "-" when empty.
std::string FormatQuantities(const google::protobuf::Map<std::string, int64_t>& quantities);
std::string FormatQuantities(const std::map<std::string, int64_t>& quantities);

// Parses a --per-replica value: NAME=COUNT pairs separated by commas, each
// COUNT a positive decimal integer that fits in int64, each NAME made of
// letters, digits and "._/-", no NAME twice, at least one pair.
absl::StatusOr<std::map<std::string, int64_t>> ParseQuantities(std::string_view flag,
                                                               std::string_view text);

// Parses a --label value KEY=VALUE (KEY non-empty; VALUE may be empty).
absl::StatusOr<std::pair<std::string, std::string>> ParseLabel(std::string_view flag,
                                                               std::string_view text);

// Parses a positive decimal integer that fits in int64 (no sign, no spaces).
absl::StatusOr<int64_t> ParsePositiveInt(std::string_view flag, std::string_view text);

// ---------------------------------------------------------------- time

// Parses a duration: one or more NUMBER UNIT terms, unit w, d, h, m or s
// ("90s", "30m", "1h30m", "7d", "2w"). Returns seconds, > 0.
absl::StatusOr<int64_t> ParseDurationSeconds(std::string_view flag, std::string_view text);

// Parses a --since value into milliseconds since the epoch: a UTC date
// "2024-05-01" (its midnight), an RFC 3339 time "2024-05-01T13:00:00Z", or a
// duration counted back from now_ms ("7d").
absl::StatusOr<int64_t> ParseSince(std::string_view flag, std::string_view text, int64_t now_ms);

// Parses a --step value: a duration that is a whole number of hours
// ("1h", "6h", "1d"). Returns seconds.
absl::StatusOr<int64_t> ParseStepSeconds(std::string_view flag, std::string_view text);

// "45s", "12m", "3h4m", "2d3h", "40d": two units at most, rounded down;
// "0s" for anything below one second, including negative ages (clock skew).
std::string FormatAge(int64_t ms);

// "2024-05-01T13:05:12Z" (UTC, whole seconds).
std::string FormatTime(int64_t ms);

// "2024-05-01 13:00" (UTC, minutes): the start of a usage step.
std::string FormatStepStart(int64_t ms);

// ---------------------------------------------------------------- numbers

// Resource-hours: "12.50".
std::string FormatHours(double hours);

// A weighted dominant share: "0.375"; "inf" when infinite (weight 0).
std::string FormatShare(double share);

// ---------------------------------------------------------------- enums

// "queued", "admitted", ... (text::JobStateName); "unspecified" for 0 and
// "state <n>" outside the enum, so a newer server's state is not hidden.
std::string StateName(v1::JobState state);

// Parses a --state value: the short name in any case ("queued") or the full
// enum name ("JOB_STATE_QUEUED"); JOB_STATE_UNSPECIFIED is not accepted.
absl::StatusOr<v1::JobState> ParseState(std::string_view flag, std::string_view text);

// "ADMITTED", "ADMITTED_BORROWING", ..., the names docs/design.md §3 uses.
using text::DecisionName;

// ---------------------------------------------------------------- output

// `message` as one line of JSON: the proto's snake_case field names (the
// names the YAML files use), enums by name, every scalar field printed even
// when zero so that a script can rely on its key (unset `optional` fields and
// messages are left out). Numbers, int64 included, are JSON numbers (not the
// proto3 mapping's strings); doubles in the shortest form that reads back the
// same, so round the ones people read first (RoundTo).
std::string ToJson(const google::protobuf::Message& message);

// A JSON string literal, escaped.
std::string JsonString(std::string_view text);
// A JSON number; "NaN", "Infinity" and "-Infinity" as strings (as proto3's
// JSON mapping writes them), since JSON has no such numbers.
std::string JsonNumber(double value);
// `value` rounded to `decimals` places: hours and shares for people, without
// float noise (12.499999999 -> 12.5).
double RoundTo(double value, int decimals);

// "key:  value" lines, values aligned one column after the longest key, no
// trailing spaces; for `tidegate job` and other one-record views.
void PrintFields(const std::vector<std::pair<std::string, std::string>>& fields,
                 std::ostream& out);

}  // namespace tidegate::cli

#endif  // TIDEGATE_CLI_VALUE_FORMAT_H_
