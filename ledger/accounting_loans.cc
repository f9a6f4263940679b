#include "ledger/accounting_loans.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"

namespace tidegate::ledger {
namespace {

constexpr int64_t kNoLimit = std::numeric_limits<int64_t>::max();

bool CheckedAdd(int64_t a, int64_t b, int64_t* sum) { return !__builtin_add_overflow(a, b, sum); }

struct Item {
  int who;  // borrower (a leaf) or lender (leaf, inner pool, kFleet)
  double amount;
};

// What a subtree still needs from, and offers to, the rest of the tree.
struct Residual {
  std::vector<Item> demand;
  std::vector<Item> supply;
};

double Total(const std::vector<Item>& items) {
  double total = 0;
  for (const Item& i : items) total += i.amount;
  return total;
}

class Attributor {
 public:
  Attributor(const std::vector<LoanNode>& nodes, const std::string& resource)
      : nodes_(nodes), resource_(resource), children_(nodes.size()), residual_(nodes.size()) {
    out_.nodes.resize(nodes.size());
  }

  LoanAttribution Run(std::optional<int64_t> capacity) {
    const int n = static_cast<int>(nodes_.size());
    std::vector<int> tops;
    for (int i = 0; i < n; ++i) {
      const int p = nodes_[i].parent;
      if (p >= 0 && p < n && p != i) {
        children_[p].push_back(i);
      } else {
        tops.push_back(i);
      }
    }
    // Post-order from the top-level teams; a node never reached (a parent
    // cycle) stays unknown.
    std::vector<bool> reached(n, false);
    std::vector<int> order;
    std::vector<std::pair<int, bool>> stack;
    for (auto it = tops.rbegin(); it != tops.rend(); ++it) stack.push_back({*it, false});
    while (!stack.empty()) {
      auto [v, expanded] = stack.back();
      stack.pop_back();
      if (expanded) {
        order.push_back(v);
        continue;
      }
      if (reached[v]) continue;
      reached[v] = true;
      stack.push_back({v, true});
      for (auto it = children_[v].rbegin(); it != children_[v].rend(); ++it) {
        if (!reached[*it]) stack.push_back({*it, false});
      }
    }
    for (int v = 0; v < n; ++v) {
      if (!reached[v]) Unknown(v, "is not under the fleet root (its parents form a cycle)");
    }
    for (int v : order) nodes_[v].leaf ? SettleLeaf(v) : SettleInner(v);
    SettleRoot(tops, capacity);
    CreditPaths();
    return std::move(out_);
  }

 private:
  // `why` empty: the caller already knows (it marked the leaf unknown).
  void Unknown(int v, const std::string& why) {
    out_.nodes[v] = NodeFigures{};
    out_.nodes[v].known = false;
    residual_[v] = Residual{};
    if (why.empty()) return;
    out_.problems.push_back(absl::StrCat("team '", nodes_[v].team, "' ", resource_, ": ", why,
                                         "; its loans are not attributed"));
  }

  static int64_t PrivatePart(const LoanNode& node) {
    if (!node.lend_limit.has_value()) return 0;
    return std::max<int64_t>(0, node.guaranteed - *node.lend_limit);
  }

  // What v occupies in its parent's u: max(u(v), p(v)); its guarantee when
  // its figures are unknown (it counts as sitting at its guarantee).
  int64_t Held(int v) const {
    const NodeFigures& f = out_.nodes[v];
    if (!f.known) return nodes_[v].guaranteed;
    return std::max(f.policy_used, PrivatePart(nodes_[v]));
  }

  void SettleLeaf(int v) {
    const LoanNode& node = nodes_[v];
    if (node.unknown) {
      Unknown(v, "");
      return;
    }
    if (node.used < 0 || node.guaranteed < 0 ||
        (node.lend_limit.has_value() && *node.lend_limit < 0)) {
      Unknown(v, "has a negative figure");
      return;
    }
    NodeFigures& f = out_.nodes[v];
    f.jobs_used = node.used;
    f.policy_used = node.used;
    f.private_idle = std::max(node.used, PrivatePart(node)) - node.used;
    if (node.used > node.guaranteed) {
      f.borrowed = node.used - node.guaranteed;
      residual_[v].demand.push_back({v, static_cast<double>(f.borrowed)});
    } else if (node.used < node.guaranteed) {
      const int64_t idle =
          std::min(node.guaranteed - node.used, node.lend_limit.value_or(kNoLimit));
      if (idle > 0) residual_[v].supply.push_back({v, static_cast<double>(idle)});
    }
  }

