#include "ledger/accounting_loans.h"

#include <algorithm>
#include <limits>
#include <set>

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

}  // namespace

class LoanTree::Impl {
 public:
  Impl(std::vector<LoanNode> nodes, std::optional<int64_t> capacity, std::string resource)
      : nodes_(std::move(nodes)),
        resource_(std::move(resource)),
        capacity_(capacity),
        children_(nodes_.size()),
        residual_(nodes_.size()),
        figures_(nodes_.size()),
        loans_at_(nodes_.size()),
        problem_at_(nodes_.size()),
        position_(nodes_.size(), -1),
        dirty_(nodes_.size(), false) {
    const int n = size();
    for (int i = 0; i < n; ++i) {
      const int p = nodes_[i].parent;
      if (p >= 0 && p < n && p != i) {
        children_[p].push_back(i);
      } else {
        tops_.push_back(i);
      }
    }
    // Post-order from the top-level teams; a node never reached (a parent
    // cycle) stays unknown.
    std::vector<bool> reached(n, false);
    std::vector<std::pair<int, bool>> stack;
    for (auto it = tops_.rbegin(); it != tops_.rend(); ++it) stack.push_back({*it, false});
    while (!stack.empty()) {
      auto [v, expanded] = stack.back();
      stack.pop_back();
      if (expanded) {
        position_[v] = static_cast<int>(order_.size());
        order_.push_back(v);
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
      if (reached[v]) continue;
      figures_[v] = NodeFigures{};
      figures_[v].known = false;
      cycle_problems_.push_back(absl::StrCat("team '", nodes_[v].team, "' ", resource_,
                                             ": is not under the fleet root (its parents form a cycle)",
                                             "; its loans are not attributed"));
    }
    for (int v : order_) MarkPath(v);
    root_dirty_ = true;
  }

  int size() const { return static_cast<int>(nodes_.size()); }
  const LoanNode& node(int v) const { return nodes_[v]; }

  void Set(int v, int64_t guaranteed, std::optional<int64_t> lend_limit, int64_t used, bool unknown) {
    LoanNode& n = nodes_[v];
    n.guaranteed = guaranteed;
    n.lend_limit = lend_limit;
    n.used = used;
    n.unknown = unknown;
    MarkPath(v);
  }

  void SetCapacity(std::optional<int64_t> capacity) {
    if (capacity == capacity_) return;
    capacity_ = capacity;
    root_dirty_ = true;
  }

  std::vector<int> Settle() {
    std::vector<int> changed;
    if (dirty_list_.empty() && !root_dirty_) return changed;
    // Children before parents: post-order positions ascending.
    std::sort(dirty_list_.begin(), dirty_list_.end(),
              [this](int a, int b) { return position_[a] < position_[b]; });
    for (int v : dirty_list_) {
      dirty_[v] = false;
      figures_[v] = NodeFigures{};
      residual_[v] = Residual{};
      problem_at_[v].clear();
      const bool had_loans = !loans_at_[v].empty();
      loans_at_[v].clear();
      nodes_[v].leaf ? SettleLeaf(v) : SettleInner(v);
      if (problem_at_[v].empty()) {
        problem_positions_.erase(position_[v]);
      } else {
        problem_positions_.insert(position_[v]);
      }
      if (!loans_at_[v].empty()) {
        meetings_.insert(position_[v]);
      } else if (had_loans) {
        meetings_.erase(position_[v]);
      }
      if (Parent(v) < 0 && residual_[v].demand.empty()) {
        tops_borrowing_.erase(v);
      } else if (Parent(v) < 0) {
        tops_borrowing_.insert(v);
      }
      changed.push_back(v);
    }
    dirty_list_.clear();
    root_dirty_ = false;
    SettleRoot();
    CreditPaths(&changed);
    return changed;
  }

  const NodeFigures& figures(int v) const { return figures_[v]; }
  double fleet_lent() const { return fleet_lent_; }
  bool has_loans() const { return !meetings_.empty() || !root_loans_.empty(); }
  bool has_problems() const { return !cycle_problems_.empty() || !problem_positions_.empty(); }

  std::vector<LoanShare> Loans() const {
    std::vector<LoanShare> out;
    for (int p : meetings_) {
      const std::vector<LoanShare>& at = loans_at_[order_[p]];
      out.insert(out.end(), at.begin(), at.end());
    }
    out.insert(out.end(), root_loans_.begin(), root_loans_.end());
    return out;
  }

  std::vector<std::string> Problems() const {
    std::vector<std::string> out = cycle_problems_;
    for (int p : problem_positions_) out.push_back(problem_at_[order_[p]]);
    return out;
  }

 private:
  // v and every ancestor of it are recomputed by the next Settle.
  void MarkPath(int v) {
    for (int u = v; u >= 0 && position_[u] >= 0 && !dirty_[u]; u = Parent(u)) {
      dirty_[u] = true;
      dirty_list_.push_back(u);
    }
    root_dirty_ = true;
  }

  // `why` empty: the caller already knows (it marked the leaf unknown).
  void Unknown(int v, const std::string& why) {
    figures_[v] = NodeFigures{};
    figures_[v].known = false;
    residual_[v] = Residual{};
    if (why.empty()) return;
    problem_at_[v] = absl::StrCat("team '", nodes_[v].team, "' ", resource_, ": ", why,
                                  "; its loans are not attributed");
  }

  static int64_t PrivatePart(const LoanNode& node) {
    if (!node.lend_limit.has_value()) return 0;
    return std::max<int64_t>(0, node.guaranteed - *node.lend_limit);
  }

  // What v occupies in its parent's u: max(u(v), p(v)); its guarantee when
  // its figures are unknown (it counts as sitting at its guarantee).
  int64_t Held(int v) const {
    const NodeFigures& f = figures_[v];
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
    NodeFigures& f = figures_[v];
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
          !CheckedAdd(u, Held(c), &u) || !CheckedAdd(jobs, figures_[c].jobs_used, &jobs)) {
        Unknown(v, "the sum over its children overflows int64");
        return;
      }
    }
    NodeFigures& f = figures_[v];
    f.jobs_used = jobs;
    f.policy_used = u;
    f.private_idle = std::max(u, PrivatePart(node)) - jobs;
    f.borrowed = std::max<int64_t>(0, u - node.guaranteed);  // both >= 0: cannot overflow
    // The children's residuals stay as they are: a later Settle that
    // recomputes v without them reads them again.
    Residual& here = residual_[v];
    for (int c : children_[v]) {
      here.demand.insert(here.demand.end(), residual_[c].demand.begin(), residual_[c].demand.end());
      here.supply.insert(here.supply.end(), residual_[c].supply.begin(), residual_[c].supply.end());
    }
    const int64_t pool = std::max<int64_t>(0, node.guaranteed - children_g);
    const double pool_left = Match(v, v, static_cast<double>(pool), &here, &loans_at_[v]);
    if (pool_left > 0) here.supply.push_back({v, pool_left});
    if (node.lend_limit.has_value()) {
      const double offered = Total(here.supply), cap = static_cast<double>(*node.lend_limit);
      if (offered > cap) {
        for (Item& i : here.supply) i.amount *= cap / offered;
      }
    }
  }

  void SettleRoot() {
    root_loans_.clear();
    // Nothing borrowed beyond the top-level teams: no loans at the root, and
    // no pass over every top-level team (a flat tree's every team).
    if (tops_borrowing_.empty()) return;
    Residual root;
    int64_t top_g = 0;
    bool overflow = false;
    for (int t : tops_) {
      if (!CheckedAdd(top_g, nodes_[t].guaranteed, &top_g)) overflow = true;
      root.demand.insert(root.demand.end(), residual_[t].demand.begin(), residual_[t].demand.end());
    }
    for (int t : tops_) root.supply.insert(root.supply.end(), residual_[t].supply.begin(), residual_[t].supply.end());
    const int64_t fleet_pool =
        capacity_.has_value() && !overflow ? std::max<int64_t>(0, *capacity_ - top_g) : 0;
    Match(-1, kFleet, static_cast<double>(fleet_pool), &root, &root_loans_);
    // Borrowed beyond every idle guarantee and the fleet's free capacity (an
    // adopt over quota): the fleet is the only lender left.
    for (const Item& d : root.demand) {
      if (d.amount > 0) Lend(d.who, kFleet, -1, d.amount, &root_loans_);
    }
  }

  // At node `meeting` (-1: root): the demand is covered by the supply in
  // proportion, then by `pool` (lent as `pool_lender`). Leaves the uncovered
  // demand and unused supply in `r`; returns what is left of the pool.
  static double Match(int meeting, int pool_lender, double pool, Residual* r, std::vector<LoanShare>* loans) {
    double demand = Total(r->demand);
    const double supply = Total(r->supply);
    if (demand > 0 && supply > 0) {
      const double matched = std::min(demand, supply);
      const double demand_part = matched / demand, supply_part = matched / supply;
      for (Item& d : r->demand) {
        for (const Item& s : r->supply) {
          Lend(d.who, s.who, meeting, d.amount * demand_part * (s.amount / supply), loans);
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
        Lend(d.who, pool_lender, meeting, d.amount * part, loans);
        d.amount = part >= 1 ? 0 : d.amount * (1 - part);
      }
      pool_left = pool - matched;
    }
    auto empty = [](const Item& i) { return i.amount <= 0; };
    r->demand.erase(std::remove_if(r->demand.begin(), r->demand.end(), empty), r->demand.end());
    r->supply.erase(std::remove_if(r->supply.begin(), r->supply.end(), empty), r->supply.end());
    return pool_left;
  }

  static void Lend(int borrower, int lender, int meeting, double amount, std::vector<LoanShare>* loans) {
    if (amount <= 0) return;
    loans->push_back(LoanShare{borrower, lender, meeting, amount});
  }

  // lent(n): what teams outside n use of n's guarantee, i.e. every loan whose
  // lender is in n's subtree and whose meeting point is above n. Only the
  // nodes credited last time are cleared; `changed` gains every node credited
  // then or now.
  void CreditPaths(std::vector<int>* changed) {
    for (int v : credited_) {
      figures_[v].lent = 0;
      figures_[v].pool_lent = 0;
      changed->push_back(v);
    }
    credited_.clear();
    fleet_lent_ = 0;
    auto credit = [&](const LoanShare& loan) {
      if (loan.lender == kFleet) {
        fleet_lent_ += loan.amount;
        return;
      }
      if (!nodes_[loan.lender].leaf) {
        figures_[loan.lender].pool_lent += loan.amount;
        credited_.push_back(loan.lender);
      }
      for (int v = loan.lender; v != loan.meeting && v >= 0; v = Parent(v)) {
        figures_[v].lent += loan.amount;
        credited_.push_back(v);
      }
    };
    for (int p : meetings_) {
      for (const LoanShare& loan : loans_at_[order_[p]]) credit(loan);
    }
    for (const LoanShare& loan : root_loans_) credit(loan);
    std::sort(credited_.begin(), credited_.end());
    credited_.erase(std::unique(credited_.begin(), credited_.end()), credited_.end());
    changed->insert(changed->end(), credited_.begin(), credited_.end());
  }

  int Parent(int v) const {
    const int p = nodes_[v].parent;
    return p >= 0 && p < size() && p != v ? p : -1;
  }

  std::vector<LoanNode> nodes_;
  std::string resource_;
  std::optional<int64_t> capacity_;
  std::vector<std::vector<int>> children_;
  std::vector<int> tops_;
  std::vector<int> order_;  // post-order of the nodes under the fleet root
  // Kept per node between Settles: what it passes up, its figures, the loans
  // met at it and its problem ("" none).
  std::vector<Residual> residual_;
  std::vector<NodeFigures> figures_;
  std::vector<std::vector<LoanShare>> loans_at_;
  std::vector<std::string> problem_at_;
  std::vector<int> position_;  // in order_; -1: not under the root
  std::set<int> meetings_;           // positions of the nodes with loans met at them
  std::set<int> problem_positions_;  // positions of the nodes with a problem
  std::vector<std::string> cycle_problems_;
  std::vector<LoanShare> root_loans_;
  std::set<int> tops_borrowing_;  // top-level nodes that pass demand up to the root
  std::vector<int> credited_;  // nodes whose lent or pool_lent the loans made non-zero
  double fleet_lent_ = 0;
  std::vector<bool> dirty_;
  std::vector<int> dirty_list_;
  bool root_dirty_ = false;
};

