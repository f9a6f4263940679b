#include "broker/sim/records.h"

#include "gtest/gtest.h"

namespace tidegate::sim {
namespace {

constexpr core::Time kStart = 1767571200000;  // 2026-01-05T00:00:00Z

core::Event Make(core::EventType type, core::Time at_s, const std::string& job,
                 const std::string& team = "") {
  core::Event e;
  e.type = type;
  e.at = kStart + at_s * 1000;
  e.job = job;
  e.team = team;
  return e;
}

TEST(RecordsTest, AdmitAsInTheDesign) {
  core::Event e = Make(core::EventType::kAdmit, 0, "r1", "research");
  e.replicas = 4;
  e.borrowed = {{"gpu", 0}};
  EXPECT_EQ(RecordJson(e, kStart),
            R"({"at":0,"type":"admit","job":"r1","team":"research","replicas":4,"borrowed":{"gpu":0}})");
  e.adopted = true;
  EXPECT_EQ(RecordJson(e, kStart),
            R"({"at":0,"type":"admit","job":"r1","team":"research","replicas":4,"borrowed":{"gpu":0},"adopted":true})");
}

TEST(RecordsTest, QueueMarksRequeuedVictimsOnly) {
  core::Event e = Make(core::EventType::kQueue, 31, "x", "t");
  e.reason = "borrow_limit org/ml gpu";
  EXPECT_EQ(RecordJson(e, kStart),
            R"({"at":31,"type":"queue","job":"x","team":"t","reason":"borrow_limit org/ml gpu"})");
  e.reason = "requeued";
  e.requeued = true;
  EXPECT_EQ(RecordJson(e, kStart),
            R"({"at":31,"type":"queue","job":"x","team":"t","reason":"requeued","requeued":true})");
}

TEST(RecordsTest, PreemptReclaimResizeEndRejectError) {
  core::Event p = Make(core::EventType::kPreempt, 30, "r7", "research");
  p.by = "s2";
  p.reason = "reclaim";
  EXPECT_EQ(RecordJson(p, kStart),
            R"({"at":30,"type":"preempt","job":"r7","team":"research","by":"s2","reason":"reclaim"})");

  core::Event r = Make(core::EventType::kReclaim, 30, "s2", "serving");
  r.decision = v1::DECISION_RECLAIMING;
  r.victims = {"r7", "r3"};
  EXPECT_EQ(RecordJson(r, kStart),
            R"({"at":30,"type":"reclaim","job":"s2","team":"serving","decision":"RECLAIMING","victims":["r7","r3"]})");

  core::Event z = Make(core::EventType::kResize, 30, "r1", "research");
  z.from = 6;
  z.to = 4;
  z.borrowed = {{"gpu", 0}};
  z.reason = "reclaim";
  EXPECT_EQ(RecordJson(z, kStart),
            R"({"at":30,"type":"resize","job":"r1","team":"research","from":6,"to":4,"borrowed":{"gpu":0},"reason":"reclaim"})");

  EXPECT_EQ(RecordJson(Make(core::EventType::kEnd, 40, "r1", "research"), kStart),
            R"({"at":40,"type":"end","job":"r1"})");

  core::Event j = Make(core::EventType::kReject, 0, "x1");
  j.reason = "team: \"nobody\" is not a team";
  EXPECT_EQ(RecordJson(j, kStart),
            R"({"at":0,"type":"reject","job":"x1","reason":"team: \"nobody\" is not a team"})");
  j.type = core::EventType::kError;
  EXPECT_EQ(RecordJson(j, kStart),
            R"({"at":0,"type":"error","job":"x1","reason":"team: \"nobody\" is not a team"})");
}

TEST(RecordsTest, TimesAreSecondsFromStartIntegerWhenWhole) {
  EXPECT_EQ(FormatSeconds(130'000), "130");
  EXPECT_EQ(FormatSeconds(130'500), "130.5");
  EXPECT_EQ(FormatSeconds(1), "0.001");
  EXPECT_EQ(FormatSeconds(0), "0");
}

TEST(RecordsTest, SummaryHasFixedFieldOrderAndNullsForMissingValues) {
  Summary s;
  s.duration_s = 200;
  s.utilization = 0.5;
  TeamSummary t;
  t.name = "research";
  t.gpu_hours = 0.25;
  t.wait_p50_s = 0;
  t.wait_p95_s = 30;
  t.preemptions = 2;
  s.teams.push_back(t);
  s.jobs.submitted = 4;
  s.jobs.admitted = 4;
  EXPECT_EQ(SummaryJson(s),
            R"({"type":"summary","utilization":0.5,"teams":{"research":{"gpu_hours":0.25,)"
            R"("borrowed_gpu_hours":0,"wait_p50_s":0,"wait_p95_s":30,"preemptions":2,)"
            R"("lost_gpu_hours":0,"grown_gpu_hours":0}},"reclaim_latency_p99_s":null,)"
            R"("grown_gpu_hours":0,"lost_gpu_hours":0,"jobs":{"submitted":4,)"
            R"("adopted":0,"admitted":4,"rejected":0,"queued_at_end":0},"duration_s":200})");
  s.trace = TraceStats{10, 7, 2, 1};
  EXPECT_NE(SummaryJson(s).find(
                R"("trace":{"rows":10,"submitted":7,"unknown_team":2,"zero_gpu":1}})"),
            std::string::npos);
}

}  // namespace
}  // namespace tidegate::sim
