// What /healthz and /readyz answer (docs/observability.md). Liveness is the
// writer thread: it wakes at least once per tick, so a wake older than two
// ticks plus 30 s means it is stuck (a hung disk, a deadlock) or gone, and a
// restart is the cure. Readiness adds the ledger: while commits fail the
// broker refuses writes, so a load balancer should send writers elsewhere;
// it turns ready again by itself once a retry commits.
//
// Pure.
#ifndef TIDEGATE_BROKER_HTTP_HEALTH_H_
#define TIDEGATE_BROKER_HTTP_HEALTH_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace tidegate::http {

struct HealthInputs {
  int64_t now_ms = 0;
  int64_t writer_wake_ms = 0;  // CoreLoop::LastLoopWakeMs(); 0 = the thread ended
  int64_t tick_ms = 10000;     // policy.tick_s
  absl::Status ledger;         // CoreLoop::LedgerHealth()
  int64_t lease_epoch = 0;     // PostgreSQL: the lease this broker leads under; 0 = SQLite
};

// A standby broker (PostgreSQL ledger, docs/ha.md): what it last saw.
struct StandbyInputs {
  std::string leader;    // the leader's address; "" while none holds the lease
  int64_t lease_epoch = 0;
  std::string problem;   // "" while the database answers
};

struct Verdict {
  bool ok = false;
  std::string text;  // one line for people: "ok" or what is wrong
};

Verdict Liveness(const HealthInputs& in);
Verdict Readiness(const HealthInputs& in);
// A standby is ready while it reaches the database: it then answers its
// callers (UNAVAILABLE naming the leader) and can take over. Unready would
// stall a StatefulSet's rolling update on its standby pod (docs/ha.md).
Verdict StandbyReadiness(const StandbyInputs& in);

}  // namespace tidegate::http

#endif  // TIDEGATE_BROKER_HTTP_HEALTH_H_
