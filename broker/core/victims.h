// What both victim searches share (docs/policy.md §3 "Order"): the Victim they
// return, the ordering key of a candidate, lost work, and who may be a
// victim at all. The searches: victims_classical.h (§3) and
// victims_fair_share.h (§5).
#ifndef TIDEGATE_BROKER_CORE_VICTIMS_H_
#define TIDEGATE_BROKER_CORE_VICTIMS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "broker/core/fraction.h"
#include "broker/core/state.h"

namespace tidegate::core {

// Why a victim was chosen, for the preempt record.
enum class VictimKind { kReclaim, kPriority, kFairShare };

// A victim is evicted whole, or, an elastic job above its min, shrunk to
// `shrink_to` replicas (docs/policy.md §3: offered as a shrink first).
struct Victim {
  int job;
  VictimKind kind;
  int64_t shrink_to = -1;  // -1: evicted whole.
};

// An elastic job that can give back replicas now: admitted above its min,
// with no resize pending.
bool Shrinkable(const Job& job);

// The list a candidate comes from, in the order the lists are concatenated
// (docs/policy.md §3): reclaim with the hierarchy advantage, reclaim by priority,
// then the preemptor's own team.
enum class CandidateList { kHierarchy = 0, kPriority = 1, kSameTeam = 2 };

// Ordering keys of one candidate (docs/policy.md §3 "Order", keys 1-7, plus the
// list it belongs to for the concatenation). Smaller sorts first.
struct CandidateKey {
  bool not_draining;   // draining groups come first across lists.
  CandidateList list;
  bool outside_cluster;  // key 1
  bool own_team;       // key 3
  int32_t priority;    // key 4
  bool not_shrinkable; // key 5a: elastic jobs that can shrink first
  u128 lost_work;  // key 5b, 0 with newest_first
  Time neg_admitted_at;  // key 6
  const std::string* id;  // key 7
  bool whole_part;     // an elastic job's shrink part comes before its whole part.
  bool operator<(const CandidateKey& o) const;
};

// A CandidateKey in a form that compares faster, in the same order. A search
// over thousands of candidates spends most of its time comparing keys, and
// in the common case every key but the id ties, so each comparison read the
// two id strings. Here the small keys are packed into one word and the id's
// first 8 bytes into a number (big-endian, zero-padded: a shorter id that is
// a prefix of a longer one never compares greater, as with std::string);
// the strings are read only when those bytes tie.
struct PackedCandidateKey {
  uint64_t head = 0;  // not_draining, list, outside_cluster, own_team, priority, not_shrinkable
  u128 lost_work = 0;
  Time neg_admitted_at = 0;
  uint64_t id_prefix = 0;
  const std::string* id = nullptr;
  bool whole_part = false;
  static PackedCandidateKey Of(const CandidateKey& key);
  bool operator<(const PackedCandidateKey& o) const {
    if (head != o.head) return head < o.head;
    if (lost_work != o.lost_work) return lost_work < o.lost_work;
    if (neg_admitted_at != o.neg_admitted_at) return neg_admitted_at < o.neg_admitted_at;
    if (id_prefix != o.id_prefix) return id_prefix < o.id_prefix;
    if (const int c = id->compare(*o.id); c != 0) return c < 0;
    return whole_part < o.whole_part;
  }
};

// The candidate's lost work at `now`: GPUs x (now - last checkpoint), the
// last checkpoint being the latest of the reported one, admitted_at, and,
// with a declared interval, admitted_at + k x interval (k the largest with
// that <= now).
u128 LostWork(const Job& job, Time now);

// Can `candidate` be chosen as a victim at all right now: holds capacity,
// is not already claimed by another waiting job, has no shrink waiting for
// its ack, uses a contested resource.
bool Eligible(const State& state, const Job& candidate, ResourceMask contested);

}  // namespace tidegate::core

#endif  // TIDEGATE_BROKER_CORE_VICTIMS_H_
