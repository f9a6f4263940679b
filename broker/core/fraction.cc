#include "broker/core/fraction.h"

#include <limits>

namespace tidegate::core {

int Compare(const Fraction& a, const Fraction& b) {
  if (a.IsInfinite() || b.IsInfinite()) {
    if (a.IsInfinite() && b.IsInfinite()) return 0;
    return a.IsInfinite() ? 1 : -1;
  }
  // Compare a.num/a.den with b.num/b.den by their continued fractions: equal
  // integer parts reduce to comparing the reciprocals of the remainders, with
  // the order flipped. Terminates like Euclid's algorithm; never multiplies.
  u128 an = a.num, ad = a.den, bn = b.num, bd = b.den;
  int sign = 1;
  while (true) {
    const u128 aq = an / ad, bq = bn / bd;
    if (aq != bq) return aq < bq ? -sign : sign;
    const u128 ar = an % ad, br = bn % bd;
    if (ar == 0 || br == 0) {
      if (ar == 0 && br == 0) return 0;
      return ar == 0 ? -sign : sign;
    }
    // a' = ad/ar, b' = bd/br; a < b iff a' > b'.
    an = ad; ad = ar;
    bn = bd; bd = br;
    sign = -sign;
  }
}

double ToDouble(const Fraction& f) {
  if (f.IsInfinite()) return std::numeric_limits<double>::infinity();
  return static_cast<double>(f.num) / static_cast<double>(f.den);
}

}  // namespace tidegate::core
