#include "broker/core/fair_share.h"

#include <algorithm>

namespace tidegate::core {

int Compare(const Share& a, const Share& b) {
  if (a.infinite != b.infinite) return a.infinite ? 1 : -1;
  return Compare(a.value, b.value);
}

Fraction DominantShare(const State& s, int n) {
  Fraction best = Fraction::Zero();
  const NodeConfig& nc = s.node(n);
  for (int r = 0; r < s.R(); ++r) {
    if (!nc.share_resource[r] || nc.lendable[r] <= 0) continue;
    const Quantity borrowed = std::max<Quantity>(0, s.ns(n).u[r] - nc.g[r]);
    if (borrowed == 0) continue;
    Fraction f{static_cast<u128>(borrowed) * 1000, static_cast<u128>(nc.lendable[r])};
    if (best < f) best = f;
  }
  return best;
}

Share ShareOf(const State& s, int n) {
  const Fraction drs = DominantShare(s, n);
  if (drs.IsZero()) return Share{false, Fraction::Zero()};
  const Fraction& w = s.node(n).weight;
  if (w.num == 0) return Share{true, drs};
  // (a/b) / (c/d) = (a*d) / (b*c); the operands fit: a < 2^73, d, c < 2^40.
  return Share{false, Fraction{drs.num * w.den, drs.den * w.num}};
}

bool FairBorrowing(const State& s, int n) {
  const NodeConfig& nc = s.node(n);
  for (int r = 0; r < s.R(); ++r) {
    if (nc.share_resource[r] && s.ns(n).u[r] > nc.g[r]) return true;
  }
  return false;
}

}  // namespace tidegate::core
