#include "forecast/series.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace tidegate::forecast {
namespace {

std::string Where(const SeriesOptions& options, int line) {
  if (line <= 0) return absl::StrCat(options.source, ": ", options.time_field, ": ");
  return absl::StrCat(options.source, ":", line, ": ", options.time_field, ": ");
}

}  // namespace

absl::StatusOr<HourlySeries> MakeHourlySeries(const std::vector<RawPoint>& points,
                                              const SeriesOptions& options) {
  if (points.size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        options.source, ": ", options.value_field, ": ", points.size(),
        " rows; a series needs at least two"));
  }
  for (const RawPoint& p : points) {
    if (!std::isfinite(p.value)) {
      return absl::InvalidArgumentError(absl::StrCat(
          options.source, ":", p.line, ": ", options.value_field, ": not a finite number"));
    }
  }
  // 1. Order: strictly increasing times.
  int64_t min_step = 0;
  for (size_t i = 1; i < points.size(); ++i) {
    const RawPoint& prev = points[i - 1];
    const RawPoint& cur = points[i];
    if (cur.time == prev.time) {
      return absl::InvalidArgumentError(absl::StrCat(Where(options, cur.line), cur.time,
                                                     " repeats line ", prev.line));
    }
    if (cur.time < prev.time) {
      return absl::InvalidArgumentError(
          absl::StrCat(Where(options, cur.line), cur.time, " comes before line ", prev.line,
                       "'s ", prev.time, " (rows must be sorted by time)"));
    }
    const int64_t d = cur.time - prev.time;
    if (min_step == 0 || d < min_step) min_step = d;
  }
  const int64_t step = options.step > 0 ? options.step : min_step;

  // 2. Spacing: every interval a whole number of steps; more than one step is
  //    a gap.
  HourlySeries series;
  series.start = points.front().time;
  series.step = step;
  series.values.reserve(points.size());
  series.values.push_back(points.front().value);
  for (size_t i = 1; i < points.size(); ++i) {
    const RawPoint& prev = points[i - 1];
    const RawPoint& cur = points[i];
    const int64_t d = cur.time - prev.time;
    if (d % step != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(Where(options, cur.line), cur.time, " is not a whole number of steps (",
                       step, ") after line ", prev.line, "'s ", prev.time));
    }
    const int64_t missing = d / step - 1;
    if (missing > 0) {
      if (!options.fill_gaps) {
        return absl::InvalidArgumentError(absl::StrCat(
            Where(options, cur.line), missing, missing == 1 ? " hour" : " hours",
            " missing after line ", prev.line, " (", prev.time,
            "); pass --fill-gaps to interpolate them"));
      }
      for (int64_t k = 1; k <= missing; ++k) {
        const double w = static_cast<double>(k) / static_cast<double>(missing + 1);
        series.filled.push_back(series.size());
        series.values.push_back(prev.value + w * (cur.value - prev.value));
      }
    }
    series.values.push_back(cur.value);
  }
  return series;
}

absl::Status CheckTwoSeasons(const HourlySeries& series, int period, const SeriesOptions& options) {
  if (series.size() >= 2 * static_cast<int64_t>(period)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      options.source, ": ", options.value_field, ": ", series.size(),
      " hours is shorter than two seasons of ", period, " hours (", 2 * period, ")"));
}

}  // namespace tidegate::forecast
