// The simulator's model of each job's work (docs/design.md §9 `run_s`).
//
// A job's progress advances while it is admitted (rigid jobs at rate 1: one
// second of work per second; elastic jobs at replicas / max). When it starts (admitted, or readmitted), its
// completion is scheduled at start + remaining work; the simulator then
// finishes it. A preemption stops progress at once: the job falls back to its
// last checkpoint (an explicit `checkpoint`, or every checkpoint_interval of
// running since it last started, or nothing => back to 0) and resumes from
// there when it is readmitted. Jobs without `run_s` never end by themselves but
// are still tracked, so their lost work counts.
//
// All times are core times (ms since the epoch); work is in ms of running.
//
// Threading: not thread-safe; owned by one simulation.
#ifndef TIDEGATE_BROKER_SIM_WORK_H_
#define TIDEGATE_BROKER_SIM_WORK_H_

#include <cstdint>
#include <optional>
#include <queue>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "broker/core/types.h"

namespace tidegate::sim {

class WorkTracker {
 public:
  // Work done, in ms of full-speed running, as an exact fraction num/den
  // (den > 0, reduced): an elastic job at replicas/max progresses by
  // fractions of a ms, and rounding each stretch would make completions late.
  __extension__ typedef __int128 Int128;  // GCC's, not ISO C++ (-Wpedantic).
  struct Work {
    Int128 num = 0;
    Int128 den = 1;
  };
  struct Spec {
    std::optional<core::Time> work_ms;                // run_s; nullopt = runs until finished.
    std::optional<core::Time> checkpoint_interval_ms;  // > 0 to take effect.
  };

  // Registers a job before it is submitted. No-op for a job already known and
  // not ended (a repeated submit keeps the first job's progress); a job that
  // ended starts afresh (ids may be reused once a job is gone).
  void Register(const std::string& job, const Spec& spec);

  // Progress starts at `t` and the completion is scheduled. No-op for an
  // unknown job or one already running.
  void Start(const std::string& job, core::Time t);

  // From `t` the job progresses at num/den of its full speed (an elastic job
  // at replicas/max); a resize checkpoints it first, so no work is lost.
  void SetRate(const std::string& job, core::Time t, int64_t num, int64_t den);

  // Progress stops at `t` (the job was chosen as a victim). Returns the work
  // lost, in ms of running: progress since the last checkpoint. 0 for a job
  // that was not running.
  core::Time Stop(const std::string& job, core::Time t);

  // The job reported a checkpoint at `t`: its progress so far is safe.
  // No-op unless it is running.
  void Checkpoint(const std::string& job, core::Time t);

  // The job ended: no completion, nothing more to track.
  void End(const std::string& job);

  // The earliest scheduled completion, if any.
  std::optional<core::Time> NextCompletion();

  // Removes and returns the earliest completion due at or before `t` (ties in
  // the order they were scheduled); nullopt when none is due. The job stops
  // running; the caller finishes it.
  std::optional<std::string> PopDue(core::Time t);

 private:
  struct Job {
    Spec spec;
    Work done;                     // progress when it last started (or stopped).
    Work checkpoint;               // progress at the latest explicit checkpoint.
    core::Time running_since = -1;  // -1 when not running.
    uint64_t generation = 0;       // bumps invalidate scheduled completions.
    bool ended = false;
    int64_t rate_num = 1;          // progress per ms of running = num/den.
    int64_t rate_den = 1;
    // done + `ran` ms of running at the current rate.
    Work After(core::Time ran) const;
  };
  struct Completion {
    core::Time at;
    uint64_t seq;
    uint64_t generation;
    std::string job;
    bool operator>(const Completion& o) const {
      return at != o.at ? at > o.at : seq > o.seq;
    }
  };

  // Drops completions whose job stopped or ended since they were scheduled.
  void Prune();

  absl::flat_hash_map<std::string, Job> jobs_;
  std::priority_queue<Completion, std::vector<Completion>, std::greater<>> completions_;
  uint64_t next_seq_ = 0;
};

}  // namespace tidegate::sim

#endif  // TIDEGATE_BROKER_SIM_WORK_H_
