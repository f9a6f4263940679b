#include "forecast/reservation.h"

#include "gtest/gtest.h"

namespace tidegate::forecast {
namespace {

std::vector<double> Uniform100() {
  std::vector<double> d;
  for (int i = 0; i < 100; ++i) d.push_back(i);  // P(D > r) = (99 − r) / 100.
  return d;
}

ReservationPrices Prices(double reserved, double on_demand) {
  ReservationPrices p;
  p.reserved = reserved;
  p.on_demand = on_demand;
  return p;
}

TEST(ReservationTest, NewsvendorReservesAtTheCriticalFractile) {
  // reserved / on-demand = 0.3: the smallest r with P(D > r) <= 0.3 is 69.
  absl::StatusOr<ReservationPlan> plan = PlanReservation(Uniform100(), Prices(0.3, 1.0));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->reserved_gpus, 69);
  EXPECT_DOUBLE_EQ(plan->critical_ratio, 0.3);
  EXPECT_DOUBLE_EQ(plan->p_demand_above, 0.30);
  // E[min(D, 69)] = (0+…+69 + 30·69) / 100 = (2415 + 2070) / 100.
  EXPECT_DOUBLE_EQ(plan->reserved_used, 44.85);
  EXPECT_DOUBLE_EQ(plan->utilisation, 44.85 / 69);
  // On-demand: E[(D − 69)+] = (1+…+30) / 100 = 4.65.
  EXPECT_DOUBLE_EQ(plan->on_demand, 4.65);
  EXPECT_DOUBLE_EQ(plan->cost, 0.3 * 69 + 4.65);
  EXPECT_DOUBLE_EQ(plan->cost_all_on_demand, 49.5);
}

TEST(ReservationTest, ReservingCostsMoreThanOnDemandMeansReserveNothing) {
  absl::StatusOr<ReservationPlan> plan = PlanReservation(Uniform100(), Prices(1.2, 1.0));
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->reserved_gpus, 0);
  EXPECT_DOUBLE_EQ(plan->utilisation, 0);
}

TEST(ReservationTest, PreemptibleShareGoesToCheapSpot) {
  // Constant demand 100, half preemptible. Spot at 0.2 (0.25 per useful hour
  // with 20% interrupted) is cheaper than reserving at 0.5: reserve the firm 50.
  ReservationPrices p = Prices(0.5, 1.0);
  p.spot = SpotPrice{0.2, 0.2};
  p.preemptible_share = 0.5;
  absl::StatusOr<ReservationPlan> plan = PlanReservation(std::vector<double>(10, 100.0), p);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->reserved_gpus, 50);
  EXPECT_DOUBLE_EQ(plan->spot, 50);
  EXPECT_DOUBLE_EQ(plan->on_demand, 0);
  EXPECT_DOUBLE_EQ(plan->cost, 0.5 * 50 + 0.25 * 50);
  EXPECT_DOUBLE_EQ(plan->utilisation, 1.0);
}

TEST(ReservationTest, WithoutSpotPreemptibleDemandRunsOnDemand) {
  ReservationPrices p = Prices(0.3, 1.0);
  p.preemptible_share = 0.5;
  absl::StatusOr<ReservationPlan> plan = PlanReservation(Uniform100(), p);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->reserved_gpus, 69);  // the same newsvendor answer.
  EXPECT_DOUBLE_EQ(plan->spot, 0);
}

TEST(ReservationTest, NegativePricesAreRejectedNamingTheField) {
  EXPECT_EQ(ValidatePrices(Prices(-1, 2)).message(), "reserved.price: -1 is negative");
  EXPECT_EQ(ValidatePrices(Prices(1, -2)).message(), "on_demand.price: -2 is negative");
  ReservationPrices p = Prices(1, 2);
  p.spot = SpotPrice{-0.5, 0.1};
  EXPECT_EQ(ValidatePrices(p).message(), "spot.price: -0.5 is negative");
  p.spot = SpotPrice{0.5, 1.0};
  EXPECT_EQ(ValidatePrices(p).message(), "spot.interruption_rate: 1 is not in [0, 1)");
  p.spot.reset();
  p.preemptible_share = 1.5;
  EXPECT_EQ(ValidatePrices(p).message(), "preemptible_share: 1.5 is not in [0, 1]");
}

TEST(ReservationTest, TermsReadAsHours) {
  EXPECT_EQ(*ParseTermHours("1y"), 8760);
  EXPECT_EQ(*ParseTermHours("3y"), 26280);
  EXPECT_EQ(*ParseTermHours("6mo"), 4380);
  EXPECT_EQ(*ParseTermHours("90d"), 2160);
  EXPECT_EQ(*ParseTermHours("720h"), 720);
  EXPECT_FALSE(ParseTermHours("a year").ok());
  EXPECT_FALSE(ParseTermHours("-1y").ok());
}

}  // namespace
}  // namespace tidegate::forecast