  void SettleInner(int v) {
    const LoanNode& node = nodes_[v];
    if (node.guaranteed < 0 || (node.lend_limit.has_value() && *node.lend_limit < 0)) {
      Unknown(v, "has a negative figure");
      return;
    }
    int64_t children_g = 0, u = 0, jobs = 0;
    for (int c : children_[v]) {
      if (!CheckedAdd(children_g, nodes_[c].guaranteed, &children_g) ||
          !CheckedAdd(u, Held(c), &u) || !CheckedAdd(jobs, out_.nodes[c].jobs_used, &jobs)) {
        Unknown(v, "the sum over its children overflows int64");
        return;
      }
    }
    NodeFigures& f = out_.nodes[v];
    f.jobs_used = jobs;
    f.policy_used = u;
    f.private_idle = std::max(u, PrivatePart(node)) - jobs;
    f.borrowed = std::max<int64_t>(0, u - node.guaranteed);  // both >= 0: cannot overflow
    Residual& here = residual_[v];
    for (int c : children_[v]) {
      for (Item& i : residual_[c].demand) here.demand.push_back(i);
      for (Item& i : residual_[c].supply) here.supply.push_back(i);
      residual_[c] = Residual{};
    }
    const int64_t pool = std::max<int64_t>(0, node.guaranteed - children_g);
    const double pool_left = Match(v, v, static_cast<double>(pool), &here);
    if (pool_left > 0) here.supply.push_back({v, pool_left});
    if (node.lend_limit.has_value()) {
      const double offered = Total(here.supply), cap = static_cast<double>(*node.lend_limit);
      if (offered > cap) {
        for (Item& i : here.supply) i.amount *= cap / offered;
      }
    }
  }

  void SettleRoot(const std::vector<int>& tops, std::optional<int64_t> capacity) {
    Residual root;
    int64_t top_g = 0;
    bool overflow = false;
    for (int t : tops) {
      if (!CheckedAdd(top_g, nodes_[t].guaranteed, &top_g)) overflow = true;
      for (Item& i : residual_[t].demand) root.demand.push_back(i);
      for (Item& i : residual_[t].supply) root.supply.push_back(i);
    }
    const int64_t fleet_pool =
        capacity.has_value() && !overflow ? std::max<int64_t>(0, *capacity - top_g) : 0;
    Match(-1, kFleet, static_cast<double>(fleet_pool), &root);
    // Borrowed beyond every idle guarantee and the fleet's free capacity (an
    // adopt over quota): the fleet is the only lender left.
    for (const Item& d : root.demand) {
      if (d.amount > 0) Lend(d.who, kFleet, -1, d.amount);
    }
  }

  // At node `meeting` (-1: root): the demand is covered by the supply in
  // proportion, then by `pool` (lent as `pool_lender`). Leaves the uncovered
  // demand and unused supply in `r`; returns what is left of the pool.
  double Match(int meeting, int pool_lender, double pool, Residual* r) {
    double demand = Total(r->demand);
    const double supply = Total(r->supply);
    if (demand > 0 && supply > 0) {
      const double matched = std::min(demand, supply);
      const double demand_part = matched / demand, supply_part = matched / supply;
      for (Item& d : r->demand) {
        for (const Item& s : r->supply) {
          Lend(d.who, s.who, meeting, d.amount * demand_part * (s.amount / supply));
        }
      }
      for (Item& d : r->demand) d.amount = demand_part >= 1 ? 0 : d.amount * (1 - demand_part);
      for (Item& s : r->supply) s.amount = supply_part >= 1 ? 0 : s.amount * (1 - supply_part);
      demand = demand_part >= 1 ? 0 : demand - matched;
    }
    double pool_left = pool;
    if (demand > 0 && pool > 0) {
      const double matched = std::min(demand, pool);
      const double part = matched / demand;
      for (Item& d : r->demand) {
        Lend(d.who, pool_lender, meeting, d.amount * part);
        d.amount = part >= 1 ? 0 : d.amount * (1 - part);
      }
      pool_left = pool - matched;
    }
    auto empty = [](const Item& i) { return i.amount <= 0; };
    r->demand.erase(std::remove_if(r->demand.begin(), r->demand.end(), empty), r->demand.end());
    r->supply.erase(std::remove_if(r->supply.begin(), r->supply.end(), empty), r->supply.end());
    return pool_left;
  }

  void Lend(int borrower, int lender, int meeting, double amount) {
    if (amount <= 0) return;
    out_.loans.push_back(LoanShare{borrower, lender, meeting, amount});
  }

  // lent(n): what teams outside n use of n's guarantee, i.e. every loan whose
  // lender is in n's subtree and whose meeting point is above n.
  void CreditPaths() {
    for (const LoanShare& loan : out_.loans) {
      if (loan.lender == kFleet) {
        out_.fleet_lent += loan.amount;
        continue;
      }
      if (!nodes_[loan.lender].leaf) out_.nodes[loan.lender].pool_lent += loan.amount;
      for (int v = loan.lender; v != loan.meeting && v >= 0; v = Parent(v)) {
        out_.nodes[v].lent += loan.amount;
      }
    }
  }

  int Parent(int v) const {
    const int p = nodes_[v].parent;
    return p >= 0 && p < static_cast<int>(nodes_.size()) && p != v ? p : -1;
  }

  const std::vector<LoanNode>& nodes_;
  const std::string& resource_;
  std::vector<std::vector<int>> children_;
  std::vector<Residual> residual_;
  LoanAttribution out_;
};

}  // namespace

LoanAttribution AttributeLoans(const std::vector<LoanNode>& nodes, std::optional<int64_t> capacity,
                               const std::string& resource) {
  return Attributor(nodes, resource).Run(capacity);
}

}  // namespace tidegate::ledger
