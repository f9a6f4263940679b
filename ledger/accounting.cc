#include "ledger/accounting.h"

#include <algorithm>
#include <set>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

namespace tidegate::ledger {
namespace {

constexpr int64_t kHourMs = 3'600'000;

int64_t HourStart(int64_t ms) {
  int64_t q = ms / kHourMs;
  if (ms % kHourMs < 0) --q;  // floor, so times before 1970 bucket correctly too
  return q * kHourMs;
}

std::string UtcDay(int64_t ms) {
  return absl::FormatTime("%Y-%m-%d", absl::FromUnixMillis(ms), absl::UTCTimeZone());
}

bool CheckedAdd(int64_t a, int64_t b, int64_t* sum) { return !__builtin_add_overflow(a, b, sum); }

absl::Status CheckNames(const std::string& team, const std::string& resource) {
  if (team.empty() || resource.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("observation with an empty team (\"", team,
                                                   "\") or resource (\"", resource, "\")"));
  }
  return absl::OkStatus();
}

std::string Negative(const std::string& team, const std::string& resource, const char* field,
                     int64_t value) {
  return absl::StrCat("team '", team, "' ", resource, ": ", field, " ", value,
                      " is negative; left out");
}

}  // namespace

// About 120 lines: an observation is checked whole before anything changes,
// then each resource's tree is built and its rates and loans computed; the
// steps share the per-resource node list and are marked by comments.
absl::Status Accountant::Observe(const Observation& obs) {
  if (held_since_ms_.has_value() && obs.now_ms < *held_since_ms_) {
    return absl::InvalidArgumentError(absl::StrCat("observation at ", obs.now_ms,
                                                   " ms is before the previous one at ",
                                                   *held_since_ms_, " ms"));
  }
  // Hashed, not ordered: the service observes every batch, 10,000 teams a time.
  absl::flat_hash_set<std::pair<std::string_view, std::string_view>> seen;
  for (const LeafObservation& leaf : obs.leaves) {
    if (absl::Status s = CheckNames(leaf.team, leaf.resource); !s.ok()) return s;
    if (!seen.insert({leaf.team, leaf.resource}).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("observation lists ", leaf.team, " ", leaf.resource, " twice"));
    }
  }
  for (const InnerObservation& node : obs.inner) {
    if (absl::Status s = CheckNames(node.team, node.resource); !s.ok()) return s;
    if (!seen.insert({node.team, node.resource}).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("observation lists ", node.team, " ", node.resource, " twice"));
    }
  }
  if (held_since_ms_.has_value()) Accumulate(*held_since_ms_, obs.now_ms);
  held_since_ms_ = obs.now_ms;

  // The rates of the new state, one resource (one tree) at a time.
  teams_.clear();
  active_.clear();
  trees_.clear();
  leaf_node_.assign(obs.leaves.size(), {-1, -1});
  inner_count_ = obs.inner.size();
  problems_.clear();
  std::set<std::string> resources;
  for (const LeafObservation& leaf : obs.leaves) resources.insert(leaf.resource);
  for (const InnerObservation& node : obs.inner) resources.insert(node.resource);
  for (const std::string& resource : resources) {
    const int tree_index = static_cast<int>(trees_.size());
    std::vector<LoanNode> nodes;
    std::vector<int64_t> queued;  // per node; -1: unknown
    absl::flat_hash_map<std::string_view, int> index;
    for (size_t l = 0; l < obs.leaves.size(); ++l) {
      const LeafObservation& leaf = obs.leaves[l];
      if (leaf.resource != resource) continue;
      leaf_node_[l] = {tree_index, static_cast<int>(nodes.size())};
      index[leaf.team] = static_cast<int>(nodes.size());
      LoanNode n;
      n.team = leaf.team;
      n.guaranteed = leaf.guaranteed;
      n.lend_limit = leaf.lend_limit;
      n.used = leaf.used;
      for (const auto& [field, value] :
           {std::pair<const char*, int64_t>{"used", leaf.used}, {"guaranteed", leaf.guaranteed},
            {"lend_limit", leaf.lend_limit.value_or(0)}}) {
        if (value < 0) {
          problems_.push_back(Negative(leaf.team, resource, field, value));
          n.unknown = true;
        }
      }
      if (leaf.queued < 0) problems_.push_back(Negative(leaf.team, resource, "queued", leaf.queued));
      queued.push_back(leaf.queued);
      nodes.push_back(std::move(n));
    }
    for (const InnerObservation& inner : obs.inner) {
      if (inner.resource != resource) continue;
      index[inner.team] = static_cast<int>(nodes.size());
      LoanNode n;
      n.team = inner.team;
      n.leaf = false;
      n.guaranteed = inner.guaranteed;
      n.lend_limit = inner.lend_limit;
      queued.push_back(0);
      nodes.push_back(std::move(n));
    }
    std::vector<std::string_view> parents;
    for (const LeafObservation& leaf : obs.leaves) {
      if (leaf.resource == resource) parents.push_back(leaf.parent);
    }
    for (const InnerObservation& inner : obs.inner) {
      if (inner.resource == resource) parents.push_back(inner.parent);
    }
    for (size_t i = 0; i < nodes.size(); ++i) {
      auto it = index.find(parents[i]);
      nodes[i].parent = it == index.end() ? -1 : it->second;
    }
    // An inner team's queued demand is its leaves'.
    std::vector<bool> queued_known(nodes.size(), true);
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (!nodes[i].leaf) continue;
      if (queued[i] < 0) {
        queued_known[i] = false;
        continue;
      }
      int depth = 0;
      for (int p = nodes[i].parent; p >= 0 && depth < static_cast<int>(nodes.size());
           p = nodes[p].parent, ++depth) {
        if (!queued_known[p]) continue;
        if (!CheckedAdd(queued[p], queued[i], &queued[p])) {
          problems_.push_back(absl::StrCat("team '", nodes[p].team, "' ", resource,
                                           ": queued demand overflows int64; left out"));
          queued_known[p] = false;
          queued[p] = 0;
        }
      }
    }
    std::optional<int64_t> capacity;
    if (auto c = obs.capacity.find(resource); c != obs.capacity.end()) capacity = c->second;
    const int n = static_cast<int>(nodes.size());
    Tree& tree = trees_.emplace_back(Tree{resource, LoanTree(std::move(nodes), capacity, resource),
                                          std::move(queued), std::move(queued_known), {}, {}, capacity});
    tree.loans.Settle();
    for (std::string& p : tree.loans.Problems()) problems_.push_back(std::move(p));
    for (int i = 0; i < n; ++i) {
      tree.slot.push_back(teams_.size());
      teams_.emplace_back(TeamKey{tree.loans.node(i).team, resource}, TeamRates{});
      SetRates(tree, i);
    }
    SetLoanRates(&tree);
  }
  return absl::OkStatus();
}

