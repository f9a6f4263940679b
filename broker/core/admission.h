// The verbs of one Apply call: validate and record commands, run admission
// cycles (POLICY.md §2, §4), choose victims (§3, §5), drain them and hold
// what they free for the job that waits (§4, §6).
//
// Threading: runs on the core's owner thread only; short-lived (one Apply).
#ifndef TIDEGATE_BROKER_CORE_ADMISSION_H_
#define TIDEGATE_BROKER_CORE_ADMISSION_H_

#include <string>
#include <vector>

#include "broker/core/state.h"
#include "broker/core/victims.h"

namespace tidegate::core {

// Validates a job spec against the config and builds the core's Job, with the
// spec normalized (defaults filled in). INVALID_ARGUMENT naming the field and
// the value. created_at defaults to `now`.
// A time as reasons state it: "2026-01-05T18:27:00Z" (UTC).
std::string ReasonTime(Time ms);
// A victim of the tide's lead-time reclaim (reasons.cc).
std::string TideDrainReason(const std::string& by, Time boundary, Time deadline);

absl::StatusOr<Job> ParseJobSpec(const CompiledConfig& config, const v1::JobSpec& spec, Time now);
// ParseJobSpec for a submit, which may not record a job that is already
// draining (only adopt may).
absl::StatusOr<Job> ParseSubmit(const CompiledConfig& config, const v1::JobSpec& spec, Time now);
// The `reject` event of a job spec that did not parse.
Event RejectEvent(const v1::JobSpec& spec, const absl::Status& why, Time now);
// The reason of the `error` for a submit of an existing id with another spec.
std::string DifferentSpecReason(const std::string& id);
// The same for an id retained after its job ended.
std::string EndedDifferentSpecReason(const std::string& id, const EndedJob& ended, int64_t retention_s);

// Recomputes the tide schedule (next lead, next boundary) and the guards
// from the state's base config and cursors: after Create, Restore or a
// config change.
void ResetTide(State& s);

// The teams whose own tide rule raises their guarantee or private part
// (g - lend_limit) at `boundary`, as node indices of `coming` (the quota in
// force from the boundary). An ancestor that rises only through a child's
// sum is not one of them. Lead reclaim and the guard are for these rises.
std::vector<int> RisingTeams(const v1::Config& source, const CompiledConfig& coming, Time boundary);

// The bounds every submitted or adopted spec must meet before it is parsed:
// a printable id of bounded length, bounded labels, a real elastic range, a
// positive demand (not for `adopt`, which records what already runs).
// INVALID_ARGUMENT naming the field and the value.
absl::Status CheckSubmitBounds(const v1::JobSpec& spec, bool adopt);

class Admission {
 public:
  explicit Admission(State& s) : s_(s) {}

  // Time-driven work due at or before `now`, in time order, each instant
  // followed by a cycle. Leaves s.now() == now.
  void RunDue(Time now);

  void Submit(const v1::JobSpec& spec);
  void Adopt(const v1::AdoptJobs& batch);
  void Finish(const std::string& id);
  // An agent confirmed a draining victim is gone: it leaves now, as if its
  // grace period had ended. `error` for a job that is not draining.
  void Vacate(const std::string& id);
  // An elastic framework acked resize request `epoch` at `replicas`.
  void AckResize(const v1::AckResize& ack);
  void Checkpoint(const std::string& id);
  void SetQuota(const v1::SetQuota& set);
  void SetCapacity(const v1::SetCapacity& set);
  // Replaces the whole config; an invalid one is an `error` event and changes
  // nothing. Jobs of teams or clusters the new config drops are refused too.
  void ApplyConfig(const v1::Config& next) { Reconfigure(next); }
  void Error(const std::string& job, std::string reason);

  // When the next tide lead or boundary is due, or nullopt without tide.
  std::optional<Time> NextTideEvent() const;

  // One admission cycle (POLICY.md §4): pending jobs in queue order (or
  // fair-share order), each admitted, given victims, or left waiting.
  void Cycle();
  // Writes a `queue` record for each job submitted in this call that is
  // still waiting and has no record yet.
  void AnnounceQueued();
  // Pops timers that no longer stand for work (the job left, was readmitted,
  // or the slot was reused), so NextDeadline() names real work only.
  void DropStaleTimers();

 private:
  enum class Outcome { kAdmitted, kWaiting, kQueued };

