#include "forecast/forecaster.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace tidegate::forecast {

const CandidateResult& ForecastResult::Chosen() const {
  for (const CandidateResult& c : candidates) {
    if (c.spec.Name() == model.Name()) return c;
  }
  return candidates.front();
}

// About 145 lines: the pipeline in its order — check the series, split it,
// fit and backtest every candidate, pick the best, refit it on everything,
// quantiles from its backtest residuals. The fits live in one map that the
// later steps reuse (combination members, the warm-started refit).
absl::StatusOr<ForecastResult> ForecastSeries(const std::vector<double>& y,
                                              const ForecastOptions& options) {
  if (options.horizon < 1) {
    return absl::InvalidArgumentError(absl::StrCat("horizon: ", options.horizon,
                                                   " must be at least 1 hour"));
  }
  if (options.candidates.empty()) return absl::InvalidArgumentError("no candidate models");
  for (double v : y) {
    if (!std::isfinite(v)) return absl::InvalidArgumentError("series has a non-finite value");
  }
  const int64_t n = static_cast<int64_t>(y.size());
  int min_period = options.candidates.front().LongestPeriod();
  for (const ModelSpec& s : options.candidates) min_period = std::min(min_period, s.LongestPeriod());
  if (n < 2 * static_cast<int64_t>(min_period)) {
    return absl::InvalidArgumentError(absl::StrCat(n, " hours is shorter than two seasons of ",
                                                   min_period, " hours (", 2 * min_period, ")"));
  }
  const int bt_horizon =
      options.backtest_horizon > 0 ? options.backtest_horizon : std::min(options.horizon, kWeek);
  absl::StatusOr<BacktestSplit> split =
      ChooseSplit(n, bt_horizon, options.holdout_fraction, options.max_holdout);
  if (!split.ok()) return split.status();

  ForecastResult result;
  result.split = *split;
  result.scale = NaiveScale(y, split->train, kDay);
  const std::vector<double> train(y.begin(), y.begin() + split->train);
  const int total = static_cast<int>(options.candidates.size()) + (options.refit ? 1 : 0);

  // Fits on the training part, reusing members fitted as candidates for the
  // combination. `fits` keeps every fit (states cloned on use).
  std::map<std::string, FittedModel> fits;
  auto Copy = [](const FittedModel& f) {
    FittedModel c;
    c.spec = f.spec;
    c.params = f.params;
    c.init = f.init;
    c.sse = f.sse;
    c.evaluations = f.evaluations;
    for (const FittedModel& m : f.members) {
      FittedModel mc;
      mc.spec = m.spec;
      mc.params = m.params;
      mc.init = m.init;
      c.members.push_back(std::move(mc));
    }
    if (f.state) c.state = f.state->Clone();
    return c;
  };
  auto FitCached = [&](const ModelSpec& spec) -> absl::StatusOr<FittedModel> {
    if (spec.kind == ModelKind::kCombination) {
      FittedModel combo;
      combo.spec = spec;
      std::vector<std::unique_ptr<ModelState>> states;
      for (const ModelSpec& m : CombinationMembers()) {
        auto it = fits.find(m.Name());
        if (it == fits.end()) break;
        FittedModel member = Copy(it->second);
        states.push_back(std::move(member.state));
        combo.members.push_back(std::move(member));
      }
      if (states.size() == CombinationMembers().size()) {
        combo.state = MakeMeanState(std::move(states));
        fits[spec.Name()] = Copy(combo);
        return combo;
      }
    }
    absl::StatusOr<FittedModel> f = FitModel(spec, train, options.fit);
    if (f.ok()) fits[spec.Name()] = Copy(*f);
    return f;
  };

  int best = -1;
  std::vector<std::vector<double>> best_residuals;
  std::unique_ptr<ModelState> best_state;
  for (size_t i = 0; i < options.candidates.size(); ++i) {
    CandidateResult c;
    c.spec = options.candidates[i];
    if (options.on_progress) options.on_progress(c.spec.Name(), static_cast<int>(i), total);
    const int64_t need = 2 * static_cast<int64_t>(c.spec.LongestPeriod());
    if (split->train < need) {
      c.skipped = true;
      c.skip_reason = absl::StrCat("needs ", need, " training hours, has ", split->train);
      result.candidates.push_back(std::move(c));
      continue;
    }
    absl::StatusOr<FittedModel> fitted = FitCached(c.spec);
    if (!fitted.ok()) return fitted.status();
    BacktestScore score = Backtest(*fitted->state, y, *split, result.scale);
    c.mae = score.mae;
    c.mase = score.mase;
    c.pinball = score.pinball;
    c.params = fitted->params;
    c.train_sse = fitted->sse;
    result.origins = score.origins;
    if (best < 0 || c.mae < result.candidates[best].mae) {
      best = static_cast<int>(result.candidates.size());
      best_residuals = std::move(score.residuals);
      best_state = std::move(fitted->state);
      result.params = fitted->params;
      result.sse = fitted->sse;
    }
    result.candidates.push_back(std::move(c));
  }
  if (best < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        n, " hours is too short for every model asked for: ",
        result.candidates.front().spec.Name(), " ", result.candidates.front().skip_reason));
  }
  result.model = result.candidates[best].spec;
  result.residuals = std::move(best_residuals);

  // The final state: refit on everything, or walk the training fit through
  // the hold-out.
  std::unique_ptr<ModelState> state;
  if (options.refit) {
    if (options.on_progress) options.on_progress(result.model.Name(), total - 1, total);
    // Warm-started from the training fit: same first hour, more data.
    FitOptions refit = options.fit;
    refit.warm_start = &fits.at(result.model.Name());
    absl::StatusOr<FittedModel> full = FitModel(result.model, y, refit);
    if (!full.ok()) return full.status();
    result.params = full->params;
    result.sse = full->sse;
    state = std::move(full->state);
  } else {
    state = std::move(best_state);
    for (int64_t t = split->train; t < n; ++t) state->Observe(y[t]);
  }
  result.point.resize(static_cast<size_t>(options.horizon));
  state->Forecast(options.horizon, result.point.data());

  result.clipped_at_zero = std::all_of(y.begin(), y.end(), [](double v) { return v >= 0; });
  const double floor = result.clipped_at_zero ? 0.0 : -std::numeric_limits<double>::infinity();
  result.quantiles.resize(result.point.size());
  for (size_t h = 0; h < result.point.size(); ++h) {
    const std::vector<double>& rs =
        result.residuals[std::min(h, result.residuals.size() - 1)];
    QuantileForecast& q = result.quantiles[h];
    const double f = result.point[h];
    q.p10 = std::max(floor, f + SortedQuantile(rs, 0.10));
    q.p50 = std::max(floor, f + SortedQuantile(rs, 0.50));
    q.p90 = std::max(floor, f + SortedQuantile(rs, 0.90));
    q.p99 = std::max(floor, f + SortedQuantile(rs, 0.99));
  }
  return result;
}

std::vector<double> DemandScenarios(const ForecastResult& result) {
  std::vector<double> out;
  if (result.residuals.empty()) return out;
  for (size_t h = 0; h < result.point.size(); ++h) {
    const std::vector<double>& rs = result.residuals[std::min(h, result.residuals.size() - 1)];
    for (double r : rs) {
      const double d = result.point[h] + r;
      out.push_back(result.clipped_at_zero ? std::max(0.0, d) : d);
    }
  }
  return out;
}

}  // namespace tidegate::forecast
