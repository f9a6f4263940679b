#include "broker/sim/percentile.h"

#include "gtest/gtest.h"

namespace tidegate::sim {
namespace {

TEST(PercentileTest, EmptyHasNoPercentile) {
  EXPECT_EQ(NearestRankPercentile({}, 50), std::nullopt);
}

TEST(PercentileTest, SingleSampleIsEveryPercentile) {
  EXPECT_EQ(NearestRankPercentile({7}, 1), 7);
  EXPECT_EQ(NearestRankPercentile({7}, 50), 7);
  EXPECT_EQ(NearestRankPercentile({7}, 100), 7);
}

TEST(PercentileTest, NearestRankTakesTheCeilingRankWithoutInterpolating) {
  // Sorted: 10 20 30 40. p50: rank ceil(2) = 2 -> 20; p95: rank ceil(3.8) = 4.
  EXPECT_EQ(NearestRankPercentile({40, 10, 30, 20}, 50), 20);
  EXPECT_EQ(NearestRankPercentile({40, 10, 30, 20}, 95), 40);
  EXPECT_EQ(NearestRankPercentile({40, 10, 30, 20}, 25), 10);
  EXPECT_EQ(NearestRankPercentile({40, 10, 30, 20}, 26), 20);
}

TEST(PercentileTest, ExactRanksDoNotRoundUp) {
  // 95% of 20 samples is rank 19 exactly: 19, not 20.
  std::vector<double> samples;
  for (int i = 1; i <= 20; ++i) samples.push_back(i);
  EXPECT_EQ(NearestRankPercentile(samples, 95), 19);
  EXPECT_EQ(NearestRankPercentile(samples, 100), 20);
}

TEST(PercentileTest, P99OfAHundredIsTheNinetyNinth) {
  std::vector<double> samples;
  for (int i = 100; i >= 1; --i) samples.push_back(i);
  EXPECT_EQ(NearestRankPercentile(samples, 99), 99);
}

}  // namespace
}  // namespace tidegate::sim
