#include "forecast/nelder_mead.h"

#include <cmath>

#include "gtest/gtest.h"

namespace tidegate::forecast {
namespace {

TEST(NelderMeadTest, FindsTheMinimumOfABowlInsideTheBox) {
  // Minimum 0 at (0.3, 0.7).
  auto f = [](const std::vector<double>& x) {
    return (x[0] - 0.3) * (x[0] - 0.3) + 2 * (x[1] - 0.7) * (x[1] - 0.7);
  };
  NelderMeadResult r = MinimizeNelderMead(f, {0.9, 0.1});
  EXPECT_NEAR(r.x[0], 0.3, 1e-4);
  EXPECT_NEAR(r.x[1], 0.7, 1e-4);
  EXPECT_LE(r.evaluations, 400);
}

TEST(NelderMeadTest, StopsOnTheBoundWhenTheMinimumIsOutside) {
  // Unconstrained minimum at (1.5, -0.5): the box's answer is (1, 0).
  auto f = [](const std::vector<double>& x) {
    return (x[0] - 1.5) * (x[0] - 1.5) + (x[1] + 0.5) * (x[1] + 0.5);
  };
  NelderMeadResult r = MinimizeNelderMead(f, {0.5, 0.5});
  EXPECT_NEAR(r.x[0], 1.0, 1e-6);
  EXPECT_NEAR(r.x[1], 0.0, 1e-6);
  EXPECT_NEAR(r.value, 0.5, 1e-6);
}

TEST(NelderMeadTest, SameStartSameResult) {
  auto f = [](const std::vector<double>& x) {
    return std::sin(7 * x[0]) + std::cos(5 * x[1]) + x[2] * x[2];
  };
  NelderMeadResult a = MinimizeNelderMead(f, {0.2, 0.4, 0.6});
  NelderMeadResult b = MinimizeNelderMead(f, {0.2, 0.4, 0.6});
  EXPECT_EQ(a.x, b.x);
  EXPECT_EQ(a.value, b.value);
  EXPECT_EQ(a.evaluations, b.evaluations);
}

TEST(NelderMeadTest, RespectsTheEvaluationCap) {
  int calls = 0;
  auto f = [&calls](const std::vector<double>& x) {
    ++calls;
    return std::sin(40 * x[0]) * std::cos(30 * x[1]);
  };
  NelderMeadOptions o;
  o.max_evaluations = 25;
  NelderMeadResult r = MinimizeNelderMead(f, {0.5, 0.5}, o);
  EXPECT_LE(calls, 25 + 3);  // the step under way may finish.
  EXPECT_EQ(r.evaluations, calls);
}

}  // namespace
}  // namespace tidegate::forecast