LoanTree::LoanTree(std::vector<LoanNode> nodes, std::optional<int64_t> capacity, std::string resource)
    : impl_(std::make_unique<Impl>(std::move(nodes), capacity, std::move(resource))) {}
LoanTree::~LoanTree() = default;
LoanTree::LoanTree(LoanTree&&) noexcept = default;
LoanTree& LoanTree::operator=(LoanTree&&) noexcept = default;
int LoanTree::size() const { return impl_->size(); }
const LoanNode& LoanTree::node(int v) const { return impl_->node(v); }
void LoanTree::Set(int v, int64_t guaranteed, std::optional<int64_t> lend_limit, int64_t used, bool unknown) {
  impl_->Set(v, guaranteed, lend_limit, used, unknown);
}
void LoanTree::SetCapacity(std::optional<int64_t> capacity) { impl_->SetCapacity(capacity); }
std::vector<int> LoanTree::Settle() { return impl_->Settle(); }
const NodeFigures& LoanTree::figures(int v) const { return impl_->figures(v); }
double LoanTree::fleet_lent() const { return impl_->fleet_lent(); }
std::vector<LoanShare> LoanTree::Loans() const { return impl_->Loans(); }
bool LoanTree::has_loans() const { return impl_->has_loans(); }
std::vector<std::string> LoanTree::Problems() const { return impl_->Problems(); }
bool LoanTree::has_problems() const { return impl_->has_problems(); }

LoanAttribution AttributeLoans(const std::vector<LoanNode>& nodes, std::optional<int64_t> capacity,
                               const std::string& resource) {
  LoanTree tree(nodes, capacity, resource);
  tree.Settle();
  LoanAttribution out;
  out.nodes.reserve(nodes.size());
  for (int v = 0; v < tree.size(); ++v) out.nodes.push_back(tree.figures(v));
  out.fleet_lent = tree.fleet_lent();
  out.loans = tree.Loans();
  out.problems = tree.Problems();
  return out;
}

}  // namespace tidegate::ledger