  Outcome TryAdmit(int j);
  void Admit(int j);
  ResourceMask Contested(const Job& job) const;
  bool ExceedsMax(const Job& job) const;
  bool PassesGate(const Job& job, ResourceMask contested) const;
  // Reasons (reasons.cc): what blocks the job, with numbers.
  std::string BindingReason(const Job& job, ResourceMask contested) const;
  std::string ExceedsMaxReason(const Job& job) const;
  std::string BehindHeadReason(const Job& head) const;
  std::string TideGuardReason(const Job& job) const;
  // The head of a team that cannot fit anything is not tried; its reason
  // is recomputed so that its numbers follow usage.
  void RefreshStuckHead(int team);
  // Sets job.reason; a change is reported to readers (QuietlyChangedIds).
  void SetReason(Job& job, std::string reason);
  void ChooseVictims(int j, const std::vector<Victim>& victims);
  // A draining job departs (grace over, or it ended). `ended` = it finished.
  void Leave(int v, bool ended);
  void ResolveWaiting(int j);
  // The jobs waiting for their victims, in queue order (stale entries of
  // State::waiters dropped).
  std::vector<int> Waiters();
  // Admits every waiting reclaimer that fits now, its departed victims'
  // capacity counted as free (POLICY.md §4 as the project settles it).
  void AdmitWaitersThatFit();
  void ClassicalPass();
  void FairSharePass();
  bool TeamStuck(int team) const;
  // Strict FIFO: the jobs from `it` on wait behind `head`; says so.
  void MarkBehindHead(int head, std::set<QueueKey>::const_iterator it, std::set<QueueKey>::const_iterator end);
  bool TimerLive(const Timer& timer) const;

  // ---- elastic jobs (growth.cc): POLICY.md §4 Growth, DESIGN.md §5.
  // Grows elastic jobs into free capacity, lowest share first.
  void GrowPass();
  // Does one more replica of `job` fit now (and under every tide guard)?
  bool GrowFits(const Job& job) const;
  // Asks job j to re-form at `target` replicas: a `resize` record, epoch + 1.
  // A grow reserves its capacity at once; a shrink frees it at the ack or the
  // deadline. `for_job`: the waiting job a shrink frees capacity for, or -1;
  // `by`: what the record names as the cause when no job waits ("tide:T").
  void RequestResize(int j, int64_t target, const std::string& reason, int for_job, const std::string& by = "");
  // The pending resize of j is over, j now runs `replicas`: capacity moves,
  // a shrink's freed part is held for the job that waits for it.
  void CompleteResize(int j, int64_t replicas);
  // Forgets j's pending grow: the job is evicted whole with what it holds.
  void DropGrowRequest(int j);
  // Admits (or requeues) the waiting jobs whose last shrink CompleteResize
  // just resolved; called after the records that made room for them.
  void ResolveDeferred();
  // A grow came back short or not at all: no growth for resize_timeout_s.
  void BackOffGrowth(int j);
  // The borrowed part of job j if it held `replicas` (state unchanged).
  NamedQuantities BorrowedAt(int j, int64_t replicas);
  // The borrowed part of j at its current size, and whether it borrows.
  NamedQuantities BorrowedPart(const Job& job, std::vector<Quantity>* by_resource) const;

  // ---- tide (tide_reclaim.cc): POLICY.md §6.
  // Runs the tide events due at `t`; true when something ran.
  bool RunTide(Time t);
  // At a boundary's lead: frees what the coming quota cannot hold on the
  // path of each team in `rising` (RisingTeams).
  void TideReclaim(const CompiledConfig& coming, const std::vector<int>& rising);
  // Does adding `extra` to j's team fit every tide guard?
  bool FitsGuards(const Job& job, const std::vector<Quantity>& extra) const;
  // FitsGuards caches usage per change stamp; call after moving usage
  // without a new stamp (a waiter's holds taken out for a test).
  void InvalidateGuardUsage() { s_.tide().guard_usage_stamp = 0; }
  // Compiles the quota in force at the state's now from base `source`.
  absl::StatusOr<CompiledConfig> CompileAt(const v1::Config& source, Time t) const;

  // INVALID_ARGUMENT naming the resource when the job's largest demand could
  // not be summed with the fleet's capacity and every other job's demand.
  absl::Status CheckSummable(const Job& job) const;
  // Keeps an ended job (or a rejected spec) for the retention window.
  void RememberEnded(const Job& job, std::string reason);
  void RememberRejected(const v1::JobSpec& spec, const absl::Status& why);

  void Emit(Event e);
  // A `reject` record for a job spec that failed validation; changes nothing.
  void Reject(const v1::JobSpec& spec, const absl::Status& why);
  void Reconfigure(const v1::Config& next);

  State& s_;
  std::vector<int> submitted_;
  bool freed_ = false;  // a job left mid-pass: its capacity may fit jobs already passed.
  std::vector<int> deferred_;  // waiting jobs whose victims are all resolved (CompleteResize).
};

}  // namespace tidegate::core

#endif  // TIDEGATE_BROKER_CORE_ADMISSION_H_
