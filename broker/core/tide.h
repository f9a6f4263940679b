// The daily tide (docs/design.md §5, docs/policy.md §6): a team's quota follows a
// weekly calendar of rules over its base quota. ResolveTide turns a config's
// rules into a TideCalendar once, when the config is compiled: clocks parsed
// and time zones resolved (the one place zoneinfo is read). Everything else
// here is a pure function of the calendar and a time; the admission code
// decides what a change does to jobs.
//
// A rule {days, from, to, timezone, quota} is active on each listed local
// weekday from `from` (inclusive) to `to` (exclusive). `to` may be "24:00";
// a `to` at or before `from` means the window runs past midnight into the
// next day (docs/decisions.md). Overlapping rules: the last listed wins, and a
// rule's quota overrides the base entry field by field.
#ifndef TIDEGATE_BROKER_CORE_TIDE_H_
#define TIDEGATE_BROKER_CORE_TIDE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "broker/core/types.h"
#include "tidegate/v1/config.pb.h"

namespace tidegate::core {

// One tide rule ready to evaluate: its weekdays, its window in minutes after
// local midnight (`to` at or before `from`: past midnight) and its zone.
struct TideWindow {
  // Bit d set for weekday d in v1::Weekday numbering (mon = 1 .. sun = 7): a
  // mask, not a list, so copying a calendar allocates nothing per rule.
  uint8_t days = 0;
  int from_minute = 0;
  int to_minute = 0;      // up to 24 * 60.
  absl::TimeZone zone;
};

// The tide rules of a config, resolved: teams[i] holds the windows of the
// config's i-th team, in rule order (the quotas stay in the config).
struct TideCalendar {
  std::vector<std::vector<TideWindow>> teams;
};

// Checks every rule and resolves it: days given, from/to as "HH:MM" (to may
// be "24:00"), from != to, a known IANA timezone (loaded here), non-negative
// quota fields. INVALID_ARGUMENT naming team, rule index, field and value.
absl::StatusOr<TideCalendar> ResolveTide(const v1::Config& config);

// Does any team have tide rules?
bool HasTide(const v1::Config& config);

// `base` with every rule active at `t` applied to its team's quota;
// `calendar` is ResolveTide(base) (or of a config with the same rules).
v1::Config EffectiveConfig(const v1::Config& base, const TideCalendar& calendar, Time t);

// The first instant strictly after `after` at which some rule starts or ends
// (the effective config may change), or nullopt when no team has rules.
// Looks at most 8 days ahead, so a weekly calendar always finds one.
std::optional<Time> NextTideBoundary(const TideCalendar& calendar, Time after);

// For one team's windows: the first boundary strictly after `after`.
std::optional<Time> NextTeamTideBoundary(const std::vector<TideWindow>& windows, Time after);

// Which rules are active: active[i][k] for the k-th rule of the config's i-th
// team. The quota in force is a function of the base config and this alone.
using TideActive = std::vector<std::vector<bool>>;

// A team's quota entries (v1::Team.quota).
using QuotaEntries = google::protobuf::Map<std::string, v1::ResourceQuota>;

// Per team of `base`, its quota entries with the rules flagged in `active`
// applied in order, exactly as EffectiveConfig applies them; nullopt for a
// team none of whose rules is active (its base entries hold). What
// EffectiveConfig changes, without copying the rest of the config.
std::vector<std::optional<QuotaEntries>> ActiveQuotas(const v1::Config& base, const TideActive& active);

// The rules of `calendar` active at `t`, and the next boundary, with the
// answers of EffectiveConfig and NextTideBoundary but cheap to ask again and
// again. Those scan every rule's windows around `t` (cctz day arithmetic per
// rule and day); a window's instants depend only on the rule and on the local
// day of `t` in the rule's zone, so this index keeps, per time zone, the
// windows for the local day it was last asked about, and the sorted union of
// all their starts and ends. It recomputes a zone's windows only when that
// day changes (once a local day when time moves forward). Answers are the
// scans' own (the same windows, the same comparisons). Bound to one calendar:
// Clear() it when the calendar changes. Not thread-safe (it caches).
class TideIndex {
 public:
  void Clear() { *this = TideIndex(); }
  TideActive ActiveRules(const TideCalendar& calendar, Time t) { return *SharedActiveRules(calendar, t); }
  // The same answer, shared rather than copied (a copy is one vector per team).
  std::shared_ptr<const TideActive> SharedActiveRules(const TideCalendar& calendar, Time t);
  std::optional<Time> NextBoundary(const TideCalendar& calendar, Time after);

 private:
  struct Zone {
    absl::TimeZone tz;
    std::optional<absl::CivilDay> day;    // the local day the windows are for.
    std::vector<std::pair<int, int>> rules;  // (team, rule) in this zone.
  };
  void Refresh(const TideCalendar& calendar, Time t);

  // Between two consecutive instants of boundaries_ no window starts or
  // ends, so the active rules are the same at every t in [from, to): the
  // answers for the last few intervals asked about (a boundary asks about
  // the one before it and the one it starts, several times), valid for the
  // windows of windows_version_.
  struct Answer {
    uint64_t version;
    Time from, to;
    std::shared_ptr<const TideActive> active;
  };
  bool built_ = false;
  uint64_t windows_version_ = 0;  // a new number whenever windows_ change.
  uint64_t versions_ = 0;
  // The windows for the days asked about before the current ones: a
  // boundary at local midnight asks about the instant before it (the day
  // before) and at it, in turn, so both are kept.
  struct Days {
    std::vector<std::optional<absl::CivilDay>> days;  // per zone.
    std::vector<std::vector<std::vector<std::pair<Time, Time>>>> windows;
    std::vector<Time> boundaries;
    uint64_t version = 0;
  };
  Days previous_;
  std::vector<Answer> answers_;
  std::vector<Zone> zones_;
  // windows_[team][rule]: the [start, end) instants of that rule's windows
  // for its zone's day.
  std::vector<std::vector<std::vector<std::pair<Time, Time>>>> windows_;
  std::vector<Time> boundaries_;  // every start and end in windows_, sorted.
};

}  // namespace tidegate::core

#endif  // TIDEGATE_BROKER_CORE_TIDE_H_
