// Additive Holt–Winters with one or two seasonal periods and an optional
// damped trend (docs/design.md §6; Taylor 2003 for the double-seasonal form).
//
// Error-correction form, for observation t = 0, 1, ... with seasons of m1 and
// (optionally) m2 hours:
//
//   forecast   ŷ(t) = l + φ·b + s1[t mod m1] + s2[t mod m2]
//   error      e(t) = y(t) − ŷ(t)
//   update     l ← l + φ·b + α·e      b ← φ·b + β·e
//              s1[t mod m1] += γ1·e   s2[t mod m2] += γ2·e
//   h ahead    ŷ(n−1+h) = l + (φ + … + φ^h)·b + s1[(n−1+h) mod m1] + s2[…]
//
// With one season this is exactly statsmodels' ExponentialSmoothing(trend=
// "add", seasonal="add") in component form, with its smoothing_trend = β/α
// and smoothing_seasonal = γ1. Fitting minimises the one-step SSE over
// α ∈ [0,1], β = α·β* with β* ∈ [0,1], γi ∈ [0, 1−α], φ ∈ [0.8, 0.995]
// (damped) or 1, with the bounded Nelder–Mead of nelder_mead.h. The initial
// states alternate with the parameters: for fixed parameters the one-step
// errors are linear in the initial states, so their best values are a least
// squares problem (solved exactly, with a tiny ridge for the directions the
// data cannot tell apart, e.g. a constant moved between level and season).
//
// Threading: pure functions and value types.
#ifndef TIDEGATE_FORECAST_HOLT_WINTERS_H_
#define TIDEGATE_FORECAST_HOLT_WINTERS_H_

#include <memory>
#include <vector>

#include "forecast/model.h"

namespace tidegate::forecast {

// Level and trend from the first cycles' means, seasons from their average
// deviations (the second season, when there is one, takes the whole pattern).
// Needs y.size() >= 2 * spec.LongestPeriod().
HoltWintersInit HeuristicInit(const ModelSpec& spec, const std::vector<double>& y);

// Sum of squared one-step errors over y, from `init` with `params`.
double OneStepSse(const ModelSpec& spec, const ModelParams& params, const HoltWintersInit& init,
                  const std::vector<double>& y);

// The initial states that minimise OneStepSse for fixed params.
HoltWintersInit LeastSquaresInit(const ModelSpec& spec, const ModelParams& params,
                                 const std::vector<double>& y);

struct HoltWintersFit {
  ModelParams params;
  HoltWintersInit init;
  double sse = 0;
  int evaluations = 0;
};

// Fits parameters and initial states (see the file comment). Deterministic.
// Needs y.size() >= 2 * spec.LongestPeriod() (FitModel checks).
HoltWintersFit FitHoltWinters(const ModelSpec& spec, const std::vector<double>& y,
                              const FitOptions& options);

// The fitted model run through y: a ModelState positioned after y.
std::unique_ptr<ModelState> MakeHoltWintersState(const ModelSpec& spec, const HoltWintersFit& fit,
                                                 const std::vector<double>& y);

}  // namespace tidegate::forecast

#endif  // TIDEGATE_FORECAST_HOLT_WINTERS_H_
