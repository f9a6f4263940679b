#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "broker/service/core_loop.h"
#include "spdlog/spdlog.h"

namespace tidegate::service {
namespace {

// Rows with the same key add up in the ledger, so they add up here too.
std::vector<ledger::UsageRow> MergeUsageRows(std::vector<ledger::UsageRow> rows) {
  std::vector<ledger::UsageRow> merged;
  absl::flat_hash_map<std::tuple<std::string, std::string, int64_t>, size_t> at;
  for (ledger::UsageRow& r : rows) {
    auto [it, fresh] = at.try_emplace(std::make_tuple(r.team, r.resource, r.hour_start_ms), merged.size());
    if (fresh) {
      merged.push_back(std::move(r));
      continue;
    }
    ledger::UsageRow& into = merged[it->second];
    into.used += r.used;
    into.borrowed += r.borrowed;
    into.lent += r.lent;
    into.queued += r.queued;
  }
  return merged;
}

std::vector<ledger::LoanRow> MergeLoanRows(std::vector<ledger::LoanRow> rows) {
  std::vector<ledger::LoanRow> merged;
  absl::flat_hash_map<std::tuple<std::string, std::string, std::string, std::string>, size_t> at;
  for (ledger::LoanRow& r : rows) {
    auto [it, fresh] = at.try_emplace(std::make_tuple(r.borrower, r.lender, r.resource, r.day), merged.size());
    if (fresh) {
      merged.push_back(std::move(r));
    } else {
      merged[it->second].amount += r.amount;
    }
  }
  return merged;
}

}  // namespace

void CoreLoop::AddUnwrittenRows(ledger::Batch* out) const {
  if (unwritten_usage_.empty() && unwritten_loans_.empty()) return;
  // Merged by key, so a long outage holds one row per key, not one per retry.
  out->usage.insert(out->usage.end(), unwritten_usage_.begin(), unwritten_usage_.end());
  out->loans.insert(out->loans.end(), unwritten_loans_.begin(), unwritten_loans_.end());
  out->usage = MergeUsageRows(std::move(out->usage));
  out->loans = MergeLoanRows(std::move(out->loans));
}

void CoreLoop::ObserveAllTeams() {
  observed_ = ledger::Observation{};
  observed_leaf_rows_.clear();
  for (const auto& name : broker_->TeamNames()) {
    auto team = broker_->GetTeam(name);
    if (!team) continue;
    for (const auto& r : team->resources) {
      const std::optional<int64_t> lend_limit =
          r.lend_limit == core::kInfinite ? std::nullopt : std::optional<int64_t>(r.lend_limit);
      if (!team->leaf) {
        observed_.inner.push_back({team->name, r.resource, r.guaranteed, lend_limit, team->parent});
        continue;
      }
      ledger::LeafObservation leaf;
      leaf.team = team->name;
      leaf.resource = r.resource;
      leaf.used = r.used;
      leaf.guaranteed = r.guaranteed;
      leaf.lend_limit = lend_limit;
      leaf.queued = r.queued;
      leaf.parent = team->parent;
      observed_leaf_rows_[team->name].push_back(observed_.leaves.size());
      observed_.leaves.push_back(std::move(leaf));
    }
  }
  observed_valid_ = true;
}

void CoreLoop::Account(core::Time now, bool take_rows, std::vector<ledger::UsageRow>* usage,
                       std::vector<ledger::LoanRow>* loans, const std::vector<std::string>* changed_teams) {
  // Usage changes only with the jobs of a team, and guarantees only with a
  // config or tide change (then changed_teams is null): re-reading just the
  // teams of the batch's jobs observes the same tree as re-reading all of
  // them, without the O(teams) reads per batch.
  // The accountant then recomputes only the changed leaves' paths of the
  // loan tree (Accountant::ObserveChanged), not the whole tree per batch.
  bool whole = changed_teams == nullptr || !observed_valid_;
  std::vector<size_t> changed_rows;
  if (whole) {
    ObserveAllTeams();
  } else {
    for (const std::string& name : *changed_teams) {
      auto rows = observed_leaf_rows_.find(name);
      if (rows == observed_leaf_rows_.end()) continue;  // an inner team: no usage of its own
      auto team = broker_->GetTeam(name);
      if (!team || team->resources.size() != rows->second.size()) {
        ObserveAllTeams();  // the tree changed under us: read it whole
        whole = true;
        break;
      }
      for (size_t k = 0; k < rows->second.size(); ++k) {
        changed_rows.push_back(rows->second[k]);
        ledger::LeafObservation& leaf = observed_.leaves[rows->second[k]];
        const core::TeamResourceView& r = team->resources[k];
        leaf.used = r.used;
        leaf.queued = r.queued;
        leaf.guaranteed = r.guaranteed;
        leaf.lend_limit = r.lend_limit == core::kInfinite ? std::nullopt : std::optional<int64_t>(r.lend_limit);
      }
    }
  }
  ledger::Observation& obs = observed_;
  obs.now_ms = now;
  obs.capacity.clear();
  for (const auto& resource : broker_->ResourceNames()) obs.capacity[resource] = broker_->TotalCapacity(resource);
  if (auto s = whole ? accountant_.Observe(obs) : accountant_.ObserveChanged(obs, changed_rows); !s.ok()) {
    spdlog::warn("accounting: {}", s.ToString());
    observed_valid_ = false;  // the accountant did not take these leaves: the next batch reads all
    return;
  }
  // A figure left out is reported when it first appears, not every second.
  if (accountant_.problems() != accounting_problems_) {
    accounting_problems_ = accountant_.problems();
    for (const auto& problem : accounting_problems_) spdlog::error("accounting: {}", problem);
  }
  if (!take_rows) return;
  ledger::AccountingRows rows = accountant_.TakeRows();
  for (auto& r : rows.usage) usage->push_back(std::move(r));
  for (auto& r : rows.loans) loans->push_back(std::move(r));
  last_accounting_ = now;
}

}  // namespace tidegate::service
