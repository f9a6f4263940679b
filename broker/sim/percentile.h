// Nearest-rank percentiles for the simulator's summary (wait p50/p95, reclaim
// latency p99). Deterministic: no interpolation, so the answer is always one
// of the samples.
#ifndef TIDEGATE_BROKER_SIM_PERCENTILE_H_
#define TIDEGATE_BROKER_SIM_PERCENTILE_H_

#include <optional>
#include <vector>

namespace tidegate::sim {

// The nearest-rank p-th percentile (0 < p <= 100) of `samples`: sort them
// ascending and take the ceil(p/100 * N)-th (1-based; rank 1 when p/100 * N
// rounds to 0). nullopt when `samples` is empty. `samples` is taken by value
// and sorted.
std::optional<double> NearestRankPercentile(std::vector<double> samples, double p);

}  // namespace tidegate::sim

#endif  // TIDEGATE_BROKER_SIM_PERCENTILE_H_
