// ForecastService's series from ledger rows (broker/service/forecast_service.h):
// which hours, which teams, which metric. Pure functions; no broker.
#include "broker/service/forecast_service.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tidegate::service {
namespace {

using ::testing::ElementsAre;

constexpr int64_t kHour = 3600 * 1000;
constexpr int64_t kT0 = 1588291200000;  // 2020-05-01 00:00 UTC.
constexpr int64_t kLater = kT0 + 1000 * kHour;

ledger::UsageRow Row(const std::string& team, int64_t hour, double used_gpus,
                     double queued_gpus = 0, const std::string& resource = "gpu") {
  return ledger::UsageRow{team, resource, kT0 + hour * kHour, used_gpus * 3600, 0, 0,
                          queued_gpus * 3600};
}

v1::SeriesSelector Select(v1::UsageMetric metric = v1::USAGE_METRIC_UNSPECIFIED) {
  v1::SeriesSelector s;
  s.set_metric(metric);
  return s;
}

v1::Config Tree() {
  v1::Config c;
  auto add = [&c](const std::string& name, const std::string& parent) {
    v1::Team* t = c.add_teams();
    t->set_name(name);
    t->set_parent(parent);
  };
  add("org", "");
  add("ml", "org");
  add("research", "ml");
  add("training", "ml");
  add("serving", "");
  return c;
}

TEST(LeavesOfTest, ALeafIsItselfAndAnInnerTeamIsAllLeavesBelow) {
  EXPECT_THAT(LeavesOf(Tree(), "research"), ElementsAre("research"));
  EXPECT_THAT(LeavesOf(Tree(), "ml"), ElementsAre("research", "training"));
  EXPECT_THAT(LeavesOf(Tree(), "org"), ElementsAre("research", "training"));
  EXPECT_TRUE(LeavesOf(Tree(), "nobody").empty());
}

TEST(BuildUsageSeriesTest, DemandIsUsedPlusQueuedAndHolesAreZero) {
  const std::vector<ledger::UsageRow> rows = {Row("a", 0, 2, 1), Row("a", 1, 3), Row("a", 3, 5)};
  const UsageSeries s = BuildUsageSeries(rows, {"a"}, "gpu", Select(), kLater);
  EXPECT_EQ(s.start_s, kT0 / 1000);
  EXPECT_THAT(s.values, ElementsAre(3, 3, 0, 5));  // hour 2 had no row.
  EXPECT_EQ(s.zero_hours, 1);
}

TEST(BuildUsageSeriesTest, MetricResourceAndTeamSelectRows) {
  const std::vector<ledger::UsageRow> rows = {Row("a", 0, 2, 1), Row("a", 1, 3, 4),
                                              Row("a", 1, 9, 9, "cpu"), Row("b", 1, 7)};
  EXPECT_THAT(BuildUsageSeries(rows, {"a"}, "gpu", Select(v1::USAGE_METRIC_QUEUED), kLater).values,
              ElementsAre(1, 4));
  EXPECT_THAT(BuildUsageSeries(rows, {"a", "b"}, "gpu", Select(v1::USAGE_METRIC_USED), kLater).values,
              ElementsAre(2, 10));
  EXPECT_TRUE(BuildUsageSeries(rows, {"c"}, "gpu", Select(), kLater).values.empty());
}

TEST(BuildUsageSeriesTest, TheUnfinishedHourAndHoursOutsideTheWindowAreLeftOut) {
  const std::vector<ledger::UsageRow> rows = {Row("a", 0, 1), Row("a", 1, 2), Row("a", 2, 3),
                                              Row("a", 3, 4)};
  // now is 30 minutes into hour 3: hour 3 is still running.
  EXPECT_THAT(BuildUsageSeries(rows, {"a"}, "gpu", Select(), kT0 + 3 * kHour + kHour / 2).values,
              ElementsAre(1, 2, 3));
  v1::SeriesSelector window = Select();
  window.set_since_ms(kT0 + kHour);
  window.set_until_ms(kT0 + 3 * kHour);
  const UsageSeries s = BuildUsageSeries(rows, {"a"}, "gpu", window, kLater);
  EXPECT_EQ(s.start_s, (kT0 + kHour) / 1000);
  EXPECT_THAT(s.values, ElementsAre(2, 3));
}

TEST(BuildUsageSeriesTest, ImportedValuesComeBackAsTheSameDouble) {
  // 58.317 GPUs × 3600 s and back: the CSV's double, not a neighbour.
  const UsageSeries s = BuildUsageSeries({Row("a", 0, 58.317), Row("a", 1, 0.1)}, {"a"}, "gpu",
                                         Select(v1::USAGE_METRIC_USED), kLater);
  EXPECT_THAT(s.values, ElementsAre(58.317, 0.1));
}

}  // namespace
}  // namespace tidegate::service
