#include "forecast/holt_winters.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "forecast/nelder_mead.h"

namespace tidegate::forecast {
namespace {

constexpr double kPhiLow = 0.8;
constexpr double kPhiHigh = 0.995;

bool HasTrend(const ModelSpec& spec) { return spec.trend != Trend::kNone; }
bool HasSecond(const ModelSpec& spec) { return spec.period2 > 0; }

// The unit-box coordinates the optimiser moves in, and their meaning.
ModelParams FromUnit(const ModelSpec& spec, const std::vector<double>& u) {
  ModelParams p;
  size_t i = 0;
  p.alpha = u[i++];
  if (HasTrend(spec)) p.beta = p.alpha * u[i++];
  p.gamma1 = (1 - p.alpha) * u[i++];
  if (HasSecond(spec)) p.gamma2 = (1 - p.alpha) * u[i++];
  p.phi = spec.trend == Trend::kDamped ? kPhiLow + (kPhiHigh - kPhiLow) * u[i++] : 1.0;
  return p;
}

// The inverse of FromUnit (coordinates clamped into [0, 1]).
std::vector<double> ToUnit(const ModelSpec& spec, const ModelParams& p) {
  auto ratio = [](double a, double b) { return b > 0 ? std::clamp(a / b, 0.0, 1.0) : 0.0; };
  std::vector<double> u;
  u.push_back(std::clamp(p.alpha, 0.0, 1.0));
  if (HasTrend(spec)) u.push_back(ratio(p.beta, p.alpha));
  u.push_back(ratio(p.gamma1, 1 - p.alpha));
  if (HasSecond(spec)) u.push_back(ratio(p.gamma2, 1 - p.alpha));
  if (spec.trend == Trend::kDamped) {
    u.push_back(std::clamp((p.phi - kPhiLow) / (kPhiHigh - kPhiLow), 0.0, 1.0));
  }
  return u;
}

std::vector<double> StartUnit(const ModelSpec& spec, double alpha) {
  std::vector<double> u;
  u.push_back(alpha);
  if (HasTrend(spec)) u.push_back(0.05);
  u.push_back(0.1);
  if (HasSecond(spec)) u.push_back(0.1);
  if (spec.trend == Trend::kDamped) u.push_back((0.98 - kPhiLow) / (kPhiHigh - kPhiLow));
  return u;
}

// The recursion of the file comment, from `state`, over y; returns the SSE.
// s1/s2 are indexed from j1/j2 for the first observation.
struct Filter {
  double level = 0;
  double trend = 0;
  std::vector<double> s1, s2;
  int j1 = 0, j2 = 0;  // season slots of the next observation.
};

template <bool kSecond>
double RunFilter(const ModelParams& p, Filter& f, const double* y, size_t n) {
  const double a = p.alpha, be = p.beta, g1 = p.gamma1, g2 = p.gamma2, phi = p.phi;
  const int m1 = static_cast<int>(f.s1.size());
  const int m2 = static_cast<int>(f.s2.size());
  double l = f.level, b = f.trend;
  double* s1 = f.s1.data();
  double* s2 = f.s2.data();
  int j1 = f.j1, j2 = f.j2;
  double sse = 0;
  for (size_t t = 0; t < n; ++t) {
    const double pb = phi * b;
    const double pred = l + pb + s1[j1] + (kSecond ? s2[j2] : 0.0);
    const double e = y[t] - pred;
    sse += e * e;
    l = l + pb + a * e;
    b = pb + be * e;
    s1[j1] += g1 * e;
    if (++j1 == m1) j1 = 0;
    if (kSecond) {
      s2[j2] += g2 * e;
      if (++j2 == m2) j2 = 0;
    }
  }
  f.level = l;
  f.trend = b;
  f.j1 = j1;
  f.j2 = j2;
  return sse;
}

double Run(const ModelParams& p, Filter& f, const double* y, size_t n) {
  return f.s2.empty() ? RunFilter<false>(p, f, y, n) : RunFilter<true>(p, f, y, n);
}

Filter FromInit(const HoltWintersInit& init) {
  Filter f;
  f.level = init.level;
  f.trend = init.trend;
  f.s1 = init.season1;
  f.s2 = init.season2;
  return f;
}

class HoltWintersState final : public ModelState {
 public:
  HoltWintersState(const ModelParams& params, Filter filter)
      : params_(params), filter_(std::move(filter)) {}

