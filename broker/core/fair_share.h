// Weighted dominant-resource shares (docs/policy.md §5), exact.
#ifndef TIDEGATE_BROKER_CORE_FAIR_SHARE_H_
#define TIDEGATE_BROKER_CORE_FAIR_SHARE_H_

#include <functional>

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

// The first job of n's subtree still to try, in queue order, or nullptr when
// the subtree has nothing left to offer.
using SubtreeHead = std::function<const QueueKey*(int n)>;

// The leaf reached from the root by taking, at each level, the child with
// the lowest share: the order in which fair sharing admits (docs/policy.md §5)
// and growth grows (§4 "Growth"). Only children `head` names a job for take
// part; equal shares go to the child whose head job comes first in queue
// order, then to the first in config order. Shares are read from the state
// as it is now, so a caller that admits or grows between two calls sees the
// new shares. The caller ensures head(kRootNode) is not nullptr.
//
// Victim search walks the mirror image (highest share first, with its own
// tie rules): TargetTeams in victims_fair_share.cc.
int LowestShareLeaf(const State& s, const SubtreeHead& head);

}  // namespace tidegate::core

#endif  // TIDEGATE_BROKER_CORE_FAIR_SHARE_H_
