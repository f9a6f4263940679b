#include "broker/http/health.h"

#include "absl/strings/str_cat.h"

namespace tidegate::http {

Verdict Liveness(const HealthInputs& in) {
  if (in.writer_wake_ms == 0) return {false, "the writer thread is not running"};
  const int64_t allowed_ms = 2 * in.tick_ms + 30000;
  const int64_t idle_ms = in.now_ms - in.writer_wake_ms;
  if (idle_ms > allowed_ms) {
    return {false, absl::StrCat("the writer thread has not woken for ", idle_ms / 1000, " s (more than ",
                                allowed_ms / 1000, " s: two ticks and 30 s)")};
  }
  return {true, "ok"};
}

Verdict Readiness(const HealthInputs& in) {
  Verdict alive = Liveness(in);
  if (!alive.ok) return alive;
  if (!in.ledger.ok()) return {false, std::string(in.ledger.message())};
  if (in.lease_epoch > 0) return {true, absl::StrCat("ok: leader, epoch ", in.lease_epoch)};
  return {true, "ok"};
}

Verdict StandbyReadiness(const StandbyInputs& in) {
  if (!in.problem.empty()) return {false, absl::StrCat("standby: ", in.problem)};
  if (in.leader.empty()) return {true, "ok: standby, no leader holds the lease (taking over)"};
  return {true, absl::StrCat("ok: standby, the leader is at ", in.leader, " (epoch ", in.lease_epoch, ")")};
}

}  // namespace tidegate::http
