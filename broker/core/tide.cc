#include "broker/core/tide.h"

#include <algorithm>
#include <iterator>
#include <limits>

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
// from the day before `today` to 8 days after it, in time order.
template <typename F>
void ForEachWindowAround(const TideWindow& rule, absl::CivilDay today, F f) {
  const absl::TimeZone& tz = rule.zone;
  const int from = rule.from_minute;
  const int to = rule.to_minute;
  for (int k = -1; k <= 8; ++k) {
    const absl::CivilDay day = today + k;
    const int wd = WeekdayNumber(absl::GetWeekday(day));
    if (!(rule.days >> wd & 1)) continue;
    const absl::CivilDay end_day = to > from ? day : day + 1;
    const absl::CivilMinute start_at = absl::CivilMinute(day) + from;
    const absl::CivilMinute end_at = absl::CivilMinute(end_day) + to;
    f(ToMillis(absl::FromCivil(start_at, tz)), ToMillis(absl::FromCivil(end_at, tz)));
  }
}

// The same around the local day of `t` in the rule's zone.
template <typename F>
void ForEachWindow(const TideWindow& rule, Time t, F f) {
  ForEachWindowAround(rule, absl::ToCivilDay(absl::FromUnixMillis(t), rule.zone), f);
}

// Applies one rule's quota to a team's entries: the rule overrides the
// entry field by field, creating it when the base has none.
void ApplyRule(const v1::TideRule& rule, QuotaEntries& entries) {
  for (const auto& [name, q] : rule.quota()) {
    v1::ResourceQuota& entry = entries[name];
    if (q.has_guaranteed()) entry.set_guaranteed(q.guaranteed());
    if (q.has_borrow_limit()) entry.set_borrow_limit(q.borrow_limit());
    if (q.has_lend_limit()) entry.set_lend_limit(q.lend_limit());
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
      uint8_t days = 0;
      for (int d : rule.days()) days |= static_cast<uint8_t>(1 << d);
      windows.push_back(TideWindow{days, from, to, tz});
    }
  }
  return calendar;
}

v1::Config EffectiveConfig(const v1::Config& base, const TideCalendar& calendar, Time t) {
  v1::Config out = base;
  for (int i = 0; i < out.teams_size(); ++i) {
    v1::Team& team = *out.mutable_teams(i);
    for (int k = 0; k < team.tide_size(); ++k) {  // the last listed wins.
      if (ActiveAt(calendar.teams[i][k], t)) ApplyRule(team.tide(k), *team.mutable_quota());
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

std::vector<std::optional<QuotaEntries>> ActiveQuotas(const v1::Config& base, const TideActive& active) {
  std::vector<std::optional<QuotaEntries>> out(base.teams_size());
  for (int i = 0; i < base.teams_size(); ++i) {
    const v1::Team& team = base.teams(i);
    for (int k = 0; k < team.tide_size(); ++k) {  // the last listed wins, as in EffectiveConfig.
      if (!active[i][k]) continue;
      if (!out[i]) out[i] = team.quota();
      ApplyRule(team.tide(k), *out[i]);
    }
  }
  return out;
}

void TideIndex::Refresh(const TideCalendar& calendar, Time t) {
  if (!built_) {
    built_ = true;
    windows_.assign(calendar.teams.size(), {});
    for (size_t i = 0; i < calendar.teams.size(); ++i) {
      windows_[i].assign(calendar.teams[i].size(), {});
      for (size_t k = 0; k < calendar.teams[i].size(); ++k) {
        const absl::TimeZone& tz = calendar.teams[i][k].zone;
        auto z = std::find_if(zones_.begin(), zones_.end(), [&](const Zone& zone) { return zone.tz == tz; });
        if (z == zones_.end()) z = zones_.insert(zones_.end(), Zone{tz, std::nullopt, {}});
        z->rules.emplace_back(static_cast<int>(i), static_cast<int>(k));
      }
    }
  }
  std::vector<std::optional<absl::CivilDay>> days(zones_.size());
  bool same = true;
  for (size_t z = 0; z < zones_.size(); ++z) {
    days[z] = absl::ToCivilDay(absl::FromUnixMillis(t), zones_[z].tz);
    same = same && zones_[z].day == days[z];
  }
  if (same) return;
  Days current{{}, std::move(windows_), std::move(boundaries_), windows_version_};
  for (const Zone& zone : zones_) current.days.push_back(zone.day);
  if (previous_.days == days) {  // back to the days before: swap them in.
    windows_ = std::move(previous_.windows);
    boundaries_ = std::move(previous_.boundaries);
    windows_version_ = previous_.version;
    for (size_t z = 0; z < zones_.size(); ++z) zones_[z].day = days[z];
    previous_ = std::move(current);
    return;
  }
  previous_ = current;  // a copy: the zones whose day stays keep their windows.
  windows_ = std::move(current.windows);
  for (size_t z = 0; z < zones_.size(); ++z) {
    Zone& zone = zones_[z];
    if (zone.day == days[z]) continue;
    zone.day = days[z];
    for (const auto& [i, k] : zone.rules) {
      auto& w = windows_[i][k];
      w.clear();
      ForEachWindowAround(calendar.teams[i][k], *zone.day, [&](Time start, Time end) { w.emplace_back(start, end); });
    }
  }
  windows_version_ = ++versions_;
  boundaries_.clear();
  for (const auto& team : windows_) {
    for (const auto& rule : team) {
      for (const auto& [start, end] : rule) {
        boundaries_.push_back(start);
        boundaries_.push_back(end);
      }
    }
  }
  std::sort(boundaries_.begin(), boundaries_.end());
}

std::shared_ptr<const TideActive> TideIndex::SharedActiveRules(const TideCalendar& calendar, Time t) {
  Refresh(calendar, t);
  for (const Answer& a : answers_) {
    if (a.version == windows_version_ && a.from <= t && t < a.to) return a.active;
  }
  auto shared = std::make_shared<TideActive>(windows_.size());
  TideActive& active = *shared;
  for (size_t i = 0; i < windows_.size(); ++i) {
    active[i].assign(windows_[i].size(), false);
    for (size_t k = 0; k < windows_[i].size(); ++k) {
      for (const auto& [start, end] : windows_[i][k]) {
        if (start <= t && t < end) active[i][k] = true;  // ActiveAt's test.
      }
    }
  }
  // [from, to): the instants of boundaries_ around t (the whole line when
  // there are none on a side).
  auto next = std::upper_bound(boundaries_.begin(), boundaries_.end(), t);
  const Time to = next == boundaries_.end() ? std::numeric_limits<Time>::max() : *next;
  const Time from = next == boundaries_.begin() ? std::numeric_limits<Time>::min() : *std::prev(next);
  constexpr size_t kAnswersKept = 2;
  if (answers_.size() >= kAnswersKept) answers_.erase(answers_.begin());
  answers_.push_back({windows_version_, from, to, shared});
  return shared;
}

std::optional<Time> TideIndex::NextBoundary(const TideCalendar& calendar, Time after) {
  Refresh(calendar, after);
  // NextTideBoundary's minimum over every rule and window of the instants
  // after `after` is the first such instant of their sorted union.
  auto it = std::upper_bound(boundaries_.begin(), boundaries_.end(), after);
  if (it == boundaries_.end()) return std::nullopt;
  return *it;
}

}  // namespace tidegate::core
