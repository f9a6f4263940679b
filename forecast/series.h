// An hourly series: equally spaced values, one per hour, checked for the
// mistakes real exports contain (docs/design.md §6). The forecasting models only
// ever see an HourlySeries, so they can assume "one value per hour, no holes".
//
// Times are kept in the input's own unit (seconds for `hour_start_s`, plain
// indices for `hour_index`): `step` is one hour in that unit. Forecasts are
// stamped in the same unit, starting one step after the last row.
//
// Threading: value types and pure functions.
#ifndef TIDEGATE_FORECAST_SERIES_H_
#define TIDEGATE_FORECAST_SERIES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tidegate::forecast {

// One observation before validation, with where it came from (for messages).
struct RawPoint {
  int64_t time = 0;
  double value = 0;
  int line = 0;  // 1-based line in the source file; 0 = unknown.
};

struct HourlySeries {
  int64_t start = 0;  // time of values[0], in the input's unit.
  int64_t step = 1;   // one hour, in the input's unit; > 0.
  std::vector<double> values;
  // Indices of values that were not in the input but filled in (only with
  // SeriesOptions::fill_gaps); sorted.
  std::vector<int64_t> filled;

  int64_t size() const { return static_cast<int64_t>(values.size()); }
  int64_t TimeAt(int64_t i) const { return start + i * step; }
  // The time one step after the last value: where a forecast starts.
  int64_t NextTime() const { return start + size() * step; }
};

struct SeriesOptions {
  // Used in messages: "SOURCE:LINE: FIELD: reason".
  std::string source = "input";
  std::string time_field = "time";
  std::string value_field = "value";
  // Missing hours are an error unless this is set; then each missing hour is
  // filled by linear interpolation between its neighbours and listed in
  // HourlySeries::filled.
  bool fill_gaps = false;
  // One hour in the time unit. 0 = infer it: the smallest interval between
  // consecutive rows (3600 for seconds, 1 for hour indices).
  int64_t step = 0;
};

// Builds a series from rows in file order. Errors (INVALID_ARGUMENT) name the
// source, the line and the field:
//   "demand.csv:7: hour_start_s: 3600 repeats line 6"
//   "demand.csv:9: hour_start_s: 7200 comes before line 8's 10800 (rows must be sorted by time)"
//   "demand.csv:12: hour_start_s: 3 hours missing after line 11 (39600); pass --fill-gaps to interpolate them"
//   "demand.csv:5: hour_start_s: 5400 is not a whole number of steps (3600) after line 4"
// Fewer than two rows is an error too (the step cannot be known).
absl::StatusOr<HourlySeries> MakeHourlySeries(const std::vector<RawPoint>& points,
                                              const SeriesOptions& options);

// OK when `series` holds at least two full seasons of `period` hours; else
// INVALID_ARGUMENT "SOURCE: FIELD: 40 hours is shorter than two seasons of 24 hours (48)".
absl::Status CheckTwoSeasons(const HourlySeries& series, int period, const SeriesOptions& options);

}  // namespace tidegate::forecast

#endif  // TIDEGATE_FORECAST_SERIES_H_
