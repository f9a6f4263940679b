// Exact non-negative fractions for shares (docs/policy.md §5: "shares are exact real
// numbers, never rounded, compared exactly").
#ifndef TIDEGATE_BROKER_CORE_FRACTION_H_
#define TIDEGATE_BROKER_CORE_FRACTION_H_

#include <cstdint>
#include <string>

namespace tidegate::core {

// __extension__: GCC's 128-bit integers are not ISO C++ (-Wpedantic).
__extension__ typedef unsigned __int128 u128;

// num/den with den > 0, or +infinity (den == 0, num > 0). Never reduced:
// comparison is exact without overflow (continued-fraction style), so any
// u128 numerator and denominator compare correctly.
struct Fraction {
  u128 num = 0;
  u128 den = 1;

  static Fraction Zero() { return {0, 1}; }
  static Fraction Infinity() { return {1, 0}; }
  bool IsZero() const { return num == 0 && den != 0; }
  bool IsInfinite() const { return den == 0; }
};

// -1, 0, +1 as a <, ==, > b. Infinity equals infinity.
int Compare(const Fraction& a, const Fraction& b);

inline bool operator<(const Fraction& a, const Fraction& b) { return Compare(a, b) < 0; }
inline bool operator<=(const Fraction& a, const Fraction& b) { return Compare(a, b) <= 0; }
inline bool operator==(const Fraction& a, const Fraction& b) { return Compare(a, b) == 0; }

// A decimal approximation for display only (never for decisions).
double ToDouble(const Fraction& f);

}  // namespace tidegate::core

#endif  // TIDEGATE_BROKER_CORE_FRACTION_H_
