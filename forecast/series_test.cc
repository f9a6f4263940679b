#include "forecast/series.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tidegate::forecast {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Rows at the given times (seconds), value = time / 3600, lines from 2.
std::vector<RawPoint> Rows(std::vector<int64_t> times) {
  std::vector<RawPoint> rows;
  int line = 2;
  for (int64_t t : times) rows.push_back({t, static_cast<double>(t) / 3600, line++});
  return rows;
}

SeriesOptions Options() {
  SeriesOptions o;
  o.source = "demand.csv";
  o.time_field = "hour_start_s";
  o.value_field = "demand_gpus";
  return o;
}

TEST(HourlySeriesTest, InfersTheStepAndStampsTheNextHour) {
  absl::StatusOr<HourlySeries> s = MakeHourlySeries(Rows({7200, 10800, 14400}), Options());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->start, 7200);
  EXPECT_EQ(s->step, 3600);
  EXPECT_THAT(s->values, ElementsAre(2, 3, 4));
  EXPECT_EQ(s->NextTime(), 18000);
  EXPECT_TRUE(s->filled.empty());
}

TEST(HourlySeriesTest, DuplicateTimeNamesBothLines) {
  absl::StatusOr<HourlySeries> s = MakeHourlySeries(Rows({0, 3600, 3600}), Options());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "demand.csv:4: hour_start_s: 3600 repeats line 3");
}

TEST(HourlySeriesTest, UnsortedTimeIsRejected) {
  absl::StatusOr<HourlySeries> s = MakeHourlySeries(Rows({0, 7200, 3600}), Options());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(),
            "demand.csv:4: hour_start_s: 3600 comes before line 3's 7200 (rows must be sorted "
            "by time)");
}

TEST(HourlySeriesTest, GapIsAnErrorUnlessFillingIsAsked) {
  absl::StatusOr<HourlySeries> s = MakeHourlySeries(Rows({0, 3600, 14400, 18000}), Options());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(),
            "demand.csv:4: hour_start_s: 2 hours missing after line 3 (3600); pass --fill-gaps "
            "to interpolate them");
}

TEST(HourlySeriesTest, FilledGapsAreInterpolatedAndListed) {
  SeriesOptions o = Options();
  o.fill_gaps = true;
  absl::StatusOr<HourlySeries> s = MakeHourlySeries(Rows({0, 3600, 14400, 18000}), o);
  ASSERT_TRUE(s.ok()) << s.status();
  // 1 at 3600, 4 at 14400: 2 and 3 in between.
  EXPECT_THAT(s->values, ElementsAre(0, 1, 2, 3, 4, 5));
  EXPECT_THAT(s->filled, ElementsAre(2, 3));
}

TEST(HourlySeriesTest, IntervalThatIsNotAWholeNumberOfStepsIsRejected) {
  absl::StatusOr<HourlySeries> s = MakeHourlySeries(Rows({0, 3600, 9000}), Options());
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("demand.csv:4: hour_start_s: 9000 is not a whole "
                                              "number of steps (3600)"));
}

TEST(HourlySeriesTest, OneRowIsNotASeries) {
  absl::StatusOr<HourlySeries> s = MakeHourlySeries(Rows({0}), Options());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "demand.csv: demand_gpus: 1 rows; a series needs at least two");
}

TEST(HourlySeriesTest, ShorterThanTwoSeasonsSaysHowMuchIsNeeded) {
  std::vector<int64_t> times;
  for (int i = 0; i < 40; ++i) times.push_back(i * 3600);
  absl::StatusOr<HourlySeries> s = MakeHourlySeries(Rows(times), Options());
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(CheckTwoSeasons(*s, 12, Options()).ok());
  EXPECT_EQ(CheckTwoSeasons(*s, 24, Options()).message(),
            "demand.csv: demand_gpus: 40 hours is shorter than two seasons of 24 hours (48)");
}

}  // namespace
}  // namespace tidegate::forecast
