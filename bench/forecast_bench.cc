// Forecast speed: fitting double-seasonal Holt–Winters on 4,400
// hourly points (target < 200 ms), and forecasting 1,000 team series with
// backtested model choice (target < 30 s on a 2-core machine).
//
//   build/bin/bench_forecast
//   build/bin/bench_forecast --benchmark_filter=Fit
//
// Series are synthetic and deterministic (a fixed LCG): a wandering level,
// a daily and a weekly rhythm and noise, clipped at 0 like GPU demand.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <thread>
#include <vector>

#include "benchmark/benchmark.h"
#include "forecast/forecaster.h"
#include "forecast/model.h"

namespace tidegate::forecast {
namespace {

class Lcg {
 public:
  explicit Lcg(uint64_t seed) : state_(seed) {}
  double Uniform() {  // [0, 1)
    state_ = state_ * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(state_ >> 11) / 9007199254740992.0;
  }

 private:
  uint64_t state_;
};

std::vector<double> TeamSeries(int hours, uint64_t seed) {
  Lcg rng(seed);
  const double base = 5 + 60 * rng.Uniform();
  const double daily = base * (0.05 + 0.3 * rng.Uniform());
  const double weekend = base * 0.3 * rng.Uniform();
  double level = 0;
  std::vector<double> y(hours);
  for (int t = 0; t < hours; ++t) {
    level += (rng.Uniform() - 0.5) * base * 0.05;
    level *= 0.995;
    const int hour = t % 24, day = (t / 24) % 7;
    double v = base + level + daily * std::sin(2 * 3.14159265358979 * (hour - 8) / 24.0) -
               (day >= 5 ? weekend : 0) + (rng.Uniform() - 0.5) * base * 0.1;
    y[t] = std::max(0.0, std::round(v));  // whole GPUs, like a ledger.
  }
  return y;
}

void BM_FitDoubleSeasonalHoltWinters(benchmark::State& state) {
  const std::vector<double> y = TeamSeries(static_cast<int>(state.range(0)), 7);
  const ModelSpec spec = ModelSpec::HoltWinters(kDay, kWeek, Trend::kDamped);
  for (auto _ : state) {
    absl::StatusOr<FittedModel> m = FitModel(spec, y);
    benchmark::DoNotOptimize(m);
  }
}
BENCHMARK(BM_FitDoubleSeasonalHoltWinters)->Arg(4400)->Unit(benchmark::kMillisecond);

void BM_FitDailyHoltWinters(benchmark::State& state) {
  const std::vector<double> y = TeamSeries(static_cast<int>(state.range(0)), 7);
  const ModelSpec spec = ModelSpec::HoltWinters(kDay, 0, Trend::kDamped);
  for (auto _ : state) {
    absl::StatusOr<FittedModel> m = FitModel(spec, y);
    benchmark::DoNotOptimize(m);
  }
}
BENCHMARK(BM_FitDailyHoltWinters)->Arg(4400)->Unit(benchmark::kMillisecond);

// One series end to end: backtest of every default candidate, refit, quantiles.
void BM_ForecastOneSeries(benchmark::State& state) {
  const std::vector<double> y = TeamSeries(static_cast<int>(state.range(0)), 11);
  ForecastOptions options;
  options.horizon = 168;
  for (auto _ : state) {
    absl::StatusOr<ForecastResult> r = ForecastSeries(y, options);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_ForecastOneSeries)->Arg(744)->Arg(2160)->Arg(4400)->Unit(benchmark::kMillisecond);

// 1,000 team series of range(0) hours (744 = a month, like Helios Earth's),
// forecast 168 hours each, on range(1) threads (series split evenly).
void BM_Forecast1000TeamSeries(benchmark::State& state) {
  const int hours = static_cast<int>(state.range(0));
  const int threads = static_cast<int>(state.range(1));
  std::vector<std::vector<double>> series;
  for (int i = 0; i < 1000; ++i) series.push_back(TeamSeries(hours, 1000 + i));
  ForecastOptions options;
  options.horizon = 168;
  for (auto _ : state) {
    std::vector<int> ok(series.size(), 0);
    std::vector<std::thread> pool;
    for (int w = 0; w < threads; ++w) {
      pool.emplace_back([&, w] {
        for (size_t i = static_cast<size_t>(w); i < series.size(); i += threads) {
          ok[i] = ForecastSeries(series[i], options).ok() ? 1 : 0;
        }
      });
    }
    for (std::thread& t : pool) t.join();
    int failed = 0;
    for (int v : ok) failed += v == 0;
    if (failed > 0) state.SkipWithError("a series failed to forecast");
  }
}
BENCHMARK(BM_Forecast1000TeamSeries)
    ->Args({744, 1})
    ->Args({744, 2})
    ->Args({2160, 2})
    ->Unit(benchmark::kSecond)
    ->Iterations(1)
    ->UseRealTime();

}  // namespace
}  // namespace tidegate::forecast

BENCHMARK_MAIN();
