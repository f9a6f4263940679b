// Accountant: turns what the broker holds over time into the ledger's usage
// and loan rows (issue 3, DESIGN.md §6). Pure: no clock, no I/O; time comes in
// with each observation, and the input is plain structs, not the core's types.
//
// The model. An observation gives, at time now_ms, for every LEAF team and
// resource: used, guaranteed (g), lend_limit (ℓ, unset = lends all) and queued
// demand. It holds until the next observation (piecewise constant), and each
// interval is integrated into resource-seconds, split at UTC hour boundaries
// (usage rows) and UTC day boundaries (loan rows):
//
//   borrowed(x)      = max(0, used(x) - g(x))
//   idle_lendable(n) = used(n) < g(n) ? min(g(n) - used(n), ℓ(n)) : 0
//   B = Σ borrowed,  L = Σ idle_lendable                         (per resource)
//   lent(n)          = idle_lendable(n) × min(B, L) / L
//   loan(x, n)       = borrowed(x) × idle_lendable(n) / max(B, L)
//   loan(x, "(pool)") = borrowed(x) × (B - L) / B   when B > L
//
// Borrowed capacity is attributed to lenders in proportion to the idle
// lendable guarantee each had at that moment. What no leaf lends (B > L:
// capacity of inner nodes' unassigned guarantee, or of the fleet root) is
// attributed to the lender kPoolLender. The attribution is fleet-wide: it does
// not follow sharing domains, and inner nodes' lend limits are not seen.
//
// Rows with all-zero values are left out; readers take a missing hour as 0.
//
// Threading: not thread-safe; meant for the service's writer thread.
#ifndef TIDEGATE_LEDGER_ACCOUNTING_H_
#define TIDEGATE_LEDGER_ACCOUNTING_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "ledger/store.h"

namespace tidegate::ledger {

// The lender of borrowed capacity that no leaf's idle guarantee covers.
inline constexpr char kPoolLender[] = "(pool)";

struct LeafObservation {
  std::string team;      // a leaf team
  std::string resource;  // "gpu", "cpu", ...
  int64_t used = 0;
  int64_t guaranteed = 0;
  std::optional<int64_t> lend_limit;  // nullopt: lends all of its idle guarantee
  int64_t queued = 0;                 // demand of the team's queued jobs
};

struct Observation {
  int64_t now_ms = 0;
  std::vector<LeafObservation> leaves;  // at most one per (team, resource)
};

struct AccountingRows {
  std::vector<UsageRow> usage;  // ordered by (team, resource, hour_start_ms)
  std::vector<LoanRow> loans;   // ordered by (borrower, lender, resource, day)
};

class Accountant {
 public:
  // Accounts [previous time, obs.now_ms) at the previously held state, then
  // holds `obs`. The first call only holds. INVALID_ARGUMENT, changing
  // nothing: now_ms before the previous time; a duplicate (team, resource);
  // an empty team or resource; a negative quantity.
  absl::Status Observe(const Observation& obs);

  // Accounts [previous time, now_ms) at the held state and keeps holding it
  // (for a periodic tick when nothing changed). A no-op before the first
  // Observe. INVALID_ARGUMENT when now_ms is before the previous time.
  absl::Status AdvanceTo(int64_t now_ms);

  // The rows accumulated since the last call, merged by key, in
  // resource-seconds; clears them. Add them to the next Batch.
  AccountingRows TakeRows();

 private:
  // Per resource-unit rates of the held state.
  struct TeamRates {
    double used = 0, borrowed = 0, lent = 0, queued = 0;
  };
  using TeamKey = std::pair<std::string, std::string>;                // team, resource
  using LoanKey = std::tuple<std::string, std::string, std::string>;  // borrower, lender, resource
  using UsageBucket = std::tuple<std::string, std::string, int64_t>;  // team, resource, hour
  using LoanBucket = std::tuple<std::string, std::string, std::string, std::string>;  // + day

  void Accumulate(int64_t from_ms, int64_t to_ms);

  std::optional<int64_t> held_since_ms_;
  std::map<TeamKey, TeamRates> teams_;
  std::map<LoanKey, double> loans_;
  // Accumulated resource-milliseconds (exact for integer rates), converted
  // to seconds by TakeRows.
  std::map<UsageBucket, TeamRates> usage_acc_;
  std::map<LoanBucket, double> loan_acc_;
};

}  // namespace tidegate::ledger

#endif  // TIDEGATE_LEDGER_ACCOUNTING_H_
