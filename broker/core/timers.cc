// Time-driven work: grace deadlines, resize deadlines, backoff expiries and
// tide events, run in time order, each instant followed by a cycle.
#include <algorithm>

#include "broker/core/decider.h"

namespace tidegate::core {

bool Decider::TimerLive(const Timer& timer) const {
  const Job& job = s_.job(timer.job);
  if (job.gen != timer.gen) return false;  // the slot was reused.
  if (job.resize_pending() && job.resize_deadline == timer.at) return true;
  if (job.phase == Phase::kAdmitted && job.grow_backoff_until == timer.at) return true;
  if (job.phase == Phase::kDraining) return job.drain_deadline == timer.at;
  return job.phase == Phase::kQueued && job.requeued_at >= 0 &&
         job.requeued_at + s_.config().policy.requeue_backoff_s * kMillisPerSecond == timer.at;
}

void Decider::DropStaleTimers() {
  // So NextDeadline() reports only real work, the same in a restored core.
  auto& timers = s_.timers();
  while (!timers.empty() && !TimerLive(timers.top())) timers.pop();
}

void Decider::RunDue(Time now) {
  auto& timers = s_.timers();
  for (;;) {
    const std::optional<Time> tide = NextTideEvent();
    const bool job_due = !timers.empty() && timers.top().at <= now;
    const bool tide_due = tide && *tide <= now;
    if (!job_due && !tide_due) break;
    const Time t = !job_due ? *tide : !tide_due ? timers.top().at : std::min(*tide, timers.top().at);
    s_.set_now(std::max(t, s_.now()));
    bool any = tide_due && *tide == t && RunTide(t);
    while (!timers.empty() && timers.top().at == t) {
      const Timer timer = timers.top();
      timers.pop();
      if (!TimerLive(timer)) continue;
      Job& job = s_.job(timer.job);
      if (job.resize_pending() && job.resize_deadline == timer.at) {
        // No ack in time: a shrink is enforced (the agent stops the extra
        // replicas), a grow withdrawn.
        const int64_t asked = job.resize_to;
        const int64_t to = job.shrink_pending() ? asked : job.resize_from;
        Event e;
        e.type = EventType::kResize;
        e.job = job.id;
        e.team = s_.node(job.team).name;
        e.from = job.shrink_pending() ? job.resize_from : asked;
        e.to = to;
        e.replicas = to;
        e.reason = "deadline";
        e.epoch = job.epoch;
        const bool grow = !job.shrink_pending();
        e.borrowed = BorrowedAt(timer.job, to);
        CompleteResize(timer.job, to);
        if (grow) BackOffGrowth(timer.job);
        Emit(std::move(e));
        ResolveDeferred();
      } else if (job.phase == Phase::kAdmitted && job.grow_backoff_until == timer.at) {
        job.grow_backoff_until = -1;  // it may grow again.
        s_.Changed();
      } else if (job.phase == Phase::kDraining) {
        Leave(timer.job, /*ended=*/false);
      } else {
        job.parked_stamp = 0;  // its backoff is over: it may choose victims now.
        s_.NoteQuietChange(job.id);  // its reason no longer names the backoff (ReasonNow).
      }
      any = true;
    }
    if (any) Cycle();
  }
  DropStaleTimers();
  s_.set_now(std::max(now, s_.now()));
}

}  // namespace tidegate::core
