// Time for the service, injected so tests can run a fake clock.
#ifndef TIDEGATE_BROKER_SERVICE_CLOCK_H_
#define TIDEGATE_BROKER_SERVICE_CLOCK_H_

#include <atomic>
#include <chrono>

#include "broker/core/types.h"

namespace tidegate::service {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual core::Time NowMs() = 0;  // milliseconds since the Unix epoch.
};

class RealClock : public Clock {
 public:
  core::Time NowMs() override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

// Thread-safe; time moves only when told.
class FakeClock : public Clock {
 public:
  explicit FakeClock(core::Time start) : now_(start) {}
  core::Time NowMs() override { return now_.load(); }
  void Advance(core::Time ms) { now_ += ms; }

 private:
  std::atomic<core::Time> now_;
};

}  // namespace tidegate::service

#endif  // TIDEGATE_BROKER_SERVICE_CLOCK_H_
