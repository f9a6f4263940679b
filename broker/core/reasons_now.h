// WaitPicture: what the reasons of waiting jobs read (the quota in force,
// usage per team, free capacity per cluster, how the last cycle left each
// team's queue), copied from the core so that a reader can state a queued
// job's reason with the numbers of the state it reads, without the core.
// Taking one costs O(teams x resources + clusters x resources), not
// O(queue): a stuck team's queue is not touched when usage moves, and its
// jobs' reasons are computed when someone reads them (docs/jobs.md).
//
// Threading: immutable once taken; safe from any thread.
#ifndef TIDEGATE_BROKER_CORE_REASONS_NOW_H_
#define TIDEGATE_BROKER_CORE_REASONS_NOW_H_

#include <memory>
#include <string>
#include <vector>

#include "broker/core/events.h"
#include "broker/core/types.h"

namespace tidegate::core {

class State;
struct CompiledConfig;
struct WaitingTeam;

class WaitPicture {
 public:
  // The picture of `s` now; shares `prev`'s copy of the quota in force when
  // it has not changed since (prev may be null).
  static std::shared_ptr<const WaitPicture> Take(const State& s, const WaitPicture* prev);
  ~WaitPicture();

  // The reason queued job `job` of `team` on `cluster` asking `demand`
  // (replicas x per_replica, by resource name) has in this picture; `stored`
  // is the reason the core gave it when it was last read. The same as the
  // core's GetJob would give now (ReasonNow in reasons.h); `stored` for a job
  // this picture cannot place (a team or cluster the config dropped).
  std::string Reason(const std::string& job, const std::string& team, const std::string& cluster,
                     const NamedQuantities& demand, const std::string& stored) const;

 private:
  class Numbers;
  WaitPicture() = default;
  uint64_t quota_generation_ = 0;
  std::shared_ptr<const CompiledConfig> config_;
  int resources_ = 0;
  std::vector<Quantity> usage_;         // [node * resources_ + r], flat: one allocation.
  std::vector<Quantity> cluster_used_;  // [cluster * resources_ + r].
  std::vector<WaitingTeam> teams_;                   // per node; leaves with queued jobs only.
};

}  // namespace tidegate::core

#endif  // TIDEGATE_BROKER_CORE_REASONS_NOW_H_
