#include "broker/sim/percentile.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace tidegate::sim {

std::optional<double> NearestRankPercentile(std::vector<double> samples, double p) {
  if (samples.empty()) return std::nullopt;
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  // p * n / 100 computed so that exact products (e.g. 95% of 20 = 19) do not
  // round up to the next rank through floating-point error.
  const double exact = p * static_cast<double>(n) / 100.0;
  size_t rank = static_cast<size_t>(std::ceil(exact - 1e-9));
  rank = std::clamp<size_t>(rank, 1, n);
  return samples[rank - 1];
}

}  // namespace tidegate::sim
