#include "cli/value_format.h"

#include <limits>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tidegate/v1/service.pb.h"

namespace tidegate::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int64_t kMay1 = 1714521600000;  // 2024-05-01T00:00:00Z

TEST(ResourcesTest, GpuLikeResourcesComeFirstThenByName) {
  EXPECT_THAT(OrderResources({"memory", "cpu", "nvidia.com/gpu", "gpu", "mig-1g.10gb", "cpu"}),
              ElementsAre("gpu", "mig-1g.10gb", "nvidia.com/gpu", "cpu", "memory"));
  EXPECT_TRUE(IsGpuLike("GPU"));
  EXPECT_TRUE(IsGpuLike("nvidia.com/mig-3g.20gb"));
  EXPECT_FALSE(IsGpuLike("cpu"));
}

TEST(ResourcesTest, QuantitiesPrintInResourceOrderWithTheFlagSyntax) {
  EXPECT_EQ(FormatQuantities(std::map<std::string, int64_t>{{"cpu", 4000}, {"gpu", 32}}),
            "gpu=32,cpu=4000");
  EXPECT_EQ(FormatQuantities(std::map<std::string, int64_t>{}), "-");
}

TEST(ParseQuantitiesTest, ReadsNameCountPairs) {
  auto q = ParseQuantities("--per-replica", "gpu=8,cpu=4000,nvidia.com/mig-1g.10gb=2");
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(q->at("gpu"), 8);
  EXPECT_EQ(q->at("cpu"), 4000);
  EXPECT_EQ(q->at("nvidia.com/mig-1g.10gb"), 2);
}

