// Who lends what to whom at one instant, for one resource, over the quota
// tree (docs/design.md §2, docs/policy.md §1). Both the accounting of GPU-hours lent
// (Accountant) and the live team view (`tidegate teams`) use this one rule,
// so the two never disagree. docs/accounting.md states it for users.
//
// The rule: borrowed capacity is attributed to the nearest lenders in the
// tree first. Walking up from the leaves, at every inner node n
//   1. what n's children borrow is covered by the idle lendable guarantee of
//      n's other children (siblings and their subtrees), in proportion to what
//      each offers;
//   2. then by n's own pool (g(n) − Σ g(children), never negative);
//   3. what is still uncovered is what n borrows from above; what n's
//      children and pool still offer, capped by n's lend limit, is what n
//      offers above.
// At the fleet root the last lender is the fleet: capacity no top-level
// guarantee covers, and anything borrowed beyond every idle guarantee (jobs
// adopted over quota), attributed to kFleetLender.
//
// Guarantees it gives (tested): a leaf borrows max(0, used − g); a node lends
// at most its idle lendable guarantee min(g − u, ℓ) (0 while it borrows); a
// borrower's loans add up to what it borrows; a lender's to what it lends; at
// every inner node n: Σ borrowed(children) + lent(n) = Σ lent(children) +
// pool_lent(n) + borrowed(n), where borrowed(n) = max(0, u(n) − g(n)) with
// docs/policy.md's u(n) = Σ max(u(c), p(c)).
//
// Arithmetic on the given quantities is checked: a sum that overflows int64
// marks that node (and so its subtree) unknown for this instant; it then
// neither lends nor borrows, and the rest of the tree is attributed as if it
// sat exactly at its guarantee. Amounts split in proportion are doubles.
//
// Pure: no I/O, no clock. Not thread-safe only in the sense of plain values.
#ifndef TIDEGATE_LEDGER_ACCOUNTING_LOANS_H_
#define TIDEGATE_LEDGER_ACCOUNTING_LOANS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tidegate::ledger {

// The lender of what no guarantee in the tree covers.
inline constexpr char kFleetLender[] = "(fleet)";

struct LoanNode {
  std::string team;
  int parent = -1;  // index into the node list; -1: a top-level team.
  bool leaf = true;
  int64_t guaranteed = 0;             // g, >= 0
  std::optional<int64_t> lend_limit;  // ℓ, >= 0; nullopt: lends all
  int64_t used = 0;                   // leaves: what their jobs hold, >= 0; inner: ignored
  // A leaf whose figures the caller cannot trust (negative, overflowed): it
  // neither lends nor borrows, and counts as sitting at its guarantee. The
  // caller reports it; a negative figure found here is reported in problems.
  bool unknown = false;
};

inline constexpr int kFleet = -1;  // lender index of the fleet

struct LoanShare {
  int borrower = 0;  // a leaf
  int lender = 0;    // a leaf (its idle guarantee), an inner node (its pool), or kFleet
  int meeting = -1;  // the node where they met (-1: the fleet root)
  double amount = 0;
};

// Per node, what the node is at this instant. `known` is false for a node
// whose sums overflowed (and for everything below it): its figures are 0.
struct NodeFigures {
  bool known = true;
  int64_t jobs_used = 0;      // what its (subtree's) jobs hold
  int64_t policy_used = 0;    // u(n) of docs/policy.md §1: jobs plus idle private parts below
  int64_t private_idle = 0;   // max(u(n), p(n)) − jobs_used: guarantee kept idle, never lent
  int64_t borrowed = 0;       // max(0, u(n) − g(n))
  double lent = 0;            // of its guarantee, what teams outside it use now
  double pool_lent = 0;       // inner: of its own pool, what teams use now
};

struct LoanAttribution {
  std::vector<NodeFigures> nodes;  // parallel to the input
  double fleet_lent = 0;
  std::vector<LoanShare> loans;    // borrower, lender pairs with amount > 0
  // One line per node whose sums overflowed: "team 'ml' gpu: ... overflows".
  std::vector<std::string> problems;
};

// `nodes` is one resource's whole tree (any order; parents by index).
// `capacity`: the fleet's total of the resource, nullopt when unknown (then
// the fleet lends only what exceeds every guarantee). `resource` names it in
// problems.
LoanAttribution AttributeLoans(const std::vector<LoanNode>& nodes, std::optional<int64_t> capacity,
                               const std::string& resource);

// The same attribution kept between instants, for callers that change a few
// nodes at a time (the accountant per batch, the read model per model). A
// node's figures, what it passes up and the loans met at it depend only on
// its own figures and its children's, so after Set() of a few nodes Settle()
// recomputes those nodes and their ancestors, bottom up, from what their
// children kept: the cost is the changed paths (each node on them reads its
// children's sums and what they pass up) plus the loans, not the whole tree.
// Every step is the one AttributeLoans takes (AttributeLoans is a LoanTree
// settled once), in the same order, so the answers are the same to the bit.
// Not thread-safe.
class LoanTree {
 public:
  LoanTree(std::vector<LoanNode> nodes, std::optional<int64_t> capacity, std::string resource);
  ~LoanTree();
  LoanTree(LoanTree&&) noexcept;
  LoanTree& operator=(LoanTree&&) noexcept;

  int size() const;
  const LoanNode& node(int v) const;
  // Node v's own figures; its parent and leaf-ness stay. Settle() applies it.
  void Set(int v, int64_t guaranteed, std::optional<int64_t> lend_limit, int64_t used, bool unknown);
  void SetCapacity(std::optional<int64_t> capacity);
  // Recomputes what the Sets since the last Settle changed. Returns the nodes
  // whose figures may have changed (the changed paths, and every node whose
  // lent was or is now non-zero); empty when nothing was set.
  std::vector<int> Settle();

  // As AttributeLoans answers for the nodes as set, once settled.
  const NodeFigures& figures(int v) const;
  double fleet_lent() const;
  std::vector<LoanShare> Loans() const;  // in AttributeLoans' order
  bool has_loans() const;
  std::vector<std::string> Problems() const;
  bool has_problems() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tidegate::ledger

#endif  // TIDEGATE_LEDGER_ACCOUNTING_LOANS_H_
