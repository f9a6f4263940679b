// Exact comparison of shares (docs/policy.md §5: never rounded, compared exactly).
#include "broker/core/fraction.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace tidegate::core {
namespace {

constexpr u128 kMaxU128 = ~u128{0};
constexpr u128 kTwoTo127 = u128{1} << 127;

Fraction F(u128 num, u128 den) { return Fraction{num, den}; }

TEST(FractionTest, UnreducedFormsOfTheSameValueAreEqual) {
  EXPECT_EQ(Compare(F(1, 2), F(2, 4)), 0);        // 1/2 = 2/4
  EXPECT_EQ(Compare(F(3000, 7), F(6000, 14)), 0);  // 428.57...
  EXPECT_EQ(Compare(F(5, 1), F(50, 10)), 0);       // integers
  EXPECT_TRUE(F(1, 2) == F(2, 4));
}

TEST(FractionTest, ZeroEqualsZeroWhateverTheDenominator) {
  EXPECT_EQ(Compare(F(0, 1), F(0, 1000)), 0);
  EXPECT_TRUE(Fraction::Zero().IsZero());
  EXPECT_TRUE(F(0, 7).IsZero());
  EXPECT_LT(Compare(F(0, 7), F(1, kMaxU128)), 0);  // 0 < 1/(2^128-1)
}

TEST(FractionTest, OrdersByValueNotByNumeratorOrDenominator) {
  EXPECT_LT(Compare(F(1, 3), F(1, 2)), 0);    // .333 < .5
  EXPECT_GT(Compare(F(2, 3), F(3, 5)), 0);    // .667 > .6
  EXPECT_LT(Compare(F(99, 100), F(1, 1)), 0);  // .99 < 1
  EXPECT_GT(Compare(F(101, 100), F(1, 1)), 0); // 1.01 > 1
  EXPECT_TRUE(F(1, 3) < F(1, 2));
  EXPECT_TRUE(F(1, 3) <= F(2, 6));
  EXPECT_FALSE(F(1, 2) < F(1, 2));
}

TEST(FractionTest, EqualIntegerPartsCompareByTheRemainders) {
  // 7/3 = 2 + 1/3 and 9/4 = 2 + 1/4: same integer part, 1/3 > 1/4.
  EXPECT_GT(Compare(F(7, 3), F(9, 4)), 0);
  // 5/2 = 2.5 and 12/5 = 2.4 (one level deeper in the continued fraction).
  EXPECT_GT(Compare(F(5, 2), F(12, 5)), 0);
  // An exact integer against a value just above it: 2 < 2 + 1/1000.
  EXPECT_LT(Compare(F(4, 2), F(2001, 1000)), 0);
  EXPECT_GT(Compare(F(2001, 1000), F(4, 2)), 0);
}

TEST(FractionTest, HugeNumeratorsCompareExactlyWithoutOverflow) {
  // (2^127)/(2^127 - 1) = 1 + 1/(2^127 - 1) is below
  // (2^127 - 1)/(2^127 - 2) = 1 + 1/(2^127 - 2): a cross product would need
  // 254 bits.
  const Fraction a = F(kTwoTo127, kTwoTo127 - 1);
  const Fraction b = F(kTwoTo127 - 1, kTwoTo127 - 2);
  EXPECT_LT(Compare(a, b), 0);
  EXPECT_GT(Compare(b, a), 0);
  // The largest u128 over itself is exactly 1.
  EXPECT_EQ(Compare(F(kMaxU128, kMaxU128), F(1, 1)), 0);
  // (2^128-1)/(2^128-2) vs (2^128-2)/(2^128-3): 1 + 1/(2^128-2) < 1 + 1/(2^128-3).
  EXPECT_LT(Compare(F(kMaxU128, kMaxU128 - 1), F(kMaxU128 - 1, kMaxU128 - 2)), 0);
  // Same value in two huge unreduced forms: 3 x (2^126 - 1) / (2 x (2^126 - 1)) = 3/2.
  const u128 m = (u128{1} << 126) - 1;
  EXPECT_EQ(Compare(F(3 * m, 2 * m), F(3, 2)), 0);
}

TEST(FractionTest, DoublesCannotTellTheseApartButCompareCan) {
  // 10^30 + 1 over 10^30 rounds to 1.0 as a double.
  u128 big = 1;
  for (int i = 0; i < 30; ++i) big *= 10;
  const Fraction above_one = F(big + 1, big);
  EXPECT_EQ(ToDouble(above_one), 1.0);
  EXPECT_GT(Compare(above_one, F(1, 1)), 0);
}

TEST(FractionTest, InfinityIsAboveEveryFiniteValueAndEqualsItself) {
  const Fraction inf = Fraction::Infinity();
  EXPECT_TRUE(inf.IsInfinite());
  EXPECT_FALSE(inf.IsZero());
  EXPECT_EQ(Compare(inf, Fraction::Infinity()), 0);
  EXPECT_GT(Compare(inf, F(kMaxU128, 1)), 0);  // above 2^128 - 1
  EXPECT_LT(Compare(F(kMaxU128, 1), inf), 0);
  EXPECT_GT(Compare(inf, Fraction::Zero()), 0);
  EXPECT_TRUE(F(1000000, 1) < inf);
  EXPECT_FALSE(inf < inf);
}

TEST(FractionTest, ToDoubleIsForDisplayOnly) {
  EXPECT_DOUBLE_EQ(ToDouble(F(1, 4)), 0.25);
  EXPECT_DOUBLE_EQ(ToDouble(F(3000, 4)), 750.0);
  EXPECT_TRUE(std::isinf(ToDouble(Fraction::Infinity())));
}

}  // namespace
}  // namespace tidegate::core
