#include "broker/core/tide.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"

namespace tidegate::core {
namespace {

// Minutes after local midnight; -1 when malformed. "24:00" only when
// `allow_24` (a window ending at midnight).
int ParseClock(const std::string& s, bool allow_24) {
  if (s.size() != 5 || s[2] != ':') return -1;
  for (int i : {0, 1, 3, 4}) {
    if (s[i] < '0' || s[i] > '9') return -1;
  }
  const int h = (s[0] - '0') * 10 + (s[1] - '0');
  const int m = (s[3] - '0') * 10 + (s[4] - '0');
  if (m > 59) return -1;
  if (h == 24 && m == 0 && allow_24) return 24 * 60;
  if (h > 23) return -1;
  return h * 60 + m;
}

int WeekdayNumber(absl::Weekday w) {  // v1::Weekday numbering: mon = 1 .. sun = 7.
  switch (w) {
    case absl::Weekday::monday: return 1;
    case absl::Weekday::tuesday: return 2;
    case absl::Weekday::wednesday: return 3;
    case absl::Weekday::thursday: return 4;
    case absl::Weekday::friday: return 5;
    case absl::Weekday::saturday: return 6;
    case absl::Weekday::sunday: return 7;
  }
  return 0;
}

Time ToMillis(absl::Time t) { return absl::ToUnixMillis(t); }

// Calls f(start, end) for every window of `rule` that starts on a local day
// from the day before `t` to 8 days after it, in time order.
template <typename F>
void ForEachWindow(const TideWindow& rule, Time t, F f) {
  const absl::TimeZone& tz = rule.zone;
  const int from = rule.from_minute;
  const int to = rule.to_minute;
  const absl::CivilDay today = absl::ToCivilDay(absl::FromUnixMillis(t), tz);
  for (int k = -1; k <= 8; ++k) {
    const absl::CivilDay day = today + k;
    const int wd = WeekdayNumber(absl::GetWeekday(day));
    if (std::find(rule.days.begin(), rule.days.end(), wd) == rule.days.end()) continue;
    const absl::CivilDay end_day = to > from ? day : day + 1;
    const absl::CivilMinute start_at = absl::CivilMinute(day) + from;
    const absl::CivilMinute end_at = absl::CivilMinute(end_day) + to;
    f(ToMillis(absl::FromCivil(start_at, tz)), ToMillis(absl::FromCivil(end_at, tz)));
  }
}

bool ActiveAt(const TideWindow& rule, Time t) {
  bool active = false;
  ForEachWindow(rule, t, [&](Time start, Time end) {
    if (start <= t && t < end) active = true;
  });
  return active;
}

}  // namespace

bool HasTide(const v1::Config& config) {
  for (const auto& team : config.teams()) {
    if (team.tide_size() > 0) return true;
  }
  return false;
}

absl::StatusOr<TideCalendar> ResolveTide(const v1::Config& config) {
  TideCalendar calendar;
  for (const auto& team : config.teams()) {
    std::vector<TideWindow>& windows = calendar.teams.emplace_back();
    for (int i = 0; i < team.tide_size(); ++i) {
      const v1::TideRule& rule = team.tide(i);
      const std::string where = absl::StrCat("team '", team.name(), "' tide[", i, "]");
      auto bad = [&](auto&&... parts) { return absl::InvalidArgumentError(absl::StrCat(where, parts...)); };
      if (rule.days().empty()) return bad(".days: at least one day is required (mon..sun)");
      for (int d : rule.days()) {
        if (d < 1 || d > 7) return bad(".days: ", d, " is not a weekday");
      }
      const int from = ParseClock(rule.from(), false);
      if (from < 0) return bad(".from: '", rule.from(), "' is not a time of day HH:MM (00:00-23:59)");
      const int to = ParseClock(rule.to(), true);
      if (to < 0) return bad(".to: '", rule.to(), "' is not a time of day HH:MM (00:00-24:00)");
      if (from == to) {
        return bad(".to: '", rule.to(), "' equals from; a window needs a length");
      }
      absl::TimeZone tz;
      const std::string zone = rule.timezone().empty() ? "UTC" : rule.timezone();
      // absl keeps each zone it loaded, so a config compiled again (every
      // tide boundary, every set_quota) reads no file twice.
      if (!absl::LoadTimeZone(zone, &tz)) return bad(".timezone: '", zone, "' is not a known IANA time zone");
      if (rule.quota().empty()) return bad(".quota: a rule must set at least one resource");
      for (const auto& [name, q] : rule.quota()) {
        if (q.has_guaranteed() && q.guaranteed() < 0) return bad(".quota.", name, ".guaranteed: ", q.guaranteed(), " must be >= 0");
        if (q.has_borrow_limit() && q.borrow_limit() < 0) return bad(".quota.", name, ".borrow_limit: ", q.borrow_limit(), " must be >= 0");
        if (q.has_lend_limit() && q.lend_limit() < 0) return bad(".quota.", name, ".lend_limit: ", q.lend_limit(), " must be >= 0");
      }
      windows.push_back(TideWindow{{rule.days().begin(), rule.days().end()}, from, to, tz});
    }
  }
  return calendar;
}

v1::Config EffectiveConfig(const v1::Config& base, const TideCalendar& calendar, Time t) {
  v1::Config out = base;
  for (int i = 0; i < out.teams_size(); ++i) {
    v1::Team& team = *out.mutable_teams(i);
    for (int k = 0; k < team.tide_size(); ++k) {  // the last listed wins.
      const v1::TideRule& rule = team.tide(k);
      if (!ActiveAt(calendar.teams[i][k], t)) continue;
      for (const auto& [name, q] : rule.quota()) {
        v1::ResourceQuota& entry = (*team.mutable_quota())[name];
        if (q.has_guaranteed()) entry.set_guaranteed(q.guaranteed());
        if (q.has_borrow_limit()) entry.set_borrow_limit(q.borrow_limit());
        if (q.has_lend_limit()) entry.set_lend_limit(q.lend_limit());
      }
    }
  }
  return out;
}

std::optional<Time> NextTeamTideBoundary(const std::vector<TideWindow>& windows, Time after) {
  std::optional<Time> best;
  for (const TideWindow& rule : windows) {
    ForEachWindow(rule, after, [&](Time start, Time end) {
      for (Time b : {start, end}) {
        if (b > after && (!best || b < *best)) best = b;
      }
    });
  }
  return best;
}

std::optional<Time> NextTideBoundary(const TideCalendar& calendar, Time after) {
  std::optional<Time> best;
  for (const auto& team : calendar.teams) {
    auto b = NextTeamTideBoundary(team, after);
    if (b && (!best || *b < *best)) best = b;
  }
  return best;
}

}  // namespace tidegate::core