  void Observe(double y) override { Run(params_, filter_, &y, 1); }

  void Forecast(int horizon, double* out) const override {
    const int m1 = static_cast<int>(filter_.s1.size());
    const int m2 = static_cast<int>(filter_.s2.size());
    double damp = 0;
    double phi_h = 1;
    int j1 = filter_.j1, j2 = filter_.j2;
    for (int h = 1; h <= horizon; ++h) {
      phi_h *= params_.phi;
      damp += phi_h;
      double v = filter_.level + damp * filter_.trend + filter_.s1[j1];
      if (m2 > 0) v += filter_.s2[j2];
      out[h - 1] = v;
      if (++j1 == m1) j1 = 0;
      if (m2 > 0 && ++j2 == m2) j2 = 0;
    }
  }

  std::unique_ptr<ModelState> Clone() const override {
    return std::make_unique<HoltWintersState>(*this);
  }

 private:
  ModelParams params_;
  Filter filter_;
};

double Mean(const std::vector<double>& y, size_t from, size_t count) {
  double s = 0;
  for (size_t i = from; i < from + count; ++i) s += y[i];
  return s / static_cast<double>(count);
}

// Solves (A + ridge) x = rhs for symmetric positive semi-definite A (upper
// triangle filled, row-major k×k) by Cholesky. Returns false if it fails.
bool SolveRidge(std::vector<double> a, std::vector<double> rhs, size_t k, std::vector<double>* x) {
  double trace = 0;
  for (size_t i = 0; i < k; ++i) trace += a[i * k + i];
  const double ridge = 1e-9 * trace / static_cast<double>(k) + 1e-12;
  for (size_t i = 0; i < k; ++i) {
    a[i * k + i] += ridge;
    for (size_t j = 0; j < i; ++j) a[i * k + j] = a[j * k + i];
  }
  // In place: lower triangle becomes L.
  for (size_t j = 0; j < k; ++j) {
    double d = a[j * k + j];
    for (size_t p = 0; p < j; ++p) d -= a[j * k + p] * a[j * k + p];
    if (!(d > 0)) return false;
    d = std::sqrt(d);
    a[j * k + j] = d;
    for (size_t i = j + 1; i < k; ++i) {
      double s = a[i * k + j];
      for (size_t p = 0; p < j; ++p) s -= a[i * k + p] * a[j * k + p];
      a[i * k + j] = s / d;
    }
  }
  for (size_t i = 0; i < k; ++i) {
    double s = rhs[i];
    for (size_t p = 0; p < i; ++p) s -= a[i * k + p] * rhs[p];
    rhs[i] = s / a[i * k + i];
  }
  for (size_t i = k; i-- > 0;) {
    double s = rhs[i];
    for (size_t p = i + 1; p < k; ++p) s -= a[p * k + i] * rhs[p];
    rhs[i] = s / a[i * k + i];
  }
  for (double v : rhs) {
    if (!std::isfinite(v)) return false;
  }
  *x = std::move(rhs);
  return true;
}

}  // namespace

HoltWintersInit HeuristicInit(const ModelSpec& spec, const std::vector<double>& y) {
  const size_t m = static_cast<size_t>(spec.LongestPeriod());
  const size_t cycles = std::min<size_t>(y.size() / m, 4);
  HoltWintersInit init;
  const double mean1 = Mean(y, 0, m);
  const double mean2 = cycles >= 2 ? Mean(y, m, m) : mean1;
  init.trend = HasTrend(spec) ? (mean2 - mean1) / static_cast<double>(m) : 0.0;
  // mean1 is the level in the middle of the first cycle; step back to t = -1.
  init.level = mean1 - init.trend * (static_cast<double>(m - 1) / 2 + 1);
  std::vector<double> pattern(m, 0.0);
  for (size_t c = 0; c < cycles; ++c) {
    const double mc = Mean(y, c * m, m);
    for (size_t j = 0; j < m; ++j) pattern[j] += (y[c * m + j] - mc) / static_cast<double>(cycles);
  }
  init.season1.assign(static_cast<size_t>(spec.period), 0.0);
  if (HasSecond(spec)) {
    init.season2 = pattern;
  } else {
    init.season1 = pattern;
  }
  return init;
}

double OneStepSse(const ModelSpec& spec, const ModelParams& params, const HoltWintersInit& init,
                  const std::vector<double>& y) {
  Filter f = FromInit(init);
  return Run(params, f, y.data(), y.size());
}

HoltWintersInit LeastSquaresInit(const ModelSpec& spec, const ModelParams& p,
                                 const std::vector<double>& y) {
  const size_t m1 = static_cast<size_t>(spec.period);
  const size_t m2 = HasSecond(spec) ? static_cast<size_t>(spec.period2) : 0;
  const bool trend = HasTrend(spec);
  const size_t off1 = trend ? 2 : 1;
  const size_t off2 = off1 + m1;
  const size_t k = off2 + m2;

  // Each state = (its value when all initial states are 0) + coef · x0.
  double l0 = 0, b0 = 0;
  std::vector<double> s1v(m1, 0.0), s2v(m2, 0.0);
  std::vector<double> lc(k, 0.0), bc(k, 0.0), s1c(m1 * k, 0.0), s2c(m2 * k, 0.0);
  lc[0] = 1;
  if (trend) bc[1] = 1;
  for (size_t j = 0; j < m1; ++j) s1c[j * k + off1 + j] = 1;
  for (size_t j = 0; j < m2; ++j) s2c[j * k + off2 + j] = 1;

  // Normal equations of min Σ (e0 − c·x0)², accumulated in blocks of rows
  // (a rank-kBlock update keeps each row of AᵀA in cache; rows padded to a
  // multiple of 4 so the inner loop vectorises). For large states only the
  // first rows are used: they carry most of the initial states' information
  // and the cost is rows·k².
  constexpr size_t kBlock = 16;
  const size_t kp = (k + 3) & ~size_t{3};
  const size_t rows = std::min(
      y.size(), std::max<size_t>(4 * std::max(m1, m2), static_cast<size_t>(1.2e8 / static_cast<double>(k * k))));
  std::vector<double> ata(k * kp, 0.0), atb(k, 0.0), block(kBlock * kp, 0.0);
  size_t filled = 0;
  auto flush = [&] {
    for (size_t i = 0; i < k; ++i) {
      double* __restrict row = &ata[i * kp];
      const size_t j0 = i & ~size_t{3};
      for (size_t b = 0; b < filled; ++b) {
        const double* __restrict cb = &block[b * kp];
        const double ci = cb[i];
        if (ci == 0) continue;
        for (size_t j = j0; j < kp; ++j) row[j] += ci * cb[j];
      }
    }
    filled = 0;
  };
  size_t j1 = 0, j2 = 0;
  const double phi = p.phi;
  for (size_t t = 0; t < rows; ++t) {
    double* c1 = &s1c[j1 * k];
    double* c2 = m2 > 0 ? &s2c[j2 * k] : nullptr;
    double pred0 = l0 + phi * b0 + s1v[j1] + (m2 > 0 ? s2v[j2] : 0.0);
    double* c = &block[filled * kp];
    for (size_t i = 0; i < k; ++i) c[i] = lc[i] + phi * bc[i] + c1[i] + (c2 ? c2[i] : 0.0);
    const double e0 = y[t] - pred0;
    for (size_t i = 0; i < k; ++i) atb[i] += c[i] * e0;
    // The update with e = e0 − c·x0.
    l0 = l0 + phi * b0 + p.alpha * e0;
    b0 = phi * b0 + p.beta * e0;
    s1v[j1] += p.gamma1 * e0;
    for (size_t i = 0; i < k; ++i) {
      lc[i] = lc[i] + phi * bc[i] - p.alpha * c[i];
      bc[i] = phi * bc[i] - p.beta * c[i];
      c1[i] -= p.gamma1 * c[i];
    }
    if (++j1 == m1) j1 = 0;
    if (m2 > 0) {
      s2v[j2] += p.gamma2 * e0;
      for (size_t i = 0; i < k; ++i) c2[i] -= p.gamma2 * c[i];
      if (++j2 == m2) j2 = 0;
    }
    if (++filled == kBlock) flush();
  }
  flush();
  // Compact the padded rows back to k×k.
  for (size_t i = 1; i < k; ++i) {
    for (size_t j = 0; j < k; ++j) ata[i * k + j] = ata[i * kp + j];
  }
  ata.resize(k * k);
  std::vector<double> x;
  HoltWintersInit init;
  if (!SolveRidge(std::move(ata), std::move(atb), k, &x)) return HeuristicInit(spec, y);
  init.level = x[0];
  init.trend = trend ? x[1] : 0.0;
  init.season1.assign(x.begin() + off1, x.begin() + off2);
  init.season2.assign(x.begin() + off2, x.end());
  return init;
}

HoltWintersFit FitHoltWinters(const ModelSpec& spec, const std::vector<double>& y,
                              const FitOptions& options) {
  HoltWintersFit fit;
  const FittedModel* warm = options.warm_start;
  if (warm != nullptr && warm->spec.Name() != spec.Name()) warm = nullptr;
  fit.init = warm != nullptr ? warm->init : HeuristicInit(spec, y);
  auto objective = [&](const std::vector<double>& u) {
    return OneStepSse(spec, FromUnit(spec, u), fit.init, y);
  };
  std::vector<double> start;
  if (warm != nullptr) {
    start = ToUnit(spec, warm->params);
  } else {
    // Start from the best of a few levels of α (deterministic).
    double best = 0;
    for (double alpha : {0.05, 0.2, 0.5, 0.9}) {
      std::vector<double> u = StartUnit(spec, alpha);
      const double v = objective(u);
      ++fit.evaluations;
      if (start.empty() || v < best) {
        best = v;
        start = u;
      }
    }
  }
  NelderMeadOptions nm;
  nm.max_evaluations = options.max_evaluations;
  if (warm != nullptr) {
    nm.initial_step = 0.05;
    nm.restarts = 0;
  }
  NelderMeadResult r = MinimizeNelderMead(objective, start, nm);
  fit.evaluations += r.evaluations;
  // A second season makes the initial-state least squares costly (rows·k²
  // with k = 2 + 24 + 168): one round there.
  int rounds = HasSecond(spec) ? std::min(options.init_rounds, 1) : options.init_rounds;
  if (warm != nullptr && HasSecond(spec)) rounds = 0;  // single season: cheap, keep.
  for (int round = 0; round < rounds; ++round) {
    HoltWintersInit better = LeastSquaresInit(spec, FromUnit(spec, r.x), y);
    const double v = OneStepSse(spec, FromUnit(spec, r.x), better, y);
    if (!(v < r.value)) break;
    fit.init = std::move(better);
    nm.restarts = 0;
    nm.initial_step = 0.05;
    NelderMeadResult again = MinimizeNelderMead(objective, r.x, nm);
    fit.evaluations += again.evaluations;
    r = again.value <= v ? std::move(again) : NelderMeadResult{r.x, v, 0};
  }
  fit.params = FromUnit(spec, r.x);
  fit.sse = OneStepSse(spec, fit.params, fit.init, y);
  return fit;
}

std::unique_ptr<ModelState> MakeHoltWintersState(const ModelSpec& spec, const HoltWintersFit& fit,
                                                 const std::vector<double>& y) {
  Filter f = FromInit(fit.init);
  Run(fit.params, f, y.data(), y.size());
  return std::make_unique<HoltWintersState>(fit.params, std::move(f));
}

}  // namespace tidegate::forecast
