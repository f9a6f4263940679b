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
  loans_.clear();
  problems_.clear();
  std::set<std::string> resources;
  for (const LeafObservation& leaf : obs.leaves) resources.insert(leaf.resource);
  for (const InnerObservation& node : obs.inner) resources.insert(node.resource);
  for (const std::string& resource : resources) {
    std::vector<LoanNode> nodes;
    std::vector<int64_t> queued;  // per node; -1: unknown
    absl::flat_hash_map<std::string_view, int> index;
    for (const LeafObservation& leaf : obs.leaves) {
      if (leaf.resource != resource) continue;
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
    std::vector<std::string> parents;
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
    LoanAttribution loans = AttributeLoans(nodes, capacity, resource);
    for (std::string& p : loans.problems) problems_.push_back(std::move(p));
    for (size_t i = 0; i < nodes.size(); ++i) {
      const NodeFigures& f = loans.nodes[i];
      TeamRates& rates = teams_.emplace_back(TeamKey{nodes[i].team, resource}, TeamRates{}).second;
      if (f.known) {
        rates.used = static_cast<double>(f.jobs_used);
        rates.borrowed = static_cast<double>(f.borrowed);
        rates.lent = f.lent;
      }
      if (queued_known[i]) rates.queued = static_cast<double>(queued[i]);
    }
    auto name = [&](int lender) -> std::string {
      return lender == kFleet ? kFleetLender : nodes[lender].team;
    };
    for (const LoanShare& loan : loans.loans) {
      loans_[{nodes[loan.borrower].team, name(loan.lender), resource}] += loan.amount;
    }
  }
  return absl::OkStatus();
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
    for (const auto& [key, rates] : teams_) {
      if (rates.used == 0 && rates.borrowed == 0 && rates.lent == 0 && rates.queued == 0) continue;
      TeamRates& acc = usage_acc_[{key.first, key.second, hour}];
      acc.used += rates.used * ms;
      acc.borrowed += rates.borrowed * ms;
      acc.lent += rates.lent * ms;
      acc.queued += rates.queued * ms;
    }
    if (!loans_.empty()) {
      const std::string day = UtcDay(start);
      for (const auto& [key, rate] : loans_) {
        const auto& [borrower, lender, resource] = key;
        loan_acc_[{borrower, lender, resource, day}] += rate * ms;
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
