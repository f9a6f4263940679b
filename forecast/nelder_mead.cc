#include "forecast/nelder_mead.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace tidegate::forecast {
namespace {

void Clamp(std::vector<double>& x) {
  for (double& v : x) v = std::clamp(v, 0.0, 1.0);
}

}  // namespace

// About 105 lines: the textbook iteration (order, reflect, expand, contract,
// shrink) in one loop, as published, so it can be checked step by step.
NelderMeadResult MinimizeNelderMead(const std::function<double(const std::vector<double>&)>& f,
                                    std::vector<double> start, const NelderMeadOptions& options) {
  const size_t d = start.size();
  Clamp(start);
  NelderMeadResult result;
  result.x = start;
  int evals = 0;
  auto eval = [&](const std::vector<double>& x) {
    ++evals;
    const double v = f(x);
    return std::isfinite(v) ? v : std::numeric_limits<double>::max();
  };
  result.value = eval(start);
  if (d == 0) {
    result.evaluations = evals;
    return result;
  }

  // Standard coefficients: reflection 1, expansion 2, contraction 1/2, shrink 1/2.
  for (int round = 0; round <= options.restarts && evals < options.max_evaluations; ++round) {
    std::vector<std::vector<double>> pts(d + 1, result.x);
    std::vector<double> vals(d + 1, result.value);
    const double step = options.initial_step / (1 << round);
    for (size_t i = 0; i < d; ++i) {
      double& xi = pts[i + 1][i];
      xi = xi + step <= 1.0 ? xi + step : xi - step;
      vals[i + 1] = eval(pts[i + 1]);
    }
    std::vector<size_t> order(d + 1);
    std::vector<double> centroid(d), xr(d), xe(d), xc(d);
    while (evals < options.max_evaluations) {
      std::iota(order.begin(), order.end(), 0);
      // Ties keep index order: deterministic.
      std::stable_sort(order.begin(), order.end(),
                       [&](size_t a, size_t b) { return vals[a] < vals[b]; });
      const size_t best = order.front();
      const size_t worst = order.back();
      const size_t second = order[d - 1];
      double spread = 0;
      for (size_t i = 0; i <= d; ++i) {
        for (size_t k = 0; k < d; ++k) {
          spread = std::max(spread, std::fabs(pts[i][k] - pts[best][k]));
        }
      }
      if (vals[worst] - vals[best] <= options.tolerance * (std::fabs(vals[best]) + 1e-300) &&
          spread < 1e-6) {
        break;
      }
      if (spread < 1e-10) break;
      std::fill(centroid.begin(), centroid.end(), 0.0);
      for (size_t i = 0; i <= d; ++i) {
        if (i == worst) continue;
        for (size_t k = 0; k < d; ++k) centroid[k] += pts[i][k] / static_cast<double>(d);
      }
      for (size_t k = 0; k < d; ++k) xr[k] = centroid[k] + (centroid[k] - pts[worst][k]);
      Clamp(xr);
      const double fr = eval(xr);
      if (fr < vals[best]) {
        for (size_t k = 0; k < d; ++k) xe[k] = centroid[k] + 2.0 * (centroid[k] - pts[worst][k]);
        Clamp(xe);
        const double fe = eval(xe);
        if (fe < fr) {
          pts[worst] = xe;
          vals[worst] = fe;
        } else {
          pts[worst] = xr;
          vals[worst] = fr;
        }
        continue;
      }
      if (fr < vals[second]) {
        pts[worst] = xr;
        vals[worst] = fr;
        continue;
      }
      // Contract: outside if the reflection helped a little, inside otherwise.
      const bool outside = fr < vals[worst];
      for (size_t k = 0; k < d; ++k) {
        const double towards = outside ? xr[k] : pts[worst][k];
        xc[k] = centroid[k] + 0.5 * (towards - centroid[k]);
      }
      Clamp(xc);
      const double fc = eval(xc);
      if (fc < (outside ? fr : vals[worst])) {
        pts[worst] = xc;
        vals[worst] = fc;
        continue;
      }
      // Shrink towards the best point.
      for (size_t i = 0; i <= d; ++i) {
        if (i == best) continue;
        for (size_t k = 0; k < d; ++k) pts[i][k] = pts[best][k] + 0.5 * (pts[i][k] - pts[best][k]);
        vals[i] = eval(pts[i]);
        if (evals >= options.max_evaluations) break;
      }
    }
    for (size_t i = 0; i <= d; ++i) {
      if (vals[i] < result.value) {
        result.value = vals[i];
        result.x = pts[i];
      }
    }
  }
  result.evaluations = evals;
  return result;
}

}  // namespace tidegate::forecast
