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
  for (int r = 0; r < s.num_resources(); ++r) {
    if (!nc.share_resource[r] || nc.lendable[r] <= 0) continue;
    const Quantity borrowed = std::max<Quantity>(0, s.node_state(n).usage[r] - nc.guaranteed[r]);
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

int LowestShareLeaf(const State& s, const SubtreeHead& head) {
  int n = kRootNode;
  while (!s.node(n).leaf || n == kRootNode) {
    int best = -1;
    Share best_share;
    const QueueKey* best_head = nullptr;
    for (int c : s.node(n).children) {
      const QueueKey* h = head(c);
      if (!h) continue;
      const Share sh = ShareOf(s, c);
      const int cmp = best < 0 ? -1 : Compare(sh, best_share);
      if (cmp < 0 || (cmp == 0 && *h < *best_head)) {
        best = c;
        best_share = sh;
        best_head = h;
      }
    }
    n = best;
  }
  return n;
}

bool FairBorrowing(const State& s, int n) {
  const NodeConfig& nc = s.node(n);
  for (int r = 0; r < s.num_resources(); ++r) {
    if (nc.share_resource[r] && s.node_state(n).usage[r] > nc.guaranteed[r]) return true;
  }
  return false;
}

}  // namespace tidegate::core
