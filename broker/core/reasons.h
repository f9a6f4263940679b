// Reasons: why a job waits, stated with numbers (docs/jobs.md lists them).
// The cycle sets a job's reason when it tries the job (Decider, reasons.cc);
// a team none of whose jobs can fit is not tried (the cost rule of
// docs/policy.md §4), so the reasons of its queued jobs are computed when
// they are read instead (ReasonNow), by the core from its state or by a
// reader from a WaitPicture (reasons_now.h), with the same functions.
#ifndef TIDEGATE_BROKER_CORE_REASONS_H_
#define TIDEGATE_BROKER_CORE_REASONS_H_

#include <string>
#include <vector>

#include "broker/core/state.h"
#include "broker/core/types.h"

namespace tidegate::core {

// The code each reason of a waiting or draining job starts with (followed by
// ':' or ' '), for scripts to match; the rest states the numbers and what
// would unblock the job. docs/jobs.md has a row with an example for each
// (tests/tools/check-reason-docs.py), and the property test checks that
// every reason a job shows starts with one.
inline constexpr const char* kReasonCodes[] = {
    "exceeds_max", "capacity", "borrow_limit", "quota_in_use", "strict_fifo",
    "reclaiming",  "requeued", "tide",         "draining for",
};
// The code `reason` starts with, or "" when none does.
std::string ReasonCode(const std::string& reason);
// Does the reason name a requeue backoff ("requeued after preemption ...",
// "...; requeue backoff: ...")? It states times, not usage, so it stands
// until the backoff ends.
bool ReasonNamesBackoff(const std::string& reason);

// A time as reasons state it: "2026-01-05T18:27:00Z" (UTC).
std::string ReasonTime(Time ms);

// What a waiting job's reason reads: the quota in force and the numbers now.
class ReasonNumbers {
 public:
  virtual ~ReasonNumbers() = default;
  virtual const CompiledConfig& config() const = 0;
  virtual Quantity usage(int node, int r) const = 0;
  virtual Quantity free_capacity(int cluster, int r) const = 0;
  // available(n) (docs/policy.md §1) for every resource, into out.
  virtual void Available(int node, std::vector<Quantity>* out) const = 0;
};

// The core's own numbers.
class StateNumbers final : public ReasonNumbers {
 public:
  explicit StateNumbers(const State& s) : s_(s) {}
  const CompiledConfig& config() const override { return s_.config(); }
  Quantity usage(int node, int r) const override { return s_.node_state(node).usage[r]; }
  Quantity free_capacity(int cluster, int r) const override { return s_.free_capacity(cluster, r); }
  void Available(int node, std::vector<Quantity>* out) const override { s_.Available(node, out); }

 private:
  const State& s_;
};

// Can the job never fit under the quota in force (docs/policy.md §2 step 2)?
bool ExceedsMax(const ReasonNumbers& n, const Job& job);
// The resources on which the job does not fit now (docs/policy.md §2).
ResourceMask Contested(const ReasonNumbers& n, const Job& job);
// "exceeds_max: ..." with the limit that no usage elsewhere could lift.
std::string ExceedsMaxReason(const ReasonNumbers& n, const Job& job);
// "capacity ..." / "borrow_limit ..." / "quota_in_use ...": the first
// contested resource's blocker, with the numbers now.
std::string BindingReason(const ReasonNumbers& n, const Job& job, ResourceMask contested);
// "strict_fifo: behind strict-FIFO head HEAD of TEAM ...".
std::string BehindHeadReason(const std::string& head, const std::string& team);

// How the last cycle left a leaf team's queue.
struct WaitingTeam {
  bool stuck = false;        // no job could fit or choose victims: none was tried.
  bool strict_fifo = false;  // its head blocks the jobs behind it.
  std::string head;          // the first queued job, which blocks a strict team.
};

// The reason of queued job `job` now. `stored` is the reason the cycle last
// set; it stands for a job the last cycle tried (or that waits for its
// victims, `waits_for_victims`, or is in its requeue backoff, `in_backoff`,
// whose reasons name times, not usage). The jobs of a stuck team, and those
// behind a strict team's head, get theirs from the numbers now.
std::string ReasonNow(const ReasonNumbers& n, const WaitingTeam& team, const Job& job, bool waits_for_victims,
                      bool in_backoff, const std::string& stored);
// The same for a job of the core's state.
std::string ReasonNow(const State& s, const Job& job);

}  // namespace tidegate::core

#endif  // TIDEGATE_BROKER_CORE_REASONS_H_
