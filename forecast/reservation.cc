#include "forecast/reservation.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace tidegate::forecast {
namespace {

absl::Status NotNegative(const char* field, double v) {
  if (!std::isfinite(v)) return absl::InvalidArgumentError(absl::StrCat(field, ": not a number"));
  if (v < 0) return absl::InvalidArgumentError(absl::StrCat(field, ": ", v, " is negative"));
  return absl::OkStatus();
}

// Sorted demands with prefix sums: sums and counts over ranges in O(log n).
class Distribution {
 public:
  explicit Distribution(std::vector<double> d) : d_(std::move(d)) {
    std::sort(d_.begin(), d_.end());
    prefix_.resize(d_.size() + 1, 0.0);
    for (size_t i = 0; i < d_.size(); ++i) prefix_[i + 1] = prefix_[i] + d_[i];
  }
  double size() const { return static_cast<double>(d_.size()); }
  double max() const { return d_.back(); }
  // Index of the first value > x.
  size_t Above(double x) const {
    return static_cast<size_t>(std::upper_bound(d_.begin(), d_.end(), x) - d_.begin());
  }
  // Sum of values with index in [a, b).
  double Sum(size_t a, size_t b) const { return prefix_[b] - prefix_[a]; }
  size_t n() const { return d_.size(); }

 private:
  std::vector<double> d_;
  std::vector<double> prefix_;
};

// Expected per-hour figures of reserving r.
ReservationPlan Evaluate(const Distribution& dist, double r, const ReservationPrices& prices) {
  const double p = prices.preemptible_share;
  const double n = dist.size();
  ReservationPlan plan;
  plan.reserved_gpus = static_cast<int64_t>(r);
  const size_t above_r = dist.Above(r);
  plan.demand = dist.Sum(0, dist.n()) / n;
  plan.reserved_used = (dist.Sum(0, above_r) + r * static_cast<double>(dist.n() - above_r)) / n;
  plan.p_demand_above = static_cast<double>(dist.n() - above_r) / n;
  // Firm demand (1 − p)·D exceeds r when D > r / (1 − p).
  const size_t above_firm = p < 1 ? dist.Above(r / (1 - p)) : dist.n();
  const double firm_over =
      ((1 - p) * dist.Sum(above_firm, dist.n()) - r * static_cast<double>(dist.n() - above_firm)) /
      n;
  // Preemptible overflow: D − r while the firm share fits, p·D beyond.
  const double pre_over = (dist.Sum(above_r, above_firm) -
                           r * static_cast<double>(above_firm - above_r) +
                           p * dist.Sum(above_firm, dist.n())) /
                          n;
  double cost = prices.reserved * r + prices.on_demand * firm_over;
  plan.on_demand = firm_over;
  if (prices.spot) {
    const double spot_price = prices.spot->price / (1 - prices.spot->interruption_rate);
    plan.spot = pre_over;
    cost += spot_price * pre_over;
  } else {
    plan.on_demand += pre_over;
    cost += prices.on_demand * pre_over;
  }
  plan.cost = cost;
  plan.cost_all_on_demand = prices.on_demand * plan.demand;
  plan.critical_ratio = prices.reserved / prices.on_demand;
  plan.utilisation = r > 0 ? plan.reserved_used / r : 0.0;
  return plan;
}

}  // namespace

absl::Status ValidatePrices(const ReservationPrices& prices) {
  if (absl::Status s = NotNegative("reserved.price", prices.reserved); !s.ok()) return s;
  if (absl::Status s = NotNegative("on_demand.price", prices.on_demand); !s.ok()) return s;
  if (prices.on_demand == 0) {
    return absl::InvalidArgumentError("on_demand.price: must be positive");
  }
  if (!(prices.term_hours > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("reserved.term: ", prices.term_hours, " hours must be positive"));
  }
  if (prices.spot) {
    if (absl::Status s = NotNegative("spot.price", prices.spot->price); !s.ok()) return s;
    const double rate = prices.spot->interruption_rate;
    if (!(rate >= 0 && rate < 1)) {
      return absl::InvalidArgumentError(
          absl::StrCat("spot.interruption_rate: ", rate, " is not in [0, 1)"));
    }
  }
  const double p = prices.preemptible_share;
  if (!(p >= 0 && p <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("preemptible_share: ", p, " is not in [0, 1]"));
  }
  return absl::OkStatus();
}

absl::StatusOr<ReservationPlan> PlanReservation(const std::vector<double>& scenarios,
                                                const ReservationPrices& prices) {
  if (absl::Status s = ValidatePrices(prices); !s.ok()) return s;
  if (scenarios.empty()) return absl::InvalidArgumentError("no demand scenarios");
  std::vector<double> clean;
  clean.reserve(scenarios.size());
  for (double d : scenarios) {
    if (!std::isfinite(d)) return absl::InvalidArgumentError("a demand scenario is not finite");
    clean.push_back(std::max(0.0, d));
  }
  const Distribution dist(std::move(clean));
  // Whole GPUs from 0 to the largest demand; beyond it reserving only costs more.
  const double top = std::ceil(dist.max());
  const double stride = std::max(1.0, std::ceil(top / 2e6));
  ReservationPlan best = Evaluate(dist, 0, prices);
  for (double r = stride; r <= top; r += stride) {
    ReservationPlan plan = Evaluate(dist, r, prices);
    if (plan.cost < best.cost - 1e-12 * std::max(1.0, std::fabs(best.cost))) best = plan;
  }
  return best;
}

absl::StatusOr<double> ParseTermHours(const std::string& term) {
  struct Unit {
    const char* suffix;
    double hours;
  };
  // "mo" before "h"/"d"/"y" would not clash; longest suffix first anyway.
  for (const Unit& u : {Unit{"mo", 730}, Unit{"y", 8760}, Unit{"d", 24}, Unit{"h", 1}}) {
    const std::string suffix = u.suffix;
    if (term.size() > suffix.size() &&
        term.compare(term.size() - suffix.size(), suffix.size(), suffix) == 0) {
      double count = 0;
      if (absl::SimpleAtod(term.substr(0, term.size() - suffix.size()), &count) &&
          std::isfinite(count) && count > 0) {
        return count * u.hours;
      }
      break;
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "reserved.term: \"", term, "\" is not a term like 1y, 3y, 6mo, 90d or 720h"));
}

}  // namespace tidegate::forecast
