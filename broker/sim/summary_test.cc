#include "broker/sim/summary.h"

#include "gtest/gtest.h"

namespace tidegate::sim {
namespace {

constexpr core::Time kS = 1000;  // one second in core time.

v1::JobSpec Spec(const std::string& job, const std::string& team, int64_t gpus) {
  v1::JobSpec spec;
  spec.set_job(job);
  spec.set_team(team);
  (*spec.mutable_per_replica())["gpu"] = gpus;
  (*spec.mutable_per_replica())["cpu"] = 1000;  // not a GPU: not counted.
  return spec;
}

core::Event Rec(core::EventType type, core::Time at, const std::string& job) {
  core::Event e;
  e.type = type;
  e.at = at;
  e.job = job;
  return e;
}

core::Event Admit(core::Time at, const std::string& job, int64_t replicas) {
  core::Event e = Rec(core::EventType::kAdmit, at, job);
  e.replicas = replicas;
  return e;
}

TEST(SummaryTest, GpuResourcesAreEverythingButCpuMemoryStorageAndPods) {
  EXPECT_TRUE(IsGpuResource("gpu"));
  EXPECT_TRUE(IsGpuResource("h100"));
  EXPECT_TRUE(IsGpuResource("nvidia.com/gpu"));
  EXPECT_TRUE(IsGpuResource("mig-1g.10gb"));
  EXPECT_FALSE(IsGpuResource("cpu"));
  EXPECT_FALSE(IsGpuResource("default/cpu"));
  EXPECT_FALSE(IsGpuResource("alpha/memory"));
  EXPECT_FALSE(IsGpuResource("ephemeral-storage"));
  EXPECT_FALSE(IsGpuResource("pods"));
}

TEST(SummaryTest, UsageBorrowingAndUtilisationFollowTheRecords) {
  SummaryBuilder b({"research", "serving"}, {"gpu"}, 0);
  b.SetCapacity("gpu", 16, 0);
  b.SetGuaranteed("research", "gpu", 8, 0);
  b.SetGuaranteed("serving", "gpu", 8, 0);
  b.OnSubmit(Spec("r1", "research", 4), 0);
  b.OnRecord(Admit(0, "r1", 3));                         // 12 GPUs, 4 borrowed
  b.OnRecord(Rec(core::EventType::kEnd, 1800 * kS, "r1"));  // after half an hour
  Summary s = b.Finish(3600 * kS, 0);
  ASSERT_EQ(s.teams.size(), 2u);
  EXPECT_DOUBLE_EQ(s.teams[0].gpu_hours, 6);           // 12 x 0.5 h
  EXPECT_DOUBLE_EQ(s.teams[0].borrowed_gpu_hours, 2);  // 4 x 0.5 h
  EXPECT_DOUBLE_EQ(*s.utilization, 6.0 / 16.0);
  EXPECT_DOUBLE_EQ(s.duration_s, 3600);
  EXPECT_EQ(s.jobs.submitted, 1);
  EXPECT_EQ(s.jobs.admitted, 1);
}

TEST(SummaryTest, WaitIsFirstAdmitMinusSubmitAndRequeuedWaitsDoNotCount) {
  SummaryBuilder b({"t"}, {"gpu"}, 0);
  for (int i = 0; i < 4; ++i) b.OnSubmit(Spec("j" + std::to_string(i), "t", 1), 0);
  b.OnRecord(Admit(0, "j0", 1));
  b.OnRecord(Admit(10 * kS, "j1", 1));
  b.OnRecord(Admit(20 * kS, "j2", 1));
  b.OnRecord(Admit(40 * kS, "j3", 1));
  // j0 is preempted, requeued and readmitted much later: its wait stays 0.
  b.OnRecord(Rec(core::EventType::kPreempt, 50 * kS, "j0"));
  b.OnRecord(Rec(core::EventType::kQueue, 80 * kS, "j0"));
  b.OnRecord(Admit(500 * kS, "j0", 1));
  Summary s = b.Finish(600 * kS, 0);
  // waits 0, 10, 20, 40: p50 = 10, p95 = 40.
  EXPECT_EQ(s.teams[0].wait_p50_s, 10);
  EXPECT_EQ(s.teams[0].wait_p95_s, 40);
  EXPECT_EQ(s.teams[0].preemptions, 1);
  EXPECT_EQ(s.jobs.admitted, 4);
}

TEST(SummaryTest, ReclaimLatencyRunsFromTheReclaimRecordToTheAdmit) {
  SummaryBuilder b({"t"}, {"gpu"}, 0);
  b.OnSubmit(Spec("s1", "t", 8), 100 * kS);
  b.OnRecord(Rec(core::EventType::kReclaim, 100 * kS, "s1"));
  b.OnRecord(Rec(core::EventType::kReclaim, 110 * kS, "s1"));  // the first one counts.
  b.OnRecord(Admit(130 * kS, "s1", 1));
  Summary s = b.Finish(200 * kS, 0);
  EXPECT_EQ(s.reclaim_latency_p99_s, 30);
}

TEST(SummaryTest, LostWorkIsGpusTimesLostTime) {
  SummaryBuilder b({"t"}, {"gpu"}, 0);
  b.OnSubmit(Spec("j", "t", 2), 0);
  b.OnRecord(Admit(0, "j", 4));  // 8 GPUs
  b.AddLostWork("j", 1800 * kS);
  Summary s = b.Finish(3600 * kS, 0);
  EXPECT_DOUBLE_EQ(s.teams[0].lost_gpu_hours, 4);  // 8 x 0.5 h
}

TEST(SummaryTest, AdoptedJobsHoldCapacityButHaveNoWait) {
  SummaryBuilder b({"t"}, {"gpu"}, 0);
  b.SetCapacity("gpu", 4, 0);
  b.OnAdopt(Spec("old", "t", 4));
  core::Event admit = Admit(0, "old", 1);
  admit.adopted = true;
  b.OnRecord(admit);
  Summary s = b.Finish(3600 * kS, 0);
  EXPECT_DOUBLE_EQ(s.teams[0].gpu_hours, 4);
  EXPECT_EQ(s.teams[0].wait_p50_s, std::nullopt);
  EXPECT_EQ(s.jobs.adopted, 1);
  EXPECT_EQ(s.jobs.admitted, 0);
  EXPECT_DOUBLE_EQ(*s.utilization, 1.0);
}

TEST(SummaryTest, NoGpuCapacityMeansNoUtilisation) {
  SummaryBuilder b({"t"}, {}, 0);
  EXPECT_EQ(b.Finish(1000, 0).utilization, std::nullopt);
}

}  // namespace
}  // namespace tidegate::sim
