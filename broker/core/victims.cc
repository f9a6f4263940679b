#include "broker/core/victims.h"

#include <algorithm>
#include <cstring>

namespace tidegate::core {
namespace {

bool UsesAny(const Job& job, ResourceMask rs, int R) {
  for (int r = 0; r < R; ++r) {
    if ((rs >> r & 1) && job.demand[r] > 0) return true;
  }
  return false;
}

}  // namespace

bool CandidateKey::operator<(const CandidateKey& o) const {
  if (not_draining != o.not_draining) return not_draining < o.not_draining;
  if (list != o.list) return list < o.list;
  if (outside_cluster != o.outside_cluster) return outside_cluster < o.outside_cluster;
  if (own_team != o.own_team) return own_team < o.own_team;
  if (priority != o.priority) return priority < o.priority;
  if (not_shrinkable != o.not_shrinkable) return not_shrinkable < o.not_shrinkable;
  if (lost_work != o.lost_work) return lost_work < o.lost_work;
  if (neg_admitted_at != o.neg_admitted_at) return neg_admitted_at < o.neg_admitted_at;
  if (*id != *o.id) return *id < *o.id;
  return whole_part < o.whole_part;
}

PackedCandidateKey PackedCandidateKey::Of(const CandidateKey& k) {
  PackedCandidateKey p;
  // Each key in its own bits, the more significant keys higher; the
  // priority biased so that a signed order becomes an unsigned one.
  p.head = uint64_t{k.not_draining} << 38 | static_cast<uint64_t>(k.list) << 36 | uint64_t{k.outside_cluster} << 35 |
           uint64_t{k.own_team} << 34 | uint64_t{static_cast<uint32_t>(k.priority) ^ 0x80000000u} << 1 |
           uint64_t{k.not_shrinkable};
  p.lost_work = k.lost_work;
  p.neg_admitted_at = k.neg_admitted_at;
  uint64_t bytes = 0;  // the first 8 bytes in memory order, zero after the end
  std::memcpy(&bytes, k.id->data(), std::min<size_t>(8, k.id->size()));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  p.id_prefix = bytes;  // byte 0 already most significant
#else
  p.id_prefix = __builtin_bswap64(bytes);  // little-endian: make byte 0 most significant
#endif
  p.id = k.id;
  p.whole_part = k.whole_part;
  return p;
}

u128 LostWork(const Job& job, Time now) {
  Time since = std::max(job.last_checkpoint, job.admitted_at);
  if (job.checkpoint_interval_ms > 0 && job.admitted_at >= 0 && now > job.admitted_at) {
    // A declared interval is a checkpoint at admitted_at + k x interval, the
    // latest such instant not after now (docs/design.md §5).
    const Time k = (now - job.admitted_at) / job.checkpoint_interval_ms;
    since = std::max(since, job.admitted_at + k * job.checkpoint_interval_ms);
  }
  const Time span = std::max<Time>(0, now - since);
  return static_cast<u128>(job.gpus) * static_cast<u128>(span);
}

bool Shrinkable(const Job& job) {
  return job.elastic() && job.phase == Phase::kAdmitted && !job.resize_pending() && job.replicas > job.elastic_min;
}

bool Eligible(const State& s, const Job& c, ResourceMask contested) {
  if (c.phase == Phase::kQueued) return false;
  if (c.drain_for >= 0) return false;  // claimed by another waiting job.
  if (c.shrink_pending()) return false;  // a shrink not yet acknowledged.
  return UsesAny(c, contested, s.num_resources());
}

}  // namespace tidegate::core
