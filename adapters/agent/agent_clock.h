// The agent's time: now (grace deadlines are Unix ms, as the broker sends
// them) and the waits between polls and retries. Injected so tests can move
// time themselves instead of sleeping through polls, backoffs and grace
// periods.
//
// Sleep(ms, wake) returns once `ms` have passed on the clock, or earlier
// once `wake()` holds. `wake` runs on the sleeping thread under the clock's
// lock, again whenever Notify() is called (or time moves): whoever changes
// what it reads calls Notify() afterwards.
//
// Threading: thread-safe.
#ifndef TIDEGATE_ADAPTERS_AGENT_AGENT_CLOCK_H_
#define TIDEGATE_ADAPTERS_AGENT_AGENT_CLOCK_H_

#include <cstdint>
#include <functional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace tidegate::adapters {

class AgentClock {
 public:
  virtual ~AgentClock() = default;
  virtual int64_t NowMs() = 0;  // milliseconds since the Unix epoch.
  virtual void Sleep(int64_t ms, const std::function<bool()>& wake) = 0;
  void Notify() {
    absl::MutexLock lock(&mu_);
    time_moved_.SignalAll();
  }

 protected:
  absl::Mutex mu_;
  absl::CondVar time_moved_;  // or Notify(): sleepers look again.
};

class SystemAgentClock : public AgentClock {
 public:
  int64_t NowMs() override { return absl::ToUnixMillis(absl::Now()); }
  void Sleep(int64_t ms, const std::function<bool()>& wake) override {
    const absl::Time deadline = absl::Now() + absl::Milliseconds(ms);
    absl::MutexLock lock(&mu_);
    while (!wake()) {
      if (time_moved_.WaitWithDeadline(&mu_, deadline)) return;  // the time is up.
    }
  }
};

// Time moves only when the test says so; Sleep blocks until then (or wake).
class ManualAgentClock : public AgentClock {
 public:
  explicit ManualAgentClock(int64_t start_ms) : now_ms_(start_ms) {}

  int64_t NowMs() override {
    absl::MutexLock lock(&mu_);
    return now_ms_;
  }
  void Sleep(int64_t ms, const std::function<bool()>& wake) override {
    absl::MutexLock lock(&mu_);
    const int64_t until = now_ms_ + ms;
    while (now_ms_ < until && !wake()) {
      asleep_ = true;  // blocked until time moves.
      fell_asleep_.SignalAll();
      time_moved_.Wait(&mu_);
    }
    asleep_ = false;
  }

  // Waits (up to `real_timeout`) until a thread sleeps on this clock, then
  // moves time by `ms`: one step of a polling loop, without real sleeps.
  // False when nobody went to sleep in time (time stays).
  bool AdvanceWhenAsleep(int64_t ms, absl::Duration real_timeout) {
    const absl::Time deadline = absl::Now() + real_timeout;
    absl::MutexLock lock(&mu_);
    while (!asleep_) {
      if (fell_asleep_.WaitWithDeadline(&mu_, deadline) && !asleep_) return false;
    }
    asleep_ = false;
    now_ms_ += ms;
    time_moved_.SignalAll();
    return true;
  }

 private:
  int64_t now_ms_ ABSL_GUARDED_BY(mu_);
  bool asleep_ ABSL_GUARDED_BY(mu_) = false;
  absl::CondVar fell_asleep_;
};

}  // namespace tidegate::adapters

#endif  // TIDEGATE_ADAPTERS_AGENT_AGENT_CLOCK_H_
