#include "forecast/forecaster.h"

#include <cmath>

#include "gtest/gtest.h"

namespace tidegate::forecast {
namespace {

std::vector<double> Noisy(int n, double noise) {
  std::vector<double> y(n);
  uint64_t state = 12345;  // fixed LCG: same series every run.
  for (int t = 0; t < n; ++t) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    const double u = static_cast<double>(state >> 11) / 9007199254740992.0 - 0.5;
    y[t] = 50 + 20 * std::sin(2 * 3.14159265358979 * (t % 24) / 24.0) + noise * u;
  }
  return y;
}

TEST(ForecasterTest, PureDailyPatternPicksSeasonalNaiveAndHasNoSpread) {
  ForecastOptions o;
  o.horizon = 30;
  absl::StatusOr<ForecastResult> r = ForecastSeries(Noisy(24 * 20, 0), o);
  ASSERT_TRUE(r.ok()) << r.status();
  // Every model is (nearly) exact; the tie goes to the simplest, listed first.
  EXPECT_EQ(r->model.Name(), "seasonal_naive_24");
  EXPECT_EQ(r->Chosen().mase, 0);
  const std::vector<double> y = Noisy(24 * 21 + 6, 0);
  for (int h = 0; h < 30; ++h) {
    EXPECT_NEAR(r->quantiles[h].p10, y[24 * 20 + h], 1e-9);
    EXPECT_NEAR(r->quantiles[h].p99, y[24 * 20 + h], 1e-9);
  }
}

TEST(ForecasterTest, QuantilesAreOrderedAndBandsCoverTheNoise) {
  ForecastOptions o;
  o.horizon = 48;
  absl::StatusOr<ForecastResult> r = ForecastSeries(Noisy(24 * 30, 10), o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->candidates.size(), 5u);
  EXPECT_LT(r->Chosen().mase, 1.0);  // better than the daily naive's in-sample error.
  for (const QuantileForecast& q : r->quantiles) {
    EXPECT_LE(q.p10, q.p50);
    EXPECT_LE(q.p50, q.p90);
    EXPECT_LE(q.p90, q.p99);
    // Uniform noise of width 10: the P10–P90 band is about 8 wide.
    EXPECT_GT(q.p90 - q.p10, 4);
    EXPECT_LT(q.p90 - q.p10, 16);
  }
}

TEST(ForecasterTest, WeeklyModelsAreSkippedWhenTrainingIsShorterThanTwoWeeks) {
  ForecastOptions o;
  o.horizon = 24;
  absl::StatusOr<ForecastResult> r = ForecastSeries(Noisy(400, 5), o);  // trains on 280.
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->candidates[1].skipped);
  EXPECT_EQ(r->candidates[1].skip_reason, "needs 336 training hours, has 280");
  EXPECT_FALSE(r->candidates[0].skipped);
}

TEST(ForecasterTest, SeriesShorterThanTwoDaysIsRejected) {
  absl::StatusOr<ForecastResult> r = ForecastSeries(std::vector<double>(40, 1.0), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "40 hours is shorter than two seasons of 24 hours (48)");
}

TEST(ForecasterTest, DemandNeverGoesBelowZero) {
  std::vector<double> y = Noisy(24 * 20, 40);
  for (double& v : y) v = std::max(0.0, v - 55);
  ForecastOptions o;
  o.horizon = 24;
  absl::StatusOr<ForecastResult> r = ForecastSeries(y, o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->clipped_at_zero);
  for (const QuantileForecast& q : r->quantiles) EXPECT_GE(q.p10, 0);
  for (double d : DemandScenarios(*r)) EXPECT_GE(d, 0);
}

}  // namespace
}  // namespace tidegate::forecast
