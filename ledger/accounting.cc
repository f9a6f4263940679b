#include "ledger/accounting.h"

#include <algorithm>
#include <set>

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

absl::Status CheckLeaf(const LeafObservation& leaf) {
  if (leaf.team.empty() || leaf.resource.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("observation with an empty team (\"", leaf.team,
                                                   "\") or resource (\"", leaf.resource, "\")"));
  }
  const std::pair<const char*, int64_t> fields[] = {{"used", leaf.used},
                                                    {"guaranteed", leaf.guaranteed},
                                                    {"queued", leaf.queued},
                                                    {"lend_limit", leaf.lend_limit.value_or(0)}};
  for (const auto& [name, value] : fields) {
    if (value < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(leaf.team, " ", leaf.resource, ": ", name, " ", value, " is negative"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Accountant::Observe(const Observation& obs) {
  if (held_since_ms_.has_value() && obs.now_ms < *held_since_ms_) {
    return absl::InvalidArgumentError(absl::StrCat("observation at ", obs.now_ms,
                                                   " ms is before the previous one at ",
                                                   *held_since_ms_, " ms"));
  }
  std::set<TeamKey> seen;
  for (const LeafObservation& leaf : obs.leaves) {
    if (absl::Status s = CheckLeaf(leaf); !s.ok()) return s;
    if (!seen.insert({leaf.team, leaf.resource}).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("observation lists ", leaf.team, " ", leaf.resource, " twice"));
    }
  }
  if (held_since_ms_.has_value()) Accumulate(*held_since_ms_, obs.now_ms);
  held_since_ms_ = obs.now_ms;

  // The rates of the new state, one resource at a time.
  teams_.clear();
  loans_.clear();
  std::map<std::string, std::vector<const LeafObservation*>> by_resource;
  for (const LeafObservation& leaf : obs.leaves) by_resource[leaf.resource].push_back(&leaf);
  for (const auto& [resource, leaves] : by_resource) {
    std::vector<std::pair<const std::string*, double>> borrowers, lenders;
    double total_borrowed = 0, total_idle = 0;  // B and L
    for (const LeafObservation* leaf : leaves) {
      TeamRates& rates = teams_[{leaf->team, resource}];
      rates.used = static_cast<double>(leaf->used);
      rates.queued = static_cast<double>(leaf->queued);
      if (leaf->used > leaf->guaranteed) {
        rates.borrowed = static_cast<double>(leaf->used - leaf->guaranteed);
        borrowers.emplace_back(&leaf->team, rates.borrowed);
        total_borrowed += rates.borrowed;
      } else if (leaf->used < leaf->guaranteed) {
        const int64_t idle =
            std::min(leaf->guaranteed - leaf->used, leaf->lend_limit.value_or(leaf->guaranteed));
        if (idle > 0) {
          lenders.emplace_back(&leaf->team, static_cast<double>(idle));
          total_idle += static_cast<double>(idle);
        }
      }
    }
    if (borrowers.empty()) continue;
    const double attributed = std::min(total_borrowed, total_idle);
    const double denominator = std::max(total_borrowed, total_idle);
    for (const auto& [lender, idle] : lenders)
      teams_[{*lender, resource}].lent = idle * attributed / total_idle;
    for (const auto& [borrower, borrowed] : borrowers) {
      for (const auto& [lender, idle] : lenders) {
        loans_[{*borrower, *lender, resource}] = borrowed * idle / denominator;
      }
      if (total_borrowed > total_idle) {
        loans_[{*borrower, kPoolLender, resource}] =
            borrowed * (total_borrowed - total_idle) / total_borrowed;
      }
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
