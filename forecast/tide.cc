#include "forecast/tide.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "forecast/backtest.h"

namespace tidegate::forecast {
namespace {

constexpr int kHoursPerWeek = 168;
constexpr std::array<const char*, 7> kDayNames = {"mon", "tue", "wed", "thu", "fri", "sat", "sun"};

using Buckets = std::vector<std::vector<double>>;  // 168 slots of observed values.

double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return SortedQuantile(v, q);
}

int64_t Guarantee(double level) {
  return std::max<int64_t>(0, static_cast<int64_t>(std::ceil(level - 1e-9)));
}

struct Segment {
  int from = 0, to = 24;
  double level = 0;
};

// Optimal cuts of one day group's 24 hours into 1..max_k windows.
class GroupCuts {
 public:
  GroupCuts(const Buckets& buckets, const std::vector<double>& slot_q, std::vector<int> days,
            double q, int max_k)
      : days_(std::move(days)), max_k_(max_k) {
    for (int a = 0; a < 24; ++a) {
      for (int b = a + 1; b <= 24; ++b) {
        std::vector<double> pooled;
        for (int d : days_) {
          for (int h = a; h < b; ++h) {
            const auto& v = buckets[d * 24 + h];
            pooled.insert(pooled.end(), v.begin(), v.end());
          }
        }
        const double level = Quantile(std::move(pooled), q);
        double cost = 0;
        for (int d : days_) {
          for (int h = a; h < b; ++h) cost += (level - slot_q[d * 24 + h]) * (level - slot_q[d * 24 + h]);
        }
        level_[a][b] = level;
        cost_[a][b] = cost;
      }
    }
    // best_[k][b]: cheapest cut of hours [0, b) into k windows.
    const double inf = std::numeric_limits<double>::infinity();
    best_.assign(max_k + 1, std::vector<double>(25, inf));
    from_.assign(max_k + 1, std::vector<int>(25, -1));
    best_[0][0] = 0;
    for (int k = 1; k <= max_k; ++k) {
      for (int b = 1; b <= 24; ++b) {
        for (int a = k - 1; a < b; ++a) {
          if (best_[k - 1][a] == inf) continue;
          const double c = best_[k - 1][a] + cost_[a][b];
          if (c < best_[k][b]) {
            best_[k][b] = c;
            from_[k][b] = a;
          }
        }
      }
    }
  }

  const std::vector<int>& days() const { return days_; }
  double Cost(int k) const { return best_[k][24]; }

  std::vector<Segment> Cuts(int k) const {
    std::vector<Segment> segs;
    int b = 24;
    for (int j = k; j > 0; --j) {
      const int a = from_[j][b];
      segs.push_back({a, b, level_[a][b]});
      b = a;
    }
    std::reverse(segs.begin(), segs.end());
    return segs;
  }

 private:
  std::vector<int> days_;
  int max_k_;
  double level_[25][25] = {};
  double cost_[25][25] = {};
  std::vector<std::vector<double>> best_;
  std::vector<std::vector<int>> from_;
};

struct Layout {
  TideProposal proposal;
  double cost = 0;
  int groups = 0;
  int segments = 0;
};

// Builds the rules of one choice of cuts per group.
Layout MakeLayout(const std::vector<const GroupCuts*>& groups, const std::vector<int>& ks) {
  Layout layout;
  layout.groups = static_cast<int>(groups.size());
  struct Piece {
    std::vector<int> days;
    int from, to;
    double level;
    int64_t g;
  };
  std::vector<Piece> pieces;
  for (size_t i = 0; i < groups.size(); ++i) {
    layout.cost += groups[i]->Cost(ks[i]);
    layout.segments += ks[i];
    for (const Segment& s : groups[i]->Cuts(ks[i])) {
      const int64_t g = Guarantee(s.level);
      // Adjacent windows with the same guarantee merge.
      if (!pieces.empty() && pieces.back().days == groups[i]->days() && pieces.back().g == g &&
          pieces.back().to == s.from) {
        pieces.back().to = s.to;
        pieces.back().level = std::max(pieces.back().level, s.level);
        continue;
      }
      pieces.push_back({groups[i]->days(), s.from, s.to, s.level, g});
    }
  }
  int64_t base = std::numeric_limits<int64_t>::max();
  for (const Piece& p : pieces) base = std::min(base, p.g);
  TideProposal& out = layout.proposal;
  out.base_guaranteed = base;
  for (const Piece& p : pieces) {
    out.weekly_gpu_hours += p.g * (p.to - p.from) * static_cast<int64_t>(p.days.size());
    if (p.g == base) continue;
    // The same hours and guarantee in another day group: one rule.
    bool merged = false;
    for (TideWindow& w : out.windows) {
      if (w.from_hour == p.from && w.to_hour == p.to && w.guaranteed == p.g) {
        w.days.insert(w.days.end(), p.days.begin(), p.days.end());
        std::sort(w.days.begin(), w.days.end());
        w.level = std::max(w.level, p.level);
        merged = true;
        break;
      }
    }
    if (!merged) out.windows.push_back({p.days, p.from, p.to, p.level, p.g});
  }
  std::sort(out.windows.begin(), out.windows.end(), [](const TideWindow& a, const TideWindow& b) {
    return std::tie(a.days.front(), a.from_hour, a.to_hour) <
           std::tie(b.days.front(), b.from_hour, b.to_hour);
  });
  return layout;
}

std::string Hhmm(int hour) { return absl::StrFormat("\"%02d:00\"", hour); }

}  // namespace

