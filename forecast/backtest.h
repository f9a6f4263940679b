// Rolling-origin backtest (docs/design.md §6): fit a model on the first part of a
// series, then stand at every hour of the rest (the hold-out), forecast up to
// `horizon` hours ahead with the parameters fixed, and compare with what
// happened. The same origins and steps score every model, so their errors
// compare directly.
//
//   MAE      mean |actual − forecast| over all (origin, step) pairs.
//   MASE     MAE / the in-sample MAE of the one-step daily seasonal naive
//            forecast on the training part (Hyndman & Koehler 2006). The
//            seasonal naive models are scored the same way, so "beats
//            seasonal naive" means a lower MASE than theirs.
//   pinball  mean pinball loss of the P10/P50/P90/P99 forecasts built from
//            the same residuals (forecast + residual quantile per step): an
//            in-sample measure of how tight and calibrated the bands are.
//
// Threading: pure functions.
#ifndef TIDEGATE_FORECAST_BACKTEST_H_
#define TIDEGATE_FORECAST_BACKTEST_H_

#include <array>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "forecast/model.h"

namespace tidegate::forecast {

inline constexpr std::array<double, 4> kQuantileLevels = {0.10, 0.50, 0.90, 0.99};

// Where the hold-out starts and how far each origin looks.
struct BacktestSplit {
  int64_t train = 0;    // hours used to fit; the hold-out is the rest.
  int horizon = 0;      // steps scored per origin (fewer near the end).
};

// train = n − min(round(holdout_fraction·n), max_holdout), and at least 48.
// INVALID_ARGUMENT if the series cannot leave 48 training hours and 1 hold-out hour.
absl::StatusOr<BacktestSplit> ChooseSplit(int64_t n, int horizon, double holdout_fraction,
                                          int64_t max_holdout);

struct BacktestScore {
  double mae = 0;
  double mase = 0;      // +inf when the scale is 0 and the MAE is not.
  double pinball = 0;
  int64_t origins = 0;
  int64_t pairs = 0;    // (origin, step) pairs scored.
  // residuals[h - 1] = actual − forecast at step h, over origins, sorted.
  std::vector<std::vector<double>> residuals;
};

// Walks `model` (fitted on y[0, split.train)) through the hold-out.
BacktestScore Backtest(const ModelState& model, const std::vector<double>& y,
                       const BacktestSplit& split, double scale);

// The in-sample MAE of the one-step seasonal naive forecast with `period` over
// y[0, end): the MASE scale. 0 for a series that repeats exactly.
double NaiveScale(const std::vector<double>& y, int64_t end, int period);

// Quantile q of sorted values (linear interpolation between order statistics).
double SortedQuantile(const std::vector<double>& sorted, double q);

// The pinball (quantile) loss of predicting `quantile` at level q when
// `actual` happened.
double PinballLoss(double actual, double quantile, double q);

}  // namespace tidegate::forecast

#endif  // TIDEGATE_FORECAST_BACKTEST_H_
