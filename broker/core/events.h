// What the core reports: one Event per decision or state change, in order.
// The simulator prints them as JSON lines (docs/design.md §9); the service answers
// callers and journals them.
#ifndef TIDEGATE_BROKER_CORE_EVENTS_H_
#define TIDEGATE_BROKER_CORE_EVENTS_H_

#include <string>
#include <utility>
#include <vector>

#include "broker/core/types.h"
#include "tidegate/v1/config.pb.h"

namespace tidegate::core {

enum class EventType { kAdmit, kQueue, kReclaim, kPreempt, kResize, kEnd, kReject, kError };

// "admit", "queue", ... as written in the JSON-lines output.
const char* EventTypeName(EventType type);

// Named quantities, in config resource order (e.g. {{"gpu", 2}}).
using NamedQuantities = std::vector<std::pair<std::string, Quantity>>;

struct Event {
  EventType type = EventType::kError;
  Time at = 0;
  std::string job;
  std::string team;

  // admit: replicas admitted; resize: `to`.
  int64_t replicas = 0;
  // admit/resize: the job's own part above its team's guarantee, per requested
  // resource: min(d_r, max(0, u(t) + d_r - g(t))) at the moment of admission.
  NamedQuantities borrowed;
  bool adopted = false;  // admit: recorded by `adopt`, without any check.

  // queue: why it waits ("exceeds_max", "borrow_limit org/ml gpu", ...,
  //        "requeued" for a victim that went back to the queue);
  // preempt: "reclaim", "priority", "fair_share", "tide";
  // resize: "grow", "reclaim", "priority", "tide:<team>", "deadline" (an
  //         unacked request ran out), "ack" (acked at another size);
  // reject/error: what was wrong, naming the field and the value.
  std::string reason;
  bool requeued = false;  // queue: a victim going back to the queue.

  // preempt: the job the victim makes room for, or "tide:<team>".
  std::string by;

  // reclaim: RECLAIMING or PREEMPTING, and the victims chosen.
  v1::Decision decision = v1::DECISION_UNSPECIFIED;
  std::vector<std::string> victims;

  // resize: replicas before and after; the request's epoch and the time by
  // which it must be acked (a shrink is then enforced, a grow withdrawn).
  int64_t from = 0;
  int64_t to = 0;
  int64_t epoch = 0;
  Time deadline = 0;
};

}  // namespace tidegate::core

#endif  // TIDEGATE_BROKER_CORE_EVENTS_H_
