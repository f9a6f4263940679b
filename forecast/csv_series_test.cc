#include "forecast/csv_series.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tidegate::forecast {
namespace {

using ::testing::ElementsAre;

CsvSeriesOptions Options(std::string column) {
  CsvSeriesOptions o;
  o.source = "t.csv";
  o.value_column = std::move(column);
  return o;
}

constexpr char kLong[] =
    "hour_start_s,wallclock,team,demand_gpus\n"
    "0,2020-05-01 00:00,a,1\n"
    "0,2020-05-01 00:00,b,10\n"
    "3600,2020-05-01 01:00,a,2\n"
    "3600,2020-05-01 01:00,b,20\n"
    "7200,2020-05-01 02:00,a,3\r\n"
    "7200,2020-05-01 02:00,b,30\n";

TEST(CsvSeriesTest, WhereSelectsOneTeamOfALongTable) {
  CsvSeriesOptions o = Options("demand_gpus");
  o.where = {{"team", "b"}};
  absl::StatusOr<CsvSeries> s = ParseCsvSeries(kLong, o);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(s->series.values, ElementsAre(10, 20, 30));
  EXPECT_EQ(s->rows_read, 6);
  EXPECT_EQ(s->rows_selected, 3);
  ASSERT_TRUE(s->start_wallclock.has_value());
  EXPECT_EQ(*s->start_wallclock, absl::CivilHour(2020, 5, 1, 0));
}

TEST(CsvSeriesTest, WithoutSelectionALongTableRepeatsTimes) {
  absl::StatusOr<CsvSeries> s = ParseCsvSeries(kLong, Options("demand_gpus"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "t.csv:3: hour_start_s: 0 repeats line 2");
}

TEST(CsvSeriesTest, NonNumericValueNamesLineAndField) {
  absl::StatusOr<CsvSeries> s =
      ParseCsvSeries("hour_start_s,demand\n0,1\n3600,n/a\n", Options("demand"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "t.csv:3: demand: \"n/a\" is not a number");
}

TEST(CsvSeriesTest, MissingColumnListsTheColumns) {
  absl::StatusOr<CsvSeries> s = ParseCsvSeries("hour_start_s,demand\n0,1\n", Options("gpus"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "t.csv:1: gpus: no such column (columns: hour_start_s, demand)");
}

TEST(CsvSeriesTest, ShortRowIsRejected) {
  absl::StatusOr<CsvSeries> s =
      ParseCsvSeries("hour_start_s,x,demand\n0,a,1\n3600,2\n", Options("demand"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "t.csv:3: expected 3 columns, got 2");
}

TEST(CsvSeriesTest, NoRowsForTheSelection) {
  CsvSeriesOptions o = Options("demand_gpus");
  o.where = {{"team", "zz"}};
  absl::StatusOr<CsvSeries> s = ParseCsvSeries(kLong, o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "t.csv: no rows with team=zz");
}

TEST(CsvSeriesTest, QuotedCellsAreRead) {
  EXPECT_THAT(SplitCsvLine(R"(1,"a,b","say ""hi""",)"), ElementsAre("1", "a,b", "say \"hi\"", ""));
}

TEST(CsvSeriesTest, HourIndexTimesHaveAStepOfOne) {
  absl::StatusOr<CsvSeries> s = ParseCsvSeries("hour_index,v\n5,1\n6,2\n7,4\n",
                                               [] {
                                                 CsvSeriesOptions o = Options("v");
                                                 o.time_column = "hour_index";
                                                 return o;
                                               }());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->series.step, 1);
  EXPECT_EQ(s->series.NextTime(), 8);
}

}  // namespace
}  // namespace tidegate::forecast
