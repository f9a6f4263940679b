#include "broker/sim/trace.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tidegate::sim {
namespace {

using ::testing::HasSubstr;

constexpr char kHeader[] = "job_id,team,submit_s,duration_s,gpus,gpu_type,status\n";

TEST(TraceTest, ParsesRowsWithLineNumbers) {
  auto trace = ParseTrace(std::string(kHeader) +
                              "j1,research,10,3600,8,,\n"
                              "j2,serving,12.5,,0.46,V100,Running\n",
                          "t.csv");
  ASSERT_TRUE(trace.ok()) << trace.status();
  ASSERT_EQ(trace->rows.size(), 2u);
  EXPECT_EQ(trace->rows[0].line, 2);
  EXPECT_EQ(trace->rows[0].job_id, "j1");
  EXPECT_EQ(trace->rows[0].team, "research");
  EXPECT_EQ(trace->rows[0].submit_s, 10);
  EXPECT_EQ(trace->rows[0].duration_s, 3600);
  EXPECT_EQ(trace->rows[0].gpus, 8);
  EXPECT_EQ(trace->rows[1].duration_s, std::nullopt);  // empty: no known end.
  EXPECT_EQ(trace->rows[1].gpus, 0.46);
  EXPECT_EQ(trace->rows[1].gpu_type, "V100");
  EXPECT_EQ(trace->rows[1].status, "Running");
}

TEST(TraceTest, AcceptsCrlfAndSkipsBlankLines) {
  auto trace = ParseTrace(
      "job_id,team,submit_s,duration_s,gpus,gpu_type,status\r\nj1,a,0,1,1,,\r\n\r\n", "t.csv");
  ASSERT_TRUE(trace.ok()) << trace.status();
  EXPECT_EQ(trace->rows.size(), 1u);
}

TEST(TraceTest, MissingHeaderIsAnErrorAtLineOne) {
  auto trace = ParseTrace("j1,a,0,1,1,,\n", "t.csv");
  ASSERT_FALSE(trace.ok());
  EXPECT_THAT(trace.status().message(), HasSubstr("t.csv:1: header: expected"));
}

TEST(TraceTest, WrongColumnCountNamesTheLine) {
  auto trace = ParseTrace(std::string(kHeader) + "j1,a,0,1,1,,\nj2,a,0,1\n", "t.csv");
  ASSERT_FALSE(trace.ok());
  EXPECT_EQ(trace.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(trace.status().message(), HasSubstr("t.csv:3: expected 7 columns"));
  EXPECT_THAT(trace.status().message(), HasSubstr("got 4"));
}

TEST(TraceTest, NonNumberNamesTheFieldAndValue) {
  auto trace = ParseTrace(std::string(kHeader) + "j1,a,0,1,two,,\n", "t.csv");
  ASSERT_FALSE(trace.ok());
  EXPECT_EQ(trace.status().message(), "t.csv:2: gpus: \"two\" is not a number");
}

TEST(TraceTest, MissingSubmitTimeIsAnError) {
  auto trace = ParseTrace(std::string(kHeader) + "j1,a,,1,1,,\n", "t.csv");
  ASSERT_FALSE(trace.ok());
  EXPECT_THAT(trace.status().message(), HasSubstr("t.csv:2: submit_s: missing"));
}

TEST(TraceTest, NegativeDurationIsAnError) {
  auto trace = ParseTrace(std::string(kHeader) + "j1,a,0,-5,1,,\n", "t.csv");
  ASSERT_FALSE(trace.ok());
  EXPECT_THAT(trace.status().message(), HasSubstr("t.csv:2: duration_s: -5 is negative"));
}

TEST(TraceTest, NotANumberSpelledOutIsAnError) {
  auto trace = ParseTrace(std::string(kHeader) + "j1,a,nan,1,1,,\n", "t.csv");
  ASSERT_FALSE(trace.ok());
  EXPECT_THAT(trace.status().message(), HasSubstr("submit_s: \"nan\" is not a number"));
}

TEST(TraceTest, MissingFileIsNotFound) {
  auto trace = ReadTraceFile("/nonexistent/trace.csv");
  ASSERT_FALSE(trace.ok());
  EXPECT_EQ(trace.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(trace.status().message(), HasSubstr("/nonexistent/trace.csv"));
}

TEST(TraceTest, PlanSkipsZeroGpuRowsAndUnknownTeamsAndCountsThem) {
  auto trace = ParseTrace(std::string(kHeader) +
                              "j1,research,30,100,2.5,,\n"
                              "j2,research,10,,1,,\n"
                              "j3,nobody,5,1,1,,\n"
                              "j4,research,5,1,0,,\n"
                              "j5,,5,1,1,,\n"
                              "j6,serving,10,1,1,,\n",
                          "t.csv");
  ASSERT_TRUE(trace.ok()) << trace.status();
  TracePlan plan = PlanTrace(*trace, {"research", "serving"}, "a");
  EXPECT_EQ(plan.stats.rows, 6);
  EXPECT_EQ(plan.stats.submitted, 3);
  EXPECT_EQ(plan.stats.unknown_team, 2);
  EXPECT_EQ(plan.stats.zero_gpu, 1);
  EXPECT_THAT(plan.unknown_teams, ::testing::ElementsAre("", "nobody"));
  // Sorted by submit time; ties keep file order (j2 before j6).
  ASSERT_EQ(plan.submits.size(), 3u);
  EXPECT_EQ(plan.submits[0].spec.job(), "j2");
  EXPECT_EQ(plan.submits[1].spec.job(), "j6");
  EXPECT_EQ(plan.submits[2].spec.job(), "j1");
  const TraceSubmit& j1 = plan.submits[2];
  EXPECT_EQ(j1.offset_ms, 30000);
  EXPECT_EQ(j1.run_ms, 100000);
  EXPECT_EQ(j1.spec.team(), "research");
  EXPECT_EQ(j1.spec.cluster(), "a");
  EXPECT_EQ(j1.spec.replicas(), 1);
  EXPECT_EQ(j1.spec.per_replica().at("gpu"), 3);  // ceil(2.5)
  EXPECT_EQ(plan.submits[0].run_ms, std::nullopt);
}

TEST(TraceTest, ElasticMultiGpuMakesMultiGpuRowsElasticWithHalfAsMin) {
  auto trace = ParseTrace(std::string(kHeader) +
                              "j1,research,0,100,8,,\n"
                              "j2,research,1,100,1,,\n"
                              "j3,research,2,100,2.5,,\n"
                              "j4,research,3,100,2,,\n",
                          "t.csv");
  ASSERT_TRUE(trace.ok()) << trace.status();
  // Off by default: every row rigid.
  TracePlan rigid = PlanTrace(*trace, {"research"}, "a");
  ASSERT_EQ(rigid.submits.size(), 4u);
  EXPECT_EQ(rigid.stats.elastic, 0);
  EXPECT_FALSE(rigid.submits[0].spec.has_elastic());
  EXPECT_EQ(rigid.submits[0].spec.per_replica().at("gpu"), 8);

  trace->plan.elastic_multi_gpu = true;
  TracePlan plan = PlanTrace(*trace, {"research"}, "a");
  ASSERT_EQ(plan.submits.size(), 4u);
  EXPECT_EQ(plan.stats.elastic, 3);
  const v1::JobSpec& j1 = plan.submits[0].spec;  // 8 GPUs: one-GPU replicas, 4..8.
  EXPECT_FALSE(j1.has_replicas());
  EXPECT_EQ(j1.per_replica().at("gpu"), 1);
  EXPECT_EQ(j1.elastic().min(), 4);
  EXPECT_EQ(j1.elastic().max(), 8);
  EXPECT_EQ(j1.run_s(), 100);  // the same work, at full size.
  EXPECT_EQ(plan.submits[0].run_ms, 100000);
  const v1::JobSpec& j2 = plan.submits[1].spec;  // one GPU: stays rigid.
  EXPECT_FALSE(j2.has_elastic());
  EXPECT_EQ(j2.replicas(), 1);
  EXPECT_EQ(j2.per_replica().at("gpu"), 1);
  const v1::JobSpec& j3 = plan.submits[2].spec;  // ceil(2.5) = 3: min ceil(3/2) = 2.
  EXPECT_EQ(j3.elastic().min(), 2);
  EXPECT_EQ(j3.elastic().max(), 3);
  const v1::JobSpec& j4 = plan.submits[3].spec;  // 2 GPUs: 1..2.
  EXPECT_EQ(j4.elastic().min(), 1);
  EXPECT_EQ(j4.elastic().max(), 2);
}

}  // namespace
}  // namespace tidegate::sim
