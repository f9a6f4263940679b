#include "forecast/tide.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tidegate::forecast {
namespace {

using ::testing::ElementsAre;

// `weeks` weeks from Monday 00:00: 50 GPUs on weekdays 08:00–20:00, 10 otherwise.
std::vector<double> OfficeHours(int weeks) {
  std::vector<double> y;
  for (int i = 0; i < weeks * 168; ++i) {
    const int day = (i / 24) % 7, hour = i % 24;
    y.push_back(day < 5 && hour >= 8 && hour < 20 ? 50 : 10);
  }
  return y;
}

TEST(TideTest, WeekdayOfficeHoursBecomeOneMergedRule) {
  absl::StatusOr<TideProposal> p = ProposeTide(OfficeHours(3), 0);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->base_guaranteed, 10);
  ASSERT_EQ(p->windows.size(), 1u);
  const TideWindow& w = p->windows[0];
  EXPECT_THAT(w.days, ElementsAre(0, 1, 2, 3, 4));
  EXPECT_EQ(w.from_hour, 8);
  EXPECT_EQ(w.to_hour, 20);
  EXPECT_EQ(w.guaranteed, 50);
  // 60 hours at 50, 108 at 10; a flat P90 guarantee would be 50 all week.
  EXPECT_EQ(p->weekly_gpu_hours, 60 * 50 + 108 * 10);
  EXPECT_EQ(p->flat_weekly_gpu_hours, 168 * 50);
}

TEST(TideTest, StartingMidWeekPlacesHoursByTheirWeekday) {
  // The same office, first value on Wednesday 00:00 (hour 48 of the week).
  std::vector<double> y = OfficeHours(4);
  y.erase(y.begin(), y.begin() + 48);
  absl::StatusOr<TideProposal> p = ProposeTide(y, 48);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->windows.size(), 1u);
  EXPECT_THAT(p->windows[0].days, ElementsAre(0, 1, 2, 3, 4));
  EXPECT_EQ(p->windows[0].from_hour, 8);
}

TEST(TideTest, FlatDemandNeedsNoRules) {
  absl::StatusOr<TideProposal> p = ProposeTide(std::vector<double>(400, 7.2), 0);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->base_guaranteed, 8);  // whole GPUs, rounded up.
  EXPECT_TRUE(p->windows.empty());
}

TEST(TideTest, AtMostMaxWindowsRules) {
  // A different level every 3 hours of the day, and weekends apart.
  std::vector<double> y;
  for (int i = 0; i < 3 * 168; ++i) {
    const int day = (i / 24) % 7, hour = i % 24;
    y.push_back((hour / 3) * 7 + (day >= 5 ? 3 : 0));
  }
  TideOptions o;
  o.max_windows = 2;
  absl::StatusOr<TideProposal> p = ProposeTide(y, 0, o);
  ASSERT_TRUE(p.ok());
  EXPECT_LE(p->windows.size(), 2u);
  EXPECT_GE(p->windows.size(), 1u);
}

TEST(TideTest, NeedsTwoWeeks) {
  absl::StatusOr<TideProposal> p = ProposeTide(std::vector<double>(300, 1), 0);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(),
            "300 hours is shorter than two seasons of 168 hours (336): a weekly profile needs "
            "every hour of the week twice");
}

TEST(TideTest, YamlIsTheConfigsTideRule) {
  absl::StatusOr<TideProposal> p = ProposeTide(OfficeHours(3), 0);
  ASSERT_TRUE(p.ok());
  TideYamlOptions o;
  o.team = "serving";
  o.comment = "from a test";
  EXPECT_EQ(TideYaml(*p, o),
            "# from a test\n"
            "teams:\n"
            "  - name: serving\n"
            "    quota: {gpu: {guaranteed: 10}}\n"
            "    tide:\n"
            "      - {days: [mon, tue, wed, thu, fri], from: \"08:00\", to: \"20:00\", "
            "timezone: UTC,\n"
            "         quota: {gpu: {guaranteed: 50}}}  # P90 50.0\n");
}

}  // namespace
}  // namespace tidegate::forecast
