#include "forecast/backtest.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace tidegate::forecast {

absl::StatusOr<BacktestSplit> ChooseSplit(int64_t n, int horizon, double holdout_fraction,
                                          int64_t max_holdout) {
  constexpr int64_t kMinTrain = 2 * kDay;
  int64_t holdout = std::llround(holdout_fraction * static_cast<double>(n));
  holdout = std::clamp<int64_t>(holdout, 1, std::max<int64_t>(1, max_holdout));
  if (n - holdout < kMinTrain) holdout = n - kMinTrain;
  if (holdout < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        n, " hours is too short to backtest: need ", kMinTrain + 1,
        " (two daily seasons to fit, one hour to score)"));
  }
  BacktestSplit split;
  split.train = n - holdout;
  split.horizon = std::max(1, horizon);
  return split;
}

double NaiveScale(const std::vector<double>& y, int64_t end, int period) {
  double sum = 0;
  int64_t count = 0;
  for (int64_t t = period; t < end; ++t) {
    sum += std::fabs(y[t] - y[t - period]);
    ++count;
  }
  return count > 0 ? sum / static_cast<double>(count) : 0.0;
}

double SortedQuantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double w = pos - static_cast<double>(lo);
  return sorted[lo] + w * (sorted[hi] - sorted[lo]);
}

double PinballLoss(double actual, double quantile, double q) {
  const double d = actual - quantile;
  return d >= 0 ? q * d : (q - 1) * d;
}

BacktestScore Backtest(const ModelState& model, const std::vector<double>& y,
                       const BacktestSplit& split, double scale) {
  BacktestScore score;
  const int64_t n = static_cast<int64_t>(y.size());
  const int horizon = split.horizon;
  score.residuals.assign(static_cast<size_t>(horizon), {});
  std::unique_ptr<ModelState> state = model.Clone();
  std::vector<double> f(static_cast<size_t>(horizon));
  double abs_sum = 0;
  for (int64_t o = split.train; o < n; ++o) {
    const int steps = static_cast<int>(std::min<int64_t>(horizon, n - o));
    state->Forecast(steps, f.data());
    for (int h = 0; h < steps; ++h) {
      const double r = y[o + h] - f[h];
      abs_sum += std::fabs(r);
      score.residuals[h].push_back(r);
    }
    score.pairs += steps;
    ++score.origins;
    state->Observe(y[o]);
  }
  score.mae = score.pairs > 0 ? abs_sum / static_cast<double>(score.pairs) : 0.0;
  if (scale > 0) {
    score.mase = score.mae / scale;
  } else {
    score.mase = score.mae == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  }
  // In-sample pinball of "forecast + residual quantile": Σ ρ_q(r − Q_q(r)).
  double pin = 0;
  int64_t count = 0;
  for (std::vector<double>& rs : score.residuals) {
    std::sort(rs.begin(), rs.end());
    for (double q : kQuantileLevels) {
      const double qr = SortedQuantile(rs, q);
      for (double r : rs) pin += PinballLoss(r, qr, q);
      count += static_cast<int64_t>(rs.size());
    }
  }
  score.pinball = count > 0 ? pin / static_cast<double>(count) : 0.0;
  return score;
}

}  // namespace tidegate::forecast
