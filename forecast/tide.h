// Tide proposals (docs/design.md §5, §6): turn a team's hour-of-week demand profile
// into a base guarantee plus a few calendar windows with a higher one, in the
// config's TideRule shape (api/tidegate/v1/config.proto: days, from, to,
// timezone, quota).
//
// How:
//   1. Every observed hour is placed in the week (Monday 00:00 = 0).
//   2. The days are either one group (every day alike) or two (Monday–Friday,
//      Saturday–Sunday). In each group the 24 hours are cut into at most a few
//      windows of adjacent hours (optimal cuts by dynamic programming: the
//      squared distance between each hour's P90 and its window's level).
//   3. A window's level is the P90 (options.quantile) of all demand observed
//      in it, rounded up to whole GPUs; adjacent windows with the same level
//      merge. The lowest level is the base guarantee; every window above it
//      becomes a rule.
//   4. Of the layouts with at most max_windows rules, the one with the fewest
//      rules that achieves 90% of the best possible improvement over a flat
//      guarantee wins (ties: one day group, then fewer cuts).
//
// Threading: pure functions.
#ifndef TIDEGATE_FORECAST_TIDE_H_
#define TIDEGATE_FORECAST_TIDE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tidegate::forecast {

struct TideOptions {
  int max_windows = 4;       // tide rules at most.
  double quantile = 0.9;     // the guarantee of a window: this quantile of its demand.
};

struct TideWindow {
  std::vector<int> days;     // 0 = Monday … 6 = Sunday, ascending.
  int from_hour = 0;         // 0..23.
  int to_hour = 24;          // exclusive, 1..24 (24 = end of day).
  double level = 0;          // the quantile, before rounding.
  int64_t guaranteed = 0;    // ceil(level).
};

struct TideProposal {
  int64_t base_guaranteed = 0;        // outside the windows.
  std::vector<TideWindow> windows;    // the rules, by first day then hour.
  double flat_level = 0;              // quantile of all demand: a guarantee with no tide.
  // Guaranteed GPU-hours per week with the rules, and with the flat guarantee.
  int64_t weekly_gpu_hours = 0;
  int64_t flat_weekly_gpu_hours = 0;
  int64_t hours_used = 0;             // observations the profile came from.
  double quantile = 0.9;              // options.quantile, for reports.
};

// `values[i]` is the demand in hour i; `first_hour_of_week` places values[0]
// (0 = Monday 00:00 … 167 = Sunday 23:00). Needs at least two weeks (336
// hours): INVALID_ARGUMENT otherwise, or for bad options.
absl::StatusOr<TideProposal> ProposeTide(const std::vector<double>& values, int first_hour_of_week,
                                         const TideOptions& options = {});

struct TideYamlOptions {
  std::string team;               // required.
  std::string resource = "gpu";
  std::string timezone = "UTC";
  std::string comment;            // lines written first, each prefixed "# ".
};

// The proposal as config YAML:
//   teams:
//     - name: T
//       quota: {gpu: {guaranteed: 40}}
//       tide:
//         - {days: [mon, tue, wed, thu, fri], from: "08:00", to: "20:00", timezone: UTC,
//            quota: {gpu: {guaranteed: 56}}}
// A window that ends at midnight has to: "24:00".
std::string TideYaml(const TideProposal& proposal, const TideYamlOptions& options);

}  // namespace tidegate::forecast

#endif  // TIDEGATE_FORECAST_TIDE_H_
