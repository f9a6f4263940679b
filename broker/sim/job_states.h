// Each job's state as the decision records tell it, for expectations
// (docs/design.md §9: "state after every event at `at`").
//
//   admit   -> admitted (replicas; borrowing = some borrowed > 0)
//   queue   -> queued
//   preempt -> draining
//   end     -> ended
//   reject  -> rejected
//   resize  -> replicas and borrowing at the new size
//   reclaim -> queued (J waits for its victims: "J stays queued until its
//              admit"; the core writes no separate queue record for it)
// error records change no job's state.
//
// Threading: not thread-safe; owned by one simulation.
#ifndef TIDEGATE_BROKER_SIM_JOB_STATES_H_
#define TIDEGATE_BROKER_SIM_JOB_STATES_H_

#include <array>
#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "broker/core/events.h"
#include "tidegate/v1/config.pb.h"

namespace tidegate::sim {

struct JobStatus {
  v1::JobState state = v1::JOB_STATE_UNSPECIFIED;
  int64_t replicas = 0;    // of the latest admit or resize.
  bool borrowing = false;  // of the latest admit or resize.
};

class JobStates {
 public:
  // Updates the job named by `event` (see the table above).
  void Apply(const core::Event& event);

  // Sets a job's state directly: an adopted job marked `draining: true` is
  // admitted by its record and draining from the start.
  void SetState(const std::string& job, v1::JobState state);

  // nullptr for a job no record has named.
  const JobStatus* Find(const std::string& job) const;

  // How many jobs are in `state` now. O(1).
  int64_t Count(v1::JobState state) const;

 private:
  JobStatus& Get(const std::string& job);
  void Move(JobStatus& job, v1::JobState to);

  absl::flat_hash_map<std::string, JobStatus> jobs_;
  std::array<int64_t, 8> counts_{};  // indexed by v1::JobState.
};

}  // namespace tidegate::sim

#endif  // TIDEGATE_BROKER_SIM_JOB_STATES_H_
