// Decider: what one Broker::Apply call does to the state. It records the
// command, runs the work that fell due, and runs admission cycles (docs/policy.md
// §2, §4): admits, chooses victims (§3, §5), drains them and holds what they
// free for the job that waits (§4), grows elastic jobs, and follows the tide
// (§6). Every decision is an Event appended to State::out().
//
// One class, because every verb moves the same state and the same records;
// its definitions live in one file per concept:
//   commands.cc         submit, adopt, finish, checkpoint, config changes
//   timers.cc           deadlines and backoffs due at a time (RunDue)
//   admission_cycle.cc  the cycle, its passes and the test of one job
//   drain.cc            victims drain; holds; a reclaimer resolved
//   growth.cc           elastic growth and the resize protocol
//   tide_reclaim.cc     the tide's schedule, guards and reclaim at the lead
//   reasons.cc          why a job waits, with numbers
//
// Threading: runs on the core's owner thread only; short-lived (one Apply).
#ifndef TIDEGATE_BROKER_CORE_DECIDER_H_
#define TIDEGATE_BROKER_CORE_DECIDER_H_

#include <string>
#include <vector>

#include "broker/core/state.h"
#include "broker/core/victims.h"
#include "tidegate/internal/v1/journal.pb.h"

namespace tidegate::core {

// Why a job that fits now waits between a tide lead and its change.
inline constexpr char kNoRoomUnderComingTide[] = "tide: no room under the quota of the coming tide change";
// A victim of the tide's lead-time reclaim, with the rise and its deadline.
std::string TideDrainReason(const std::string& by, Time boundary, Time deadline);

class Decider {
 public:
  explicit Decider(State& s) : s_(s) {}

  // ---- commands (commands.cc, drain.cc for Vacate, growth.cc for AckResize)

  void Submit(const v1::JobSpec& spec);
  void Adopt(const internal::v1::AdoptJobs& batch);
  void Finish(const std::string& id);
  // An agent confirmed a draining victim is gone: it leaves now, as if its
  // grace period had ended. `error` for a job that is not draining.
  void Vacate(const std::string& id);
  // An elastic framework acked resize request `epoch` at `replicas`.
  void AckResize(const internal::v1::AckResize& ack);
  void Checkpoint(const std::string& id);
  void SetQuota(const v1::SetQuota& set);
  void SetCapacity(const v1::SetCapacity& set);
  // Replaces the whole config; an invalid one is an `error` event and changes
  // nothing. Jobs of teams or clusters the new config drops are refused too.
  void ApplyConfig(const v1::Config& next) { Reconfigure(next, /*same_tide_rules=*/false); }
  void Error(const std::string& job, std::string reason);

  // ---- time (timers.cc)
  // Time-driven work due at or before `now`, in time order, each instant
  // followed by a cycle. Leaves s.now() == now.
  void RunDue(Time now);
  // Pops timers that no longer stand for work (the job left, was readmitted,
  // or the slot was reused), so NextDeadline() names real work only.
  void DropStaleTimers();
  // When the next tide lead or boundary is due, or nullopt without tide
  // (tide_reclaim.cc).
  std::optional<Time> NextTideEvent() const;

  // ---- the admission cycle (admission_cycle.cc)
  // One admission cycle (docs/policy.md §4): pending jobs in queue order (or
  // fair-share order), each admitted, given victims, or left waiting.
  void Cycle();
  // Writes a `queue` record for each job submitted in this call that is
  // still waiting and has no record yet.
  void AnnounceQueued();

 private:
  enum class Outcome { kAdmitted, kWaiting, kQueued };

  // ---- the admission cycle (admission_cycle.cc)
  // The jobs waiting for their victims, in queue order (stale entries of
  // State::waiters dropped).
  std::vector<int> Waiters();
  // Admits every waiting reclaimer that fits now, its departed victims'
  // capacity counted as free (docs/policy.md §4 as the project settles it).
  void AdmitWaitersThatFit();
  void ClassicalPass();
  void FairSharePass();
  // Can no pending job of `team` fit or choose victims? (a cheap, sound test)
  bool TeamStuck(int team) const;
  // Is some running job of `team` a same-team candidate for its queue head
  // (and so possibly for any of its waiting jobs)?
  bool AnySameTeamCandidate(int team) const;
  // Strict FIFO: the jobs from `it` on wait behind `head`; says so.
  void MarkBehindHead(int head, std::set<QueueKey>::const_iterator it, std::set<QueueKey>::const_iterator end);
  // One job: admitted, given victims (kWaiting), or left queued.
  Outcome TryAdmit(int j);
  void Admit(int j);
  // The resources on which the job does not fit now (docs/policy.md §2).
  ResourceMask Contested(const Job& job) const;
  bool ExceedsMax(const Job& job) const;
  // May the job look for victims at all (docs/policy.md §2 step 3, gate (a)-(c))?
  bool PassesGate(const Job& job, ResourceMask contested) const;
  // When a victim requeued at `requeued_at` may choose victims again:
  // requeue_backoff_s later, and never in the instant it was evicted, so two
  // jobs cannot evict each other back and forth within one instant even with
  // a backoff of 0 (docs/policy.md §4 "No flapping").
  Time MayPreemptAgainAt(Time requeued_at) const;