absl::Status Accountant::ObserveChanged(const Observation& obs, const std::vector<size_t>& changed_leaves) {
  if (!held_since_ms_.has_value() || obs.now_ms < *held_since_ms_ || !problems_.empty() ||
      obs.leaves.size() != leaf_node_.size() || obs.inner.size() != inner_count_) {
    return Observe(obs);
  }
  // Everything the incremental path relies on, checked before anything changes.
  for (size_t l : changed_leaves) {
    if (l >= obs.leaves.size() || leaf_node_[l].first < 0) return Observe(obs);
    const LeafObservation& leaf = obs.leaves[l];
    const auto [t, v] = leaf_node_[l];
    const LoanTree& loans = trees_[t].loans;
    const int p = loans.node(v).parent;
    if (leaf.resource != trees_[t].resource || leaf.team != loans.node(v).team ||
        leaf.parent != (p >= 0 ? loans.node(p).team : std::string()) || leaf.used < 0 ||
        leaf.guaranteed < 0 || leaf.lend_limit.value_or(0) < 0 || leaf.queued < 0) {
      return Observe(obs);
    }
  }
  Accumulate(*held_since_ms_, obs.now_ms);
  held_since_ms_ = obs.now_ms;
  for (size_t l : changed_leaves) {
    const LeafObservation& leaf = obs.leaves[l];
    const auto [t, v] = leaf_node_[l];
    Tree& tree = trees_[t];
    tree.loans.Set(v, leaf.guaranteed, leaf.lend_limit, leaf.used, false);
    // The subtree totals above it move by the difference (all known and
    // non-negative here, so a total that fits is the same in any order).
    const int64_t old_queued = tree.queued[v];
    for (int p = v; p >= 0; p = tree.loans.node(p).parent) {
      if (!CheckedAdd(tree.queued[p] - old_queued, leaf.queued, &tree.queued[p])) {
        return Observe(obs);  // Observe names the overflow; it rebuilds every tree
      }
    }
  }
  for (Tree& tree : trees_) {
    std::optional<int64_t> capacity;
    if (auto c = obs.capacity.find(tree.resource); c != obs.capacity.end()) capacity = c->second;
    tree.loans.SetCapacity(capacity);
    tree.capacity = capacity;
    const bool had_loans = !tree.loan_rates.empty();
    const std::vector<int> changed = tree.loans.Settle();
    if (tree.loans.has_problems()) return Observe(obs);
    for (int v : changed) SetRates(tree, v);
    if (had_loans || tree.loans.has_loans()) SetLoanRates(&tree);
  }
  return absl::OkStatus();
}

