// An SVG chart of a forecast: recent history, the P10–P90 band,
// the P50 line and, when given, the reserved level, on labelled axes. Plain
// SVG 1.1 text with no script, no external font and no plotting library, so
// it opens in any browser and diffs as text.
//
// Threading: pure function.
#ifndef TIDEGATE_FORECAST_SVG_PLOT_H_
#define TIDEGATE_FORECAST_SVG_PLOT_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/time/civil_time.h"
#include "forecast/forecaster.h"

namespace tidegate::forecast {

struct PlotInput {
  std::string title;                     // e.g. "philly-pollux.hourly.csv: demand_gpus".
  std::string y_label = "GPUs";
  std::vector<double> history;           // the hours before the forecast, oldest first.
  std::vector<QuantileForecast> forecast;
  std::optional<double> reserved;        // a horizontal line, labelled.
  // Wallclock time of the first forecast hour; x labels are dates when known,
  // hours relative to the forecast start ("-48h", "+24h") otherwise.
  std::optional<absl::CivilHour> forecast_start;
  int width = 960;
  int height = 420;
};

// The chart as an SVG document. History longer than max(2 × horizon, 336)
// hours is cut to its most recent part.
std::string RenderForecastSvg(const PlotInput& input);

// "1, 2, 5 × 10^k" ticks covering [lo, hi], about `target` of them. Exposed
// for tests.
std::vector<double> NiceTicks(double lo, double hi, int target);

}  // namespace tidegate::forecast

#endif  // TIDEGATE_FORECAST_SVG_PLOT_H_