  // ---- time (timers.cc)
  bool TimerLive(const Timer& timer) const;

  // ---- reasons (reasons.cc): what blocks the job, with numbers.
  std::string BindingReason(const Job& job, ResourceMask contested) const;
  std::string ExceedsMaxReason(const Job& job) const;
  std::string BehindHeadReason(const Job& head) const;
  std::string TideGuardReason(const Job& job) const;
  // The head of a team that cannot fit anything is not tried; its reason
  // is recomputed so that its numbers follow usage.
  void RefreshStuckHead(int team);
  // Sets job.reason; a change is reported to readers (QuietlyChangedIds).
  void SetReason(Job& job, std::string reason);

  // ---- drain and holds (drain.cc)
  // Victims start draining (or shrinking) for job j, which waits for them.
  void ChooseVictims(int j, const std::vector<Victim>& victims);
  // A draining job departs (grace over, or it ended). `ended` = it finished.
  void Leave(int v, bool ended);
  // Job j's last victim is gone: its holds are released and it is admitted
  // at once if it fits, else requeued with a record saying why.
  void ResolveWaiting(int j);

  // ---- elastic jobs (growth.cc): docs/policy.md §4 Growth, docs/design.md §5.
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
  NamedQuantities BorrowedAt(int j, int64_t replicas, std::vector<Quantity>* by_resource = nullptr);
  // Sets job.borrowed and job.borrowing from its part above the guarantee.
  static void SetBorrowed(Job& job, std::vector<Quantity> by_resource);
  // The borrowed part of j at its current size, and whether it borrows.
  NamedQuantities BorrowedPart(const Job& job, std::vector<Quantity>* by_resource) const;

  // ---- tide (tide_reclaim.cc): docs/policy.md §6.
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
  // Puts the quota of the tide boundary at the state's now in force.
  void ApplyTideBoundary();
  // Compiles the quota in force at the state's now from base `source`.
  absl::StatusOr<CompiledConfig> CompileAt(const v1::Config& source, const TideCalendar& tide, Time t) const;

  // ---- commands (commands.cc)
  // INVALID_ARGUMENT naming the resource when the job's largest demand could
  // not be summed with the fleet's capacity and every other job's demand.
  absl::Status CheckSummable(const Job& job) const;
  // Keeps an ended job (or a rejected spec) for the retention window. Takes
  // the job's spec: the caller drops the job next.
  void RememberEnded(Job& job, std::string reason);
  void RememberRejected(const v1::JobSpec& spec, const absl::Status& why);

  void Emit(Event e);
  // A `reject` record for a job spec that failed validation; changes nothing.
  void Reject(const v1::JobSpec& spec, const absl::Status& why);
  // Replaces the config. `same_tide_rules`: `next` has the tide rules of the
  // config in force (a quota or capacity change, a tide boundary), so their
  // resolved calendar is reused and no time zone is loaded.
  void Reconfigure(const v1::Config& next, bool same_tide_rules);
  // Says again what binds each queued job, after the limits changed.
  void RefreshQueuedReasons();

  State& s_;
  // Jobs submitted by this command, by slot and the slot's generation: one
  // may leave within the command (admitted, then evicted without requeue),
  // and its slot must not be read as a queued job.
  struct Submitted {
    int slot;
    uint64_t gen;
  };
  std::vector<Submitted> submitted_;
  bool freed_ = false;  // a job left mid-pass: its capacity may fit jobs already passed.
  std::vector<int> deferred_;  // waiting jobs whose victims are all resolved (CompleteResize).
};

}  // namespace tidegate::core

#endif  // TIDEGATE_BROKER_CORE_DECIDER_H_
