// Accountant: turns what the broker holds over time into the ledger's usage
// and loan rows (docs/design.md §6). Pure: no clock, no I/O; time comes in with
// each observation, and the input is plain structs, not the core's types.
//
// The model. An observation gives, at time now_ms, the quota tree per
// resource: every leaf team's used, guaranteed (g), lend_limit (ℓ, unset =
// lends all) and queued demand; every inner team's g and ℓ; the fleet's
// capacity. It holds until the next observation (piecewise constant), and
// each interval is integrated into resource-seconds, split at UTC hour
// boundaries (usage rows) and UTC day boundaries (loan rows).
//
// Who lends to whom is AttributeLoans' rule (accounting_loans.h): nearest in
// the tree first, then the inner node's own pool, then the fleet. Loan rows
// name a leaf, an inner team (its own pool) or kFleetLender as the lender.
// Usage rows exist for every team: a leaf's used and queued are its jobs';
// an inner team's are its subtree's totals; borrowed is max(0, u − g) and
// lent what teams outside it use of its guarantee (docs/policy.md §1's u).
//
// Figures that cannot be right (a negative quantity, e.g. a sum that wrapped
// in the caller; a sum here that would overflow int64) are never recorded:
// that figure is left out, the team counts as sitting at its guarantee for
// loans, problems() says which, and every other team is accounted as usual.
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

#include "absl/container/btree_set.h"
#include "absl/status/status.h"
#include "ledger/accounting_loans.h"
#include "ledger/store.h"

namespace tidegate::ledger {

struct LeafObservation {
  std::string team;      // a leaf team
  std::string resource;  // "gpu", "cpu", ...
  int64_t used = 0;
  int64_t guaranteed = 0;
  std::optional<int64_t> lend_limit;  // nullopt: lends all of its idle guarantee
  int64_t queued = 0;                 // demand of the team's queued jobs
  std::string parent;                 // empty: a top-level team
};

struct InnerObservation {
  std::string team;
  std::string resource;
  int64_t guaranteed = 0;
  std::optional<int64_t> lend_limit;
  std::string parent;  // empty: a top-level team
};

struct Observation {
  int64_t now_ms = 0;
  std::vector<LeafObservation> leaves;  // at most one per (team, resource)
  std::vector<InnerObservation> inner{};      // at most one per (team, resource)
  std::map<std::string, int64_t> capacity{};  // per resource; missing: unknown
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
  // an empty team or resource. A figure that cannot be right is not an
  // error: it is left out and named in problems().
  absl::Status Observe(const Observation& obs);

  // What the latest Observe left out, one line each ("team 'a' gpu: queued
  // -4 is negative; left out"); empty when everything was accounted.
  const std::vector<std::string>& problems() const { return problems_; }

  // Observe(obs) when only the leaves at `changed_leaves` (indices into
  // obs.leaves) may differ from the previous observation: the same teams in
  // the same order, the same inner teams, at most the capacities and those
  // leaves' figures changed. Recomputes only those leaves' paths of the
  // tree (LoanTree) instead of the whole tree; the rows and problems are
  // Observe's, to the bit. Whatever it cannot take that way (another tree, a
  // figure left out now or before) it hands to Observe.
  absl::Status ObserveChanged(const Observation& obs, const std::vector<size_t>& changed_leaves);

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
  using UsageBucket = std::tuple<std::string, std::string, int64_t>;  // team, resource, hour
  using LoanBucket = std::tuple<std::string, std::string, std::string, std::string>;  // + day

  // One resource's tree as last observed: leaves first (in obs.leaves'
  // order), then inner teams (in obs.inner's).
  struct Tree {
    std::string resource;
    LoanTree loans;
    std::vector<int64_t> queued;  // per node, subtree totals
    std::vector<bool> queued_known;
    std::vector<size_t> slot;  // per node, index into teams_
    std::map<std::pair<std::string, std::string>, double> loan_rates;  // borrower, lender
    std::optional<int64_t> capacity;
  };

  void Accumulate(int64_t from_ms, int64_t to_ms);
  // teams_[slot] from the tree's figures of `node`; keeps active_ in step.
  void SetRates(const Tree& tree, int node);
  void SetLoanRates(Tree* tree);

  std::optional<int64_t> held_since_ms_;
  std::vector<std::pair<TeamKey, TeamRates>> teams_;  // one per (team, resource) observed
  absl::btree_set<size_t> active_;                    // teams_ with a non-zero rate
  std::vector<Tree> trees_;                            // per resource, by name
  std::vector<std::pair<int, int>> leaf_node_;         // per obs.leaves index: tree, node
  size_t inner_count_ = 0;
  // Accumulated resource-milliseconds (exact for integer rates), converted
  // to seconds by TakeRows.
  std::map<UsageBucket, TeamRates> usage_acc_;
  std::map<LoanBucket, double> loan_acc_;
  std::vector<std::string> problems_;
};

}  // namespace tidegate::ledger

#endif  // TIDEGATE_LEDGER_ACCOUNTING_H_
