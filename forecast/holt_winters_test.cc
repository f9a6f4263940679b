#include "forecast/holt_winters.h"

#include <cmath>

#include "gtest/gtest.h"
#include "forecast/model.h"

namespace tidegate::forecast {
namespace {

constexpr double kPi = 3.14159265358979323846;

double Daily(int t) { return 10 * std::sin(2 * kPi * (t % 24) / 24.0); }
double Weekly(int t) { return (t % 168) / 24 >= 5 ? -15.0 : 3.0; }  // weekends are quiet.

std::vector<double> Make(int n, double (*f)(int)) {
  std::vector<double> y(n);
  for (int t = 0; t < n; ++t) y[t] = f(t);
  return y;
}

TEST(SeasonalNaiveTest, ForecastsAPureSeasonalSeriesExactly) {
  const std::vector<double> y = Make(24 * 5 + 7, [](int t) { return 50 + Daily(t); });
  absl::StatusOr<FittedModel> m = FitModel(ModelSpec::SeasonalNaive(24), y);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->sse, 0);
  std::vector<double> f(60);
  m->state->Forecast(60, f.data());
  for (int h = 1; h <= 60; ++h) {
    const int t = static_cast<int>(y.size()) - 1 + h;
    EXPECT_NEAR(f[h - 1], 50 + Daily(t), 1e-12) << "h=" << h;
  }
}

TEST(HoltWintersTest, RecoversAKnownTrend) {
  // y = 100 + 0.5 t + daily: the one-step errors can all be 0.
  const std::vector<double> y = Make(24 * 14, [](int t) { return 100 + 0.5 * t + Daily(t); });
  absl::StatusOr<FittedModel> m =
      FitModel(ModelSpec::HoltWinters(24, 0, Trend::kAdditive), y);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_LT(m->sse, 1e-6);
  std::vector<double> f(48);
  m->state->Forecast(48, f.data());
  for (int h = 1; h <= 48; ++h) {
    const int t = static_cast<int>(y.size()) - 1 + h;
    EXPECT_NEAR(f[h - 1], 100 + 0.5 * t + Daily(t), 1e-3) << "h=" << h;
  }
}

TEST(HoltWintersTest, DoubleSeasonalLearnsTheWeekendDip) {
  const std::vector<double> y =
      Make(168 * 4, [](int t) { return 40 + Daily(t) + Weekly(t); });
  absl::StatusOr<FittedModel> m =
      FitModel(ModelSpec::HoltWinters(24, 168, Trend::kDamped), y);
  ASSERT_TRUE(m.ok()) << m.status();
  std::vector<double> f(168);
  m->state->Forecast(168, f.data());
  for (int h = 1; h <= 168; ++h) {
    const int t = static_cast<int>(y.size()) - 1 + h;
    EXPECT_NEAR(f[h - 1], 40 + Daily(t) + Weekly(t), 1e-3) << "h=" << h;
  }
}

TEST(HoltWintersTest, OneStepSseFollowsTheRecursionByHand) {
  // m = 2, no trend, α = 0.5, γ = 0.5; l = 10, s = (1, -1); y = 12, 8, 11.
  //   t0: ŷ = 11, e = 1,    l = 10.5,  s0 = 1.5
  //   t1: ŷ = 9.5, e = -1.5, l = 9.75, s1 = -1.75
  //   t2: ŷ = 11.25, e = -0.25
  // SSE = 1 + 2.25 + 0.0625 = 3.3125
  const ModelSpec spec = ModelSpec::HoltWinters(2, 0, Trend::kNone);
  ModelParams p;
  p.alpha = 0.5;
  p.gamma1 = 0.5;
  HoltWintersInit init;
  init.level = 10;
  init.season1 = {1, -1};
  EXPECT_DOUBLE_EQ(OneStepSse(spec, p, init, {12, 8, 11}), 3.3125);
}

TEST(HoltWintersTest, LeastSquaresInitialStatesBeatTheHeuristicOnes) {
  std::vector<double> y = Make(168 * 3, [](int t) { return 40 + Daily(t) + Weekly(t); });
  for (size_t t = 0; t < y.size(); ++t) y[t] += 3 * std::sin(0.37 * static_cast<double>(t * t));
  const ModelSpec spec = ModelSpec::HoltWinters(24, 0, Trend::kDamped);
  ModelParams p;
  p.alpha = 0.3;
  p.beta = 0.01;
  p.gamma1 = 0.1;
  p.phi = 0.95;
  const double heuristic = OneStepSse(spec, p, HeuristicInit(spec, y), y);
  const double best = OneStepSse(spec, p, LeastSquaresInit(spec, p, y), y);
  EXPECT_LT(best, heuristic);
}

TEST(HoltWintersTest, FittingIsDeterministic) {
  std::vector<double> y = Make(168 * 3, [](int t) { return 40 + Daily(t) + Weekly(t); });
  for (size_t t = 0; t < y.size(); ++t) y[t] += 2 * std::cos(1.7 * static_cast<double>(t));
  const ModelSpec spec = ModelSpec::HoltWinters(24, 168, Trend::kDamped);
  const HoltWintersFit a = FitHoltWinters(spec, y, FitOptions{});
  const HoltWintersFit b = FitHoltWinters(spec, y, FitOptions{});
  EXPECT_EQ(a.sse, b.sse);
  EXPECT_EQ(a.params.alpha, b.params.alpha);
  EXPECT_GE(a.params.phi, 0.8);
  EXPECT_LE(a.params.phi, 0.995);
  EXPECT_LE(a.params.gamma1, 1 - a.params.alpha + 1e-12);
}

TEST(ModelTest, NamesRoundTrip) {
  for (const char* name : {"seasonal_naive_24", "seasonal_naive_168", "holt_winters_24",
                           "holt_winters_24_168_damped", "holt_winters_24_notrend",
                           "holt_winters_168_damped", "combination"}) {
    absl::StatusOr<ModelSpec> spec = ParseModelName(name);
    ASSERT_TRUE(spec.ok()) << name;
    EXPECT_EQ(spec->Name(), name);
  }
  EXPECT_FALSE(ParseModelName("holt_winters_12").ok());
  EXPECT_FALSE(ParseModelName("arima").ok());
}

TEST(ModelTest, CombinationForecastsTheMeanOfItsMembers) {
  std::vector<double> y = Make(168 * 3, [](int t) { return 40 + Daily(t) + Weekly(t); });
  for (size_t t = 0; t < y.size(); ++t) y[t] += 2 * std::cos(1.7 * static_cast<double>(t));
  absl::StatusOr<FittedModel> combo = FitModel(ModelSpec::Combination(), y);
  ASSERT_TRUE(combo.ok()) << combo.status();
  std::vector<double> want(24, 0.0), got(24), one(24);
  for (const ModelSpec& member : CombinationMembers()) {
    absl::StatusOr<FittedModel> m = FitModel(member, y);
    ASSERT_TRUE(m.ok());
    m->state->Forecast(24, one.data());
    for (int h = 0; h < 24; ++h) want[h] += one[h] / 3;
  }
  combo->state->Forecast(24, got.data());
  for (int h = 0; h < 24; ++h) EXPECT_NEAR(got[h], want[h], 1e-9) << "h=" << h;
}

TEST(ModelTest, TooShortForTheLongestSeason) {
  absl::StatusOr<FittedModel> m =
      FitModel(ModelSpec::HoltWinters(24, 168, Trend::kDamped), std::vector<double>(300, 1.0));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(),
            "holt_winters_24_168_damped: 300 hours is shorter than two seasons of 168 hours (336)");
}

}  // namespace
}  // namespace tidegate::forecast