void Accountant::SetRates(const Tree& tree, int node) {
  const NodeFigures& f = tree.loans.figures(node);
  TeamRates rates;
  if (f.known) {
    rates.used = static_cast<double>(f.jobs_used);
    rates.borrowed = static_cast<double>(f.borrowed);
    rates.lent = f.lent;
  }
  if (tree.queued_known[node]) rates.queued = static_cast<double>(tree.queued[node]);
  const size_t slot = tree.slot[node];
  teams_[slot].second = rates;
  if (rates.used == 0 && rates.borrowed == 0 && rates.lent == 0 && rates.queued == 0) {
    active_.erase(slot);
  } else {
    active_.insert(slot);
  }
}

void Accountant::SetLoanRates(Tree* tree) {
  tree->loan_rates.clear();
  for (const LoanShare& loan : tree->loans.Loans()) {
    const std::string& lender = loan.lender == kFleet ? kFleetLender : tree->loans.node(loan.lender).team;
    tree->loan_rates[{tree->loans.node(loan.borrower).team, lender}] += loan.amount;
  }
}

absl::Status Accountant::AdvanceTo(int64_t now_ms) {
  if (!held_since_ms_.has_value()) return absl::OkStatus();
  if (now_ms < *held_since_ms_) {
    return absl::InvalidArgumentError(
        absl::StrCat("time ", now_ms, " ms is before the previous ", *held_since_ms_, " ms"));
  }
  Accumulate(*held_since_ms_, now_ms);
  held_since_ms_ = now_ms;
  return absl::OkStatus();
}

void Accountant::Accumulate(int64_t from_ms, int64_t to_ms) {
  // Pieces never cross an hour boundary, so never a UTC day boundary either.
  for (int64_t start = from_ms; start < to_ms;) {
    const int64_t hour = HourStart(start);
    const int64_t end = std::min(to_ms, hour + kHourMs);
    const double ms = static_cast<double>(end - start);
    for (size_t slot : active_) {
      const auto& [key, rates] = teams_[slot];
      TeamRates& acc = usage_acc_[{key.first, key.second, hour}];
      acc.used += rates.used * ms;
      acc.borrowed += rates.borrowed * ms;
      acc.lent += rates.lent * ms;
      acc.queued += rates.queued * ms;
    }
    std::optional<std::string> day;  // formatted once, and only when something is lent
    for (const Tree& tree : trees_) {
      if (tree.loan_rates.empty()) continue;
      if (!day.has_value()) day = UtcDay(start);
      for (const auto& [key, rate] : tree.loan_rates) {
        loan_acc_[{key.first, key.second, tree.resource, *day}] += rate * ms;
      }
    }
    start = end;
  }
}

AccountingRows Accountant::TakeRows() {
  AccountingRows rows;
  for (const auto& [key, acc] : usage_acc_) {
    const auto& [team, resource, hour] = key;
    rows.usage.push_back(UsageRow{team, resource, hour, acc.used / 1000, acc.borrowed / 1000,
                                  acc.lent / 1000, acc.queued / 1000});
  }
  for (const auto& [key, amount] : loan_acc_) {
    const auto& [borrower, lender, resource, day] = key;
    rows.loans.push_back(LoanRow{borrower, lender, resource, day, amount / 1000});
  }
  usage_acc_.clear();
  loan_acc_.clear();
  return rows;
}

}  // namespace tidegate::ledger
