#include "cli/value_format.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "google/protobuf/message.h"

namespace tidegate::cli {
namespace {

std::string Str(std::string_view s) { return std::string(s); }

absl::Status Invalid(std::string_view flag, std::string_view text, std::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(Str(flag), " '", Str(text), "': ", Str(why)));
}

// Strict decimal digits into int64; false on anything else or overflow.
bool ParseDigits(std::string_view text, int64_t* out) {
  if (text.empty()) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

bool IsResourceNameChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' ||
         c == '/' || c == '-';
}

}  // namespace

// ---------------------------------------------------------------- resources

bool IsGpuLike(std::string_view resource) {
  const std::string lower = absl::AsciiStrToLower(Str(resource));
  if (lower.find("gpu") != std::string::npos) return true;
  const size_t slash = lower.rfind('/');
  const std::string_view last =
      slash == std::string::npos ? std::string_view(lower) : std::string_view(lower).substr(slash + 1);
  return last.substr(0, 4) == "mig-";
}

std::vector<std::string> OrderResources(std::vector<std::string> names) {
  std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
    const bool ga = IsGpuLike(a);
    const bool gb = IsGpuLike(b);
    if (ga != gb) return ga;
    return a < b;
  });
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

namespace {

template <typename MapT>
std::string FormatQuantitiesImpl(const MapT& quantities) {
  if (quantities.empty()) return "-";
  std::vector<std::string> names;
  for (const auto& [name, quantity] : quantities) names.push_back(name);
  std::vector<std::string> parts;
  for (const std::string& name : OrderResources(std::move(names))) {
    parts.push_back(absl::StrCat(name, "=", quantities.at(name)));
  }
  return absl::StrJoin(parts, ",");
}

}  // namespace

std::string FormatQuantities(const google::protobuf::Map<std::string, int64_t>& quantities) {
  return FormatQuantitiesImpl(quantities);
}

std::string FormatQuantities(const std::map<std::string, int64_t>& quantities) {
  return FormatQuantitiesImpl(quantities);
}

absl::StatusOr<std::map<std::string, int64_t>> ParseQuantities(std::string_view flag,
                                                               std::string_view text) {
  if (text.empty()) return Invalid(flag, text, "expected NAME=COUNT[,NAME=COUNT...], e.g. gpu=8");
  std::map<std::string, int64_t> out;
  for (const absl::string_view part_view : absl::StrSplit(Str(text), ',')) {
    const std::string part(part_view);
    const size_t eq = part.find('=');
    if (eq == std::string::npos) {
      return Invalid(flag, text, absl::StrCat("'", part, "' is not NAME=COUNT, e.g. gpu=8"));
    }
    const std::string name = part.substr(0, eq);
    const std::string count = part.substr(eq + 1);
    if (name.empty() || !std::all_of(name.begin(), name.end(), IsResourceNameChar)) {
      return Invalid(flag, text,
                     absl::StrCat("'", name,
                                  "' is not a resource name (letters, digits and ._/- only)"));
    }
    int64_t value = 0;
    // 0 is allowed here: the broker judges the whole demand (all zero is
    // refused there, for the API and the CLI alike).
    if (!ParseDigits(count, &value) || value < 0) {
      const bool digits = !count.empty() && std::all_of(count.begin(), count.end(), absl::ascii_isdigit);
      return Invalid(flag, text,
                     digits ? absl::StrCat("'", count, "' is too large (at most 9223372036854775807)")
                            : absl::StrCat("'", count, "' is not a whole number >= 0"));
    }
    if (!out.emplace(name, value).second) {
      return Invalid(flag, text, absl::StrCat(name, " is given twice"));
    }
  }
  return out;
}

absl::StatusOr<std::pair<std::string, std::string>> ParseLabel(std::string_view flag,
                                                               std::string_view text) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return Invalid(flag, text, "expected KEY=VALUE");
  }
  return std::make_pair(Str(text.substr(0, eq)), Str(text.substr(eq + 1)));
}

absl::StatusOr<int64_t> ParsePositiveInt(std::string_view flag, std::string_view text) {
  int64_t value = 0;
  if (!ParseDigits(text, &value) || value <= 0) {
    return Invalid(flag, text, "not a positive integer");
  }
  return value;
}

// ---------------------------------------------------------------- time

absl::StatusOr<int64_t> ParseDurationSeconds(std::string_view flag, std::string_view text) {
  constexpr std::string_view kExpected = "expected a duration like 90s, 30m, 12h, 7d, 2w or 1h30m";
  if (text.empty()) return Invalid(flag, text, kExpected);
  int64_t total = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t j = i;
    while (j < text.size() && text[j] >= '0' && text[j] <= '9') ++j;
    if (j == i || j == text.size()) return Invalid(flag, text, kExpected);
    int64_t number = 0;
    if (!ParseDigits(text.substr(i, j - i), &number)) return Invalid(flag, text, "too large");
    int64_t unit = 0;
    switch (text[j]) {
      case 'w': unit = 7 * 86400; break;
      case 'd': unit = 86400; break;
      case 'h': unit = 3600; break;
      case 'm': unit = 60; break;
      case 's': unit = 1; break;
      default: return Invalid(flag, text, kExpected);
    }
    // Bounded far below overflow of milliseconds: 10,000 years.
    constexpr int64_t kMaxSeconds = int64_t{10000} * 366 * 86400;
    if (number > kMaxSeconds / unit || total > kMaxSeconds - number * unit) {
      return Invalid(flag, text, "too large");
    }
    total += number * unit;
    i = j + 1;
  }
  if (total <= 0) return Invalid(flag, text, "must be positive");
  return total;
}