absl::StatusOr<TideProposal> ProposeTide(const std::vector<double>& values, int first_hour_of_week,
                                         const TideOptions& options) {
  if (options.max_windows < 1 || options.max_windows > 12) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_windows: ", options.max_windows, " is not in [1, 12]"));
  }
  if (!(options.quantile > 0 && options.quantile < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("quantile: ", options.quantile, " is not in (0, 1)"));
  }
  if (first_hour_of_week < 0 || first_hour_of_week >= kHoursPerWeek) {
    return absl::InvalidArgumentError(
        absl::StrCat("first hour of week: ", first_hour_of_week, " is not in [0, 168)"));
  }
  if (values.size() < 2 * kHoursPerWeek) {
    return absl::InvalidArgumentError(absl::StrCat(
        values.size(), " hours is shorter than two seasons of 168 hours (336): a weekly "
                       "profile needs every hour of the week twice"));
  }
  Buckets buckets(kHoursPerWeek);
  for (size_t i = 0; i < values.size(); ++i) {
    buckets[(first_hour_of_week + i) % kHoursPerWeek].push_back(values[i]);
  }
  std::vector<double> slot_q(kHoursPerWeek);
  for (int s = 0; s < kHoursPerWeek; ++s) slot_q[s] = Quantile(buckets[s], options.quantile);

  const int max_k = options.max_windows + 1;
  const GroupCuts all(buckets, slot_q, {0, 1, 2, 3, 4, 5, 6}, options.quantile, max_k);
  const GroupCuts weekdays(buckets, slot_q, {0, 1, 2, 3, 4}, options.quantile, max_k);
  const GroupCuts weekend(buckets, slot_q, {5, 6}, options.quantile, max_k);

  std::vector<Layout> layouts;
  for (int k = 1; k <= max_k; ++k) layouts.push_back(MakeLayout({&all}, {k}));
  for (int k1 = 1; k1 <= max_k; ++k1) {
    for (int k2 = 1; k2 <= max_k; ++k2) {
      layouts.push_back(MakeLayout({&weekdays, &weekend}, {k1, k2}));
    }
  }
  const double flat_cost = layouts.front().cost;
  double best_cost = flat_cost;
  for (const Layout& l : layouts) {
    if (static_cast<int>(l.proposal.windows.size()) <= options.max_windows) {
      best_cost = std::min(best_cost, l.cost);
    }
  }
  const double good_enough = best_cost + 0.1 * (flat_cost - best_cost);
  const Layout* chosen = nullptr;
  for (const Layout& l : layouts) {
    const size_t rules = l.proposal.windows.size();
    if (static_cast<int>(rules) > options.max_windows || l.cost > good_enough + 1e-9) continue;
    if (chosen == nullptr ||
        std::make_tuple(rules, l.groups, l.segments, l.cost) <
            std::make_tuple(chosen->proposal.windows.size(), chosen->groups, chosen->segments,
                            chosen->cost)) {
      chosen = &l;
    }
  }
  TideProposal proposal = chosen->proposal;
  proposal.flat_level = Quantile(values, options.quantile);
  proposal.flat_weekly_gpu_hours = Guarantee(proposal.flat_level) * kHoursPerWeek;
  proposal.hours_used = static_cast<int64_t>(values.size());
  proposal.quantile = options.quantile;
  return proposal;
}

std::string TideYaml(const TideProposal& proposal, const TideYamlOptions& options) {
  std::string out;
  if (!options.comment.empty()) {
    size_t pos = 0;
    while (pos <= options.comment.size()) {
      size_t end = options.comment.find('\n', pos);
      if (end == std::string::npos) end = options.comment.size();
      const std::string line = options.comment.substr(pos, end - pos);
      absl::StrAppend(&out, line.empty() ? "#" : "# " + line, "\n");
      pos = end + 1;
    }
  }
  absl::StrAppend(&out, "teams:\n  - name: ", options.team, "\n    quota: {", options.resource,
                  ": {guaranteed: ", proposal.base_guaranteed, "}}\n");
  if (proposal.windows.empty()) {
    absl::StrAppend(&out, "    tide: []\n");
    return out;
  }
  absl::StrAppend(&out, "    tide:\n");
  for (const TideWindow& w : proposal.windows) {
    std::vector<std::string> days;
    for (int d : w.days) days.push_back(kDayNames[d]);
    absl::StrAppend(&out, "      - {days: [", absl::StrJoin(days, ", "), "], from: ",
                    Hhmm(w.from_hour), ", to: ", Hhmm(w.to_hour), ", timezone: ",
                    options.timezone, ",\n         quota: {", options.resource,
                    ": {guaranteed: ", w.guaranteed, "}}}  # P",
                    absl::StrFormat("%g", 100 * proposal.quantile), " ",
                    absl::StrFormat("%.1f", w.level), "\n");
  }
  return out;
}

}  // namespace tidegate::forecast
