// A bounded, deterministic Nelder–Mead minimiser over the unit box [0, 1]^d.
//
// Callers map their parameters onto the unit box (forecast/holt_winters.cc
// does). Points that would leave the box are clamped onto it, so every
// evaluation is feasible. No randomness: the same function and start give the
// same result, bit for bit, on the same build.
//
// Threading: pure function; `f` is called on the caller's thread only.
#ifndef TIDEGATE_FORECAST_NELDER_MEAD_H_
#define TIDEGATE_FORECAST_NELDER_MEAD_H_

#include <functional>
#include <vector>

namespace tidegate::forecast {

struct NelderMeadOptions {
  int max_evaluations = 400;   // hard cap on calls to f.
  double initial_step = 0.15;  // simplex edge along each axis (flipped near the upper bound).
  // Stop when the simplex's best and worst values differ by less than
  // tolerance * (|best| + tiny) and its points are within 1e-6 of each other.
  double tolerance = 1e-8;
  int restarts = 1;            // re-seed the simplex at the best point this many times.
};

struct NelderMeadResult {
  std::vector<double> x;  // in [0, 1]^d.
  double value = 0;
  int evaluations = 0;
};

// Minimises f over [0, 1]^d starting from `start` (clamped into the box).
NelderMeadResult MinimizeNelderMead(const std::function<double(const std::vector<double>&)>& f,
                                    std::vector<double> start,
                                    const NelderMeadOptions& options = {});

}  // namespace tidegate::forecast

#endif  // TIDEGATE_FORECAST_NELDER_MEAD_H_