absl::StatusOr<int64_t> ParseSince(std::string_view flag, std::string_view text, int64_t now_ms) {
  absl::Time t;
  std::string error;
  if (text.size() == 10 &&
      absl::ParseTime("%Y-%m-%d", Str(text), absl::UTCTimeZone(), &t, &error)) {
    return absl::ToUnixMillis(t);
  }
  if (text.size() > 10 && (text[10] == 'T' || text[10] == 't')) {
    if (absl::ParseTime(absl::RFC3339_full, Str(text), &t, &error)) return absl::ToUnixMillis(t);
    return Invalid(flag, text, "not an RFC 3339 time like 2024-05-01T13:00:00Z");
  }
  if (text.size() == 10 && text[4] == '-' && text[7] == '-') {
    return Invalid(flag, text, "not a date (YYYY-MM-DD)");
  }
  absl::StatusOr<int64_t> seconds = ParseDurationSeconds(flag, text);
  if (!seconds.ok()) {
    return Invalid(flag, text,
                   "expected a date (2024-05-01), a time (2024-05-01T13:00:00Z) or a "
                   "duration back from now (7d, 12h, 30m)");
  }
  return now_ms - *seconds * 1000;
}

absl::StatusOr<int64_t> ParseStepSeconds(std::string_view flag, std::string_view text) {
  absl::StatusOr<int64_t> seconds = ParseDurationSeconds(flag, text);
  if (!seconds.ok()) return seconds.status();
  if (*seconds % 3600 != 0) return Invalid(flag, text, "must be a whole number of hours (1h, 1d)");
  return *seconds;
}

std::string FormatAge(int64_t ms) {
  const int64_t s = ms / 1000;
  if (s <= 0) return "0s";
  if (s < 60) return absl::StrCat(s, "s");
  if (s < 3600) return absl::StrCat(s / 60, "m");
  auto two = [](int64_t major, const char* major_unit, int64_t minor, const char* minor_unit) {
    return minor == 0 ? absl::StrCat(major, major_unit)
                      : absl::StrCat(major, major_unit, minor, minor_unit);
  };
  if (s < 86400) return two(s / 3600, "h", s % 3600 / 60, "m");
  if (s < 10 * 86400) return two(s / 86400, "d", s % 86400 / 3600, "h");
  return absl::StrCat(s / 86400, "d");
}

std::string FormatTime(int64_t ms) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixMillis(ms), absl::UTCTimeZone());
}

std::string FormatStepStart(int64_t ms) {
  return absl::FormatTime("%Y-%m-%d %H:%M", absl::FromUnixMillis(ms), absl::UTCTimeZone());
}

// ---------------------------------------------------------------- numbers

std::string FormatHours(double hours) { return absl::StrFormat("%.2f", hours); }

std::string FormatShare(double share) {
  if (std::isinf(share)) return "inf";
  return absl::StrFormat("%.3f", share);
}

// ---------------------------------------------------------------- enums

std::string StateName(v1::JobState state) {
  if (state == v1::JOB_STATE_UNSPECIFIED) return "unspecified";
  if (!v1::JobState_IsValid(state)) return absl::StrCat("state ", static_cast<int>(state));
  return text::JobStateName(state);
}

absl::StatusOr<v1::JobState> ParseState(std::string_view flag, std::string_view text) {
  std::string upper = absl::AsciiStrToUpper(Str(text));
  if (upper.rfind("JOB_STATE_", 0) != 0) upper = absl::StrCat("JOB_STATE_", upper);
  v1::JobState state = v1::JOB_STATE_UNSPECIFIED;
  if (!v1::JobState_Parse(upper, &state) || state == v1::JOB_STATE_UNSPECIFIED) {
    return Invalid(flag, text, "expected queued, admitted, draining, ended or rejected");
  }
  return state;
}

// ---------------------------------------------------------------- output

void PrintFields(const std::vector<std::pair<std::string, std::string>>& fields,
                 std::ostream& out) {
  size_t width = 0;
  for (const auto& [key, value] : fields) width = std::max(width, key.size() + 1);
  for (const auto& [key, value] : fields) {
    std::string line = absl::StrCat(key, ":");
    if (!value.empty()) {
      line.append(width - line.size() + 2, ' ');
      line += value;
    }
    out << line << '\n';
  }
}

}  // namespace tidegate::cli
