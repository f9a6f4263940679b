#include "forecast/backtest.h"

#include <cmath>

#include "gtest/gtest.h"

namespace tidegate::forecast {
namespace {

TEST(BacktestTest, QuantilesInterpolateBetweenOrderStatistics) {
  const std::vector<double> v = {0, 10, 20, 30, 40};
  EXPECT_DOUBLE_EQ(SortedQuantile(v, 0.0), 0);
  EXPECT_DOUBLE_EQ(SortedQuantile(v, 0.5), 20);
  EXPECT_DOUBLE_EQ(SortedQuantile(v, 0.9), 36);   // position 3.6
  EXPECT_DOUBLE_EQ(SortedQuantile(v, 1.0), 40);
}

TEST(BacktestTest, PinballLossWeighsUnderAndOverForecasts) {
  // Under-forecast by 10 at q = 0.9 costs 9; over-forecast by 10 costs 1.
  EXPECT_DOUBLE_EQ(PinballLoss(110, 100, 0.9), 9);
  EXPECT_DOUBLE_EQ(PinballLoss(90, 100, 0.9), 1);
  EXPECT_DOUBLE_EQ(PinballLoss(100, 100, 0.5), 0);
}

TEST(BacktestTest, SplitKeepsTwoDaysToFit) {
  absl::StatusOr<BacktestSplit> s = ChooseSplit(1000, 168, 0.3, 2016);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->train, 700);
  s = ChooseSplit(60, 24, 0.3, 2016);  // 30% would leave 42 < 48.
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->train, 48);
  EXPECT_FALSE(ChooseSplit(48, 24, 0.3, 2016).ok());
}

TEST(BacktestTest, SeasonalNaiveOnARepeatingDayScoresZero) {
  std::vector<double> y(24 * 10);
  for (size_t t = 0; t < y.size(); ++t) y[t] = static_cast<double>(t % 24);
  absl::StatusOr<FittedModel> m =
      FitModel(ModelSpec::SeasonalNaive(24), std::vector<double>(y.begin(), y.begin() + 168));
  ASSERT_TRUE(m.ok());
  BacktestScore s = Backtest(*m->state, y, BacktestSplit{168, 24}, 1.0);
  EXPECT_EQ(s.origins, 72);
  EXPECT_EQ(s.mae, 0);
  EXPECT_EQ(s.pinball, 0);
  // 72 origins; those within 24 h of the end score fewer steps: 49·24 + (23+…+1).
  EXPECT_EQ(s.pairs, 49 * 24 + 276);
}

TEST(BacktestTest, MaseIsMaeOverTheNaiveScale) {
  // A day that alternates 0, 2: the daily naive's in-sample error is 0, so
  // use period 1: |2 − 0| = 2 every hour.
  std::vector<double> y(100);
  for (size_t t = 0; t < y.size(); ++t) y[t] = (t % 2) * 2.0;
  EXPECT_DOUBLE_EQ(NaiveScale(y, 100, 1), 2.0);
  EXPECT_DOUBLE_EQ(NaiveScale(y, 100, 2), 0.0);
}

}  // namespace
}  // namespace tidegate::forecast