TEST(ParseQuantitiesTest, ErrorsNameTheFlagAndTheValue) {
  auto bad = [](const char* text) {
    auto q = ParseQuantities("--per-replica", text);
    EXPECT_FALSE(q.ok()) << text;
    EXPECT_EQ(q.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(q.status().message());
  };
  EXPECT_EQ(bad("gpu=eight"), "--per-replica 'gpu=eight': 'eight' is not a whole number >= 0");
  EXPECT_THAT(bad("gpu"), HasSubstr("'gpu' is not NAME=COUNT"));
  EXPECT_THAT(bad("gpu=-1"), HasSubstr("'-1' is not a whole number >= 0"));
  EXPECT_THAT(bad("gpu=+1"), HasSubstr("'+1' is not a whole number >= 0"));
  EXPECT_THAT(bad("gpu=99999999999999999999"), HasSubstr("'99999999999999999999' is too large"));
  EXPECT_THAT(bad("gpu=8,gpu=4"), HasSubstr("gpu is given twice"));
  EXPECT_THAT(bad("=8"), HasSubstr("'' is not a resource name"));
  EXPECT_THAT(bad("g pu=8"), HasSubstr("'g pu' is not a resource name"));
  EXPECT_THAT(bad("gpu=8,"), HasSubstr("'' is not NAME=COUNT"));
  EXPECT_THAT(bad(""), HasSubstr("expected NAME=COUNT"));
}

TEST(ParseLabelTest, SplitsAtTheFirstEquals) {
  auto kv = ParseLabel("--label", "a=b=c");
  ASSERT_TRUE(kv.ok());
  EXPECT_EQ(kv->first, "a");
  EXPECT_EQ(kv->second, "b=c");
  EXPECT_FALSE(ParseLabel("--label", "=x").ok());
  EXPECT_FALSE(ParseLabel("--label", "x").ok());
}

TEST(DurationTest, ReadsUnitsAndSums) {
  EXPECT_EQ(*ParseDurationSeconds("--x", "90s"), 90);
  EXPECT_EQ(*ParseDurationSeconds("--x", "30m"), 1800);
  EXPECT_EQ(*ParseDurationSeconds("--x", "1h30m"), 5400);
  EXPECT_EQ(*ParseDurationSeconds("--x", "7d"), 7 * 86400);
  EXPECT_EQ(*ParseDurationSeconds("--x", "2w"), 14 * 86400);
}

TEST(DurationTest, RefusesWhatIsNotADuration) {
  for (const char* text : {"", "7", "d", "7x", "-1h", "1.5h", "0s", "99999999999999999999d"}) {
    auto d = ParseDurationSeconds("--timeout", text);
    EXPECT_FALSE(d.ok()) << text;
    EXPECT_THAT(std::string(d.status().message()),
                HasSubstr(std::string("--timeout '") + text + "'"));
  }
}

TEST(SinceTest, ReadsDatesTimesAndDurationsBackFromNow) {
  const int64_t now = kMay1 + 12 * 3600 * 1000;
  EXPECT_EQ(*ParseSince("--since", "2024-05-01", now), kMay1);
  EXPECT_EQ(*ParseSince("--since", "2024-05-01T13:00:00Z", now), kMay1 + 13 * 3600 * 1000);
  EXPECT_EQ(*ParseSince("--since", "2024-05-01T15:00:00+02:00", now), kMay1 + 13 * 3600 * 1000);
  EXPECT_EQ(*ParseSince("--since", "12h", now), kMay1);
  EXPECT_EQ(*ParseSince("--since", "1d", now), kMay1 - 12 * 3600 * 1000);
}

TEST(SinceTest, ErrorsSayWhatIsExpected) {
  EXPECT_THAT(std::string(ParseSince("--since", "2024-13-01", 0).status().message()),
              HasSubstr("--since '2024-13-01': not a date"));
  EXPECT_THAT(std::string(ParseSince("--since", "2024-05-01T25:00Z", 0).status().message()),
              HasSubstr("not an RFC 3339 time"));
  EXPECT_THAT(std::string(ParseSince("--since", "yesterday", 0).status().message()),
              HasSubstr("--since 'yesterday': expected a date (2024-05-01)"));
}

TEST(StepTest, MustBeWholeHours) {
  EXPECT_EQ(*ParseStepSeconds("--step", "1h"), 3600);
  EXPECT_EQ(*ParseStepSeconds("--step", "1d"), 86400);
  EXPECT_THAT(std::string(ParseStepSeconds("--step", "90m").status().message()),
              HasSubstr("--step '90m': must be a whole number of hours"));
}

TEST(FormatTest, AgesUseAtMostTwoUnits) {
  EXPECT_EQ(FormatAge(-5000), "0s");
  EXPECT_EQ(FormatAge(999), "0s");
  EXPECT_EQ(FormatAge(45'000), "45s");
  EXPECT_EQ(FormatAge(12 * 60'000 + 59'000), "12m");
  EXPECT_EQ(FormatAge(3 * 3'600'000), "3h");
  EXPECT_EQ(FormatAge(3 * 3'600'000 + 4 * 60'000), "3h4m");
  EXPECT_EQ(FormatAge(2 * 86'400'000 + 3 * 3'600'000), "2d3h");
  EXPECT_EQ(FormatAge(int64_t{40} * 86'400'000 + 3'600'000), "40d");
}

TEST(FormatTest, TimesAreUtc) {
  EXPECT_EQ(FormatTime(kMay1 + 13 * 3'600'000 + 5 * 60'000 + 12'345), "2024-05-01T13:05:12Z");
  EXPECT_EQ(FormatStepStart(kMay1 + 13 * 3'600'000), "2024-05-01 13:00");
}

TEST(FormatTest, NumbersHaveFixedDecimals) {
  EXPECT_EQ(FormatHours(12.5), "12.50");
  EXPECT_EQ(FormatShare(0.375), "0.375");
  EXPECT_EQ(FormatShare(1.0 / 0.0), "inf");
}

TEST(EnumTest, StatesAreLowerCaseAndParseEitherWay) {
  EXPECT_EQ(StateName(v1::JOB_STATE_QUEUED), "queued");
  EXPECT_EQ(*ParseState("--state", "Admitted"), v1::JOB_STATE_ADMITTED);
  EXPECT_EQ(*ParseState("--state", "JOB_STATE_DRAINING"), v1::JOB_STATE_DRAINING);
  EXPECT_FALSE(ParseState("--state", "unspecified").ok());
  EXPECT_THAT(std::string(ParseState("--state", "waiting").status().message()),
              HasSubstr("--state 'waiting': expected queued, admitted"));
}

TEST(EnumTest, DecisionsUseTheDesignNames) {
  EXPECT_EQ(DecisionName(v1::DECISION_ADMITTED_BORROWING), "ADMITTED_BORROWING");
  EXPECT_EQ(DecisionName(v1::DECISION_QUEUED), "QUEUED");
}

TEST(JsonTest, KeysAreTheProtoFieldNamesAndZerosArePrinted) {
  v1::JobInfo job;
  job.set_job("slurm:1");
  job.set_state(v1::JOB_STATE_QUEUED);
  job.set_queue_position(2);
  (*job.mutable_demand())["gpu"] = 16;
  const std::string json = ToJson(job);
  EXPECT_THAT(json, HasSubstr(R"("job":"slurm:1")"));
  EXPECT_THAT(json, HasSubstr(R"("state":"JOB_STATE_QUEUED")"));
  EXPECT_THAT(json, HasSubstr(R"("queue_position":2)"));  // int64 is a JSON number.
  EXPECT_THAT(json, HasSubstr(R"("demand":{"gpu":16})"));
  EXPECT_THAT(json, HasSubstr(R"("admitted_at_ms":0)"));
  EXPECT_THAT(json, HasSubstr(R"("borrowing":false)"));
  EXPECT_EQ(json.find('\n'), std::string::npos);
}

TEST(JsonTest, UnsetOptionalLimitsAreLeftOut) {
  v1::TeamResource r;
  r.set_resource("gpu");
  r.set_lend_limit(16);
  const std::string json = ToJson(r);
  EXPECT_THAT(json, HasSubstr(R"("lend_limit":16)"));
  EXPECT_EQ(json.find("borrow_limit"), std::string::npos) << json;  // unset = unlimited.
}

TEST(JsonTest, NumbersAreJsonNumbersAndStringsAreEscaped) {
  v1::TeamInfo team;
  team.set_name("a\"b");
  team.set_weight(0.1 + 0.2);  // shortest form that reads back: 0.30000000000000004
  team.set_share(std::numeric_limits<double>::infinity());
  team.add_resources()->set_guaranteed(9223372036854775807);
  const std::string json = ToJson(team);
  EXPECT_THAT(json, HasSubstr(R"("name":"a\"b")"));
  EXPECT_THAT(json, HasSubstr(R"("weight":0.30000000000000004)"));
  EXPECT_THAT(json, HasSubstr(R"("share":"Infinity")"));
  EXPECT_THAT(json, HasSubstr(R"("guaranteed":9223372036854775807)"));
  EXPECT_THAT(json, HasSubstr(R"("tide":[])"));
  EXPECT_DOUBLE_EQ(RoundTo(12.499999999, 2), 12.5);
  EXPECT_EQ(JsonNumber(RoundTo(0.1 + 0.2, 3)), "0.3");
}

TEST(PrintFieldsTest, AlignsValuesAfterTheLongestKey) {
  std::ostringstream out;
  PrintFields({{"job", "a"}, {"queue position", "2"}, {"labels", ""}}, out);
  EXPECT_EQ(out.str(),
            "job:             a\n"
            "queue position:  2\n"
            "labels:\n");
}

}  // namespace
}  // namespace tidegate::cli
