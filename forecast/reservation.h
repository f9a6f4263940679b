// Reservation sizing (docs/design.md §6): how many GPUs to reserve for a term,
// given a forecast's demand scenarios and the prices of reserved, on-demand
// and spot GPU-hours.
//
// Each hour, demand D is served in this order:
//   1. the reservation R (paid for every hour, used or not) serves min(D, R),
//      the firm (non-preemptible) share first;
//   2. firm demand above R runs on on-demand;
//   3. preemptible demand (share p of D) that R does not cover runs on spot,
//      if there is spot, at price / (1 − interruption_rate) per useful
//      GPU-hour (work lost to interruptions is run again); else on-demand.
// R is the whole number of GPUs that minimises the expected cost per hour
// over the scenarios (ties: the smaller R). With no preemptible share this is
// the newsvendor solution: the smallest R with P(D > R) <= reserved price /
// on-demand price.
//
// Threading: pure functions.
#ifndef TIDEGATE_FORECAST_RESERVATION_H_
#define TIDEGATE_FORECAST_RESERVATION_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tidegate::forecast {

struct SpotPrice {
  double price = 0;              // per GPU-hour, >= 0.
  double interruption_rate = 0;  // share of spot GPU-hours lost, in [0, 1).
};

struct ReservationPrices {
  double reserved = 0;                 // per GPU-hour, >= 0, paid for the whole term.
  double term_hours = 8760;            // the commitment; > 0.
  double on_demand = 0;                // per GPU-hour, > 0.
  std::optional<SpotPrice> spot;       // none: no spot market.
  double preemptible_share = 0;        // of demand, in [0, 1].
};

// INVALID_ARGUMENT naming the field: "reserved.price: -1 is negative",
// "spot.interruption_rate: 1.2 is not in [0, 1)", "on_demand.price: must be positive".
absl::Status ValidatePrices(const ReservationPrices& prices);

struct ReservationPlan {
  int64_t reserved_gpus = 0;       // R.
  double critical_ratio = 0;       // reserved / on-demand price.
  double p_demand_above = 0;       // P(D > R) over the scenarios.
  // Expected GPU-hours per hour.
  double demand = 0;               // E[D].
  double reserved_used = 0;        // E[min(D, R)].
  double on_demand = 0;            // E[firm demand above R] (+ preemptible without spot).
  double spot = 0;                 // E[preemptible demand above what R covers] (useful hours).
  // Expected cost per hour.
  double cost = 0;                 // of this plan.
  double cost_all_on_demand = 0;   // on_demand price × E[D].
  double utilisation = 0;          // reserved_used / R (0 when R = 0).
};

// Sizes the reservation over demand scenarios (equally likely hourly demands,
// e.g. forecaster.h's DemandScenarios). INVALID_ARGUMENT for invalid prices or
// no scenarios.
absl::StatusOr<ReservationPlan> PlanReservation(const std::vector<double>& scenarios,
                                                const ReservationPrices& prices);

// Parses a term: "1y", "3y", "6mo", "90d", "720h" (1y = 8760 h, 1mo = 730 h).
absl::StatusOr<double> ParseTermHours(const std::string& term);

}  // namespace tidegate::forecast

#endif  // TIDEGATE_FORECAST_RESERVATION_H_
