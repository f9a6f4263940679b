// Forecast one hourly series (docs/design.md §6): backtest every candidate model
// on the same hold-out, keep the one with the lowest MASE (ties: the earlier
// candidate, i.e. the simpler one), refit it on the whole series and forecast
// `horizon` hours with P10/P50/P90/P99 per step.
//
// Quantiles come from the chosen model's backtest residuals at the same step
// (steps beyond the backtest horizon reuse its last step): P_q(h) =
// forecast(h) + Q_q(residuals at h). So the P50 is the point forecast
// corrected by the median error, and the bands are as wide as the model's
// real errors were. When the history has no negative value (GPU demand),
// quantiles are clipped at 0.
//
// Threading: pure; progress, when asked for, is reported on the caller's thread.
#ifndef TIDEGATE_FORECAST_FORECASTER_H_
#define TIDEGATE_FORECAST_FORECASTER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "forecast/backtest.h"
#include "forecast/model.h"

namespace tidegate::forecast {

struct ForecastOptions {
  int horizon = 168;                    // hours to forecast; >= 1.
  // Candidates in preference order; one entry forces that model.
  std::vector<ModelSpec> candidates = DefaultCandidates();
  int backtest_horizon = 0;             // 0 = min(horizon, 168).
  double holdout_fraction = 0.3;        // of the series, for the backtest.
  int64_t max_holdout = 12 * kWeek;     // cap on hold-out hours.
  bool refit = true;                    // refit the chosen model on all hours.
  FitOptions fit;
  // Called before each fit: (model name, index, total fits).
  std::function<void(const std::string&, int, int)> on_progress;
};

struct QuantileForecast {
  double p10 = 0, p50 = 0, p90 = 0, p99 = 0;
};

struct CandidateResult {
  ModelSpec spec;
  bool skipped = false;
  std::string skip_reason;   // e.g. "needs 336 training hours, has 200".
  double mae = 0, mase = 0, pinball = 0;
  ModelParams params;        // fitted on the training part.
  double train_sse = 0;
};

struct ForecastResult {
  ModelSpec model;                      // the chosen one.
  ModelParams params;                   // its final fit.
  double sse = 0;                       // its final fit's one-step SSE.
  BacktestSplit split;
  double scale = 0;                     // MASE denominator.
  int64_t origins = 0;                  // backtest origins.
  std::vector<CandidateResult> candidates;  // in candidate order.
  std::vector<double> point;            // horizon values.
  std::vector<QuantileForecast> quantiles;  // horizon values.
  // The chosen model's sorted backtest residuals per step (backtest horizon
  // entries): demand scenarios for reservation sizing.
  std::vector<std::vector<double>> residuals;
  bool clipped_at_zero = false;

  const CandidateResult& Chosen() const;
};

// INVALID_ARGUMENT when the series is too short for any candidate (fewer than
// two seasons of the shortest period plus a hold-out) or the options are bad.
absl::StatusOr<ForecastResult> ForecastSeries(const std::vector<double>& y,
                                              const ForecastOptions& options);

// Demand scenarios over the forecast: for every step h and every backtest
// residual r at h (the last backtest step for h beyond it), forecast(h) + r,
// clipped at 0 when the result is. What reservation sizing integrates over.
std::vector<double> DemandScenarios(const ForecastResult& result);

}  // namespace tidegate::forecast

#endif  // TIDEGATE_FORECAST_FORECASTER_H_
