// Weighted dominant-resource shares (POLICY.md §5), exact.
#ifndef TIDEGATE_BROKER_CORE_FAIR_SHARE_H_
#define TIDEGATE_BROKER_CORE_FAIR_SHARE_H_

#include "broker/core/fraction.h"
#include "broker/core/state.h"

namespace tidegate::core {

// share(n): 0 when DRS = 0; "+inf" when w = 0 and DRS > 0 (two of those
// compare by DRS); else DRS / w. A distinct type so a rule cannot compare a
// share with a raw DRS by accident.
struct Share {
  bool infinite = false;
  Fraction value;  // DRS when infinite, else DRS / w.
};
int Compare(const Share& a, const Share& b);
inline bool operator<(const Share& a, const Share& b) { return Compare(a, b) < 0; }
inline bool operator<=(const Share& a, const Share& b) { return Compare(a, b) <= 0; }

// DRS(n) = max over r with lendable_r(n) > 0 (and a quota entry in n's
// subtree) of borrowed_r(n) x 1000 / lendable_r(n), from the state's usage.
Fraction DominantShare(const State& s, int n);
Share ShareOf(const State& s, int n);

// Borrowing in the fair-sharing sense: u > g on some resource n's subtree
// has quota entries for.
bool FairBorrowing(const State& s, int n);

}  // namespace tidegate::core

#endif  // TIDEGATE_BROKER_CORE_FAIR_SHARE_H_
