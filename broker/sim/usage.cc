#include "broker/sim/usage.h"

#include <algorithm>

namespace tidegate::sim {

UsageIntegrator::UsageIntegrator(size_t teams, size_t resources, core::Time start)
    : now_(start), fleet_last_(start), capacity_(resources, 0) {
  teams_.resize(teams);
  for (Team& team : teams_) {
    team.used.assign(resources, 0);
    team.guaranteed.assign(resources, 0);
    team.last = start;
  }
}

core::Quantity UsageIntegrator::Borrowed(const Team& team, size_t r) {
  return std::max<core::Quantity>(0, team.used[r] - team.guaranteed[r]);
}

void UsageIntegrator::FlushTeam(Team& team, core::Time t) {
  const double dt = static_cast<double>(t - team.last);
  team.used_acc += dt * static_cast<double>(team.used_sum);
  team.borrowed_acc += dt * static_cast<double>(team.borrowed_sum);
  team.last = t;
}

void UsageIntegrator::FlushFleet(core::Time t) {
  const double dt = static_cast<double>(t - fleet_last_);
  fleet_used_acc_ += dt * static_cast<double>(fleet_used_);
  capacity_acc_ += dt * static_cast<double>(capacity_sum_);
  fleet_last_ = t;
}

void UsageIntegrator::AddUsage(size_t team_index, size_t r, core::Quantity delta, core::Time t) {
  t = now_ = Clamp(t);
  Team& team = teams_[team_index];
  FlushTeam(team, t);
  FlushFleet(t);
  team.borrowed_sum -= Borrowed(team, r);
  team.used[r] += delta;
  team.used_sum += delta;
  team.borrowed_sum += Borrowed(team, r);
  fleet_used_ += delta;
}

void UsageIntegrator::SetGuaranteed(size_t team_index, size_t r, core::Quantity guaranteed,
                                    core::Time t) {
  t = now_ = Clamp(t);
  Team& team = teams_[team_index];
  FlushTeam(team, t);
  team.borrowed_sum -= Borrowed(team, r);
  team.guaranteed[r] = guaranteed;
  team.borrowed_sum += Borrowed(team, r);
}

void UsageIntegrator::SetCapacity(size_t r, core::Quantity capacity, core::Time t) {
  t = now_ = Clamp(t);
  FlushFleet(t);
  capacity_sum_ += capacity - capacity_[r];
  capacity_[r] = capacity;
}

void UsageIntegrator::Flush(core::Time t) {
  t = now_ = Clamp(t);
  for (Team& team : teams_) FlushTeam(team, t);
  FlushFleet(t);
}

}  // namespace tidegate::sim
