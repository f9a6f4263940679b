#include "broker/sim/usage.h"

#include "gtest/gtest.h"

namespace tidegate::sim {
namespace {

constexpr core::Time kHour = 3600'000;

TEST(UsageTest, IntegratesPiecewiseConstantUsage) {
  UsageIntegrator u(/*teams=*/2, /*resources=*/1, /*start=*/0);
  u.SetCapacity(0, 16, 0);
  u.AddUsage(0, 0, 8, 0);        // team 0: 8 GPUs from 0
  u.AddUsage(1, 0, 4, kHour);    // team 1: 4 GPUs from 1 h
  u.AddUsage(0, 0, -8, 2 * kHour);
  u.Flush(4 * kHour);
  // team 0: 8 x 2 h = 16 GPU-h; team 1: 4 x 3 h = 12 GPU-h.
  EXPECT_DOUBLE_EQ(u.TeamUsed(0), 16.0 * kHour);
  EXPECT_DOUBLE_EQ(u.TeamUsed(1), 12.0 * kHour);
  EXPECT_DOUBLE_EQ(u.FleetUsed(), 28.0 * kHour);
  EXPECT_DOUBLE_EQ(u.FleetCapacity(), 64.0 * kHour);
}

TEST(UsageTest, BorrowedIsUsageAboveTheGuaranteePerResource) {
  UsageIntegrator u(1, 2, 0);
  u.SetGuaranteed(0, 0, 4, 0);   // h100: g 4
  u.SetGuaranteed(0, 1, 0, 0);   // a100: g 0
  u.AddUsage(0, 0, 6, 0);        // 2 borrowed
  u.AddUsage(0, 1, 1, 0);        // 1 borrowed (another resource's slack does not offset)
  u.Flush(kHour);
  EXPECT_DOUBLE_EQ(u.TeamBorrowed(0), 3.0 * kHour);
  u.SetGuaranteed(0, 0, 8, kHour);  // a set_quota: now only the a100 borrows.
  u.Flush(2 * kHour);
  EXPECT_DOUBLE_EQ(u.TeamBorrowed(0), 4.0 * kHour);
  EXPECT_DOUBLE_EQ(u.TeamUsed(0), 14.0 * kHour);
}

TEST(UsageTest, CapacityChangesAreIntegratedToo) {
  UsageIntegrator u(1, 1, 1000);
  u.SetCapacity(0, 8, 1000);
  u.SetCapacity(0, 4, 1000 + kHour);
  u.Flush(1000 + 2 * kHour);
  EXPECT_DOUBLE_EQ(u.FleetCapacity(), 12.0 * kHour);
}

TEST(UsageTest, EarlierTimesCountAsTheLatestSeen) {
  UsageIntegrator u(1, 1, 0);
  u.AddUsage(0, 0, 1, kHour);
  u.AddUsage(0, 0, 1, 0);  // treated as at 1 h.
  u.Flush(2 * kHour);
  EXPECT_DOUBLE_EQ(u.TeamUsed(0), 2.0 * kHour);
}

}  // namespace
}  // namespace tidegate::sim
