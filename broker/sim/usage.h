// Time integrals of GPU usage for the simulator's summary: per leaf team the
// GPU-time it used and borrowed (usage above its guarantee), and fleet-wide
// the GPU-time used and the GPU capacity-time.
//
// Values are piecewise constant between changes. Each team is integrated
// lazily (only when one of its values changes, and once at the end), so the
// cost of a change is O(resources), independent of the number of teams.
// Sums are exact while below 2^53 GPU-ms (about 285 GPU-years).
//
// Times must not go backwards; a smaller time is treated as the latest seen.
//
// Threading: not thread-safe; owned by one simulation.
#ifndef TIDEGATE_BROKER_SIM_USAGE_H_
#define TIDEGATE_BROKER_SIM_USAGE_H_

#include <cstddef>
#include <vector>

#include "broker/core/types.h"

namespace tidegate::sim {

class UsageIntegrator {
 public:
  // `teams` x `resources` values, all 0 at `start`.
  UsageIntegrator(size_t teams, size_t resources, core::Time start);

  void AddUsage(size_t team, size_t resource, core::Quantity delta, core::Time t);
  void SetGuaranteed(size_t team, size_t resource, core::Quantity guaranteed, core::Time t);
  void SetCapacity(size_t resource, core::Quantity capacity, core::Time t);

  // Integrates everything up to `t`; call before reading the integrals.
  void Flush(core::Time t);

  // Integrals in GPU-ms (quantity x ms), summed over resources.
  double TeamUsed(size_t team) const { return teams_[team].used_acc; }
  double TeamBorrowed(size_t team) const { return teams_[team].borrowed_acc; }
  double FleetUsed() const { return fleet_used_acc_; }
  double FleetCapacity() const { return capacity_acc_; }

 private:
  struct Team {
    std::vector<core::Quantity> used;
    std::vector<core::Quantity> guaranteed;
    core::Quantity used_sum = 0;      // Σ used.
    core::Quantity borrowed_sum = 0;  // Σ max(0, used - guaranteed).
    core::Time last = 0;
    double used_acc = 0;
    double borrowed_acc = 0;
  };

  core::Time Clamp(core::Time t) const { return t < now_ ? now_ : t; }
  void FlushTeam(Team& team, core::Time t);
  void FlushFleet(core::Time t);
  static core::Quantity Borrowed(const Team& team, size_t r);

  std::vector<Team> teams_;
  core::Time now_;
  core::Time fleet_last_;
  core::Quantity fleet_used_ = 0;
  std::vector<core::Quantity> capacity_;
  core::Quantity capacity_sum_ = 0;
  double fleet_used_acc_ = 0;
  double capacity_acc_ = 0;
};

}  // namespace tidegate::sim

#endif  // TIDEGATE_BROKER_SIM_USAGE_H_
