#include "broker/sim/work.h"

#include "gtest/gtest.h"

namespace tidegate::sim {
namespace {

WorkTracker::Spec Work(core::Time work_ms, std::optional<core::Time> interval = std::nullopt) {
  return WorkTracker::Spec{work_ms, interval};
}

TEST(WorkTest, ARunningJobCompletesAfterItsWork) {
  WorkTracker w;
  w.Register("j", Work(7200'000));
  EXPECT_EQ(w.NextCompletion(), std::nullopt);  // not started.
  w.Start("j", 1000);
  EXPECT_EQ(w.NextCompletion(), 7201'000);
  EXPECT_EQ(w.PopDue(7200'999), std::nullopt);
  EXPECT_EQ(w.PopDue(7201'000), "j");
  EXPECT_EQ(w.NextCompletion(), std::nullopt);
}

TEST(WorkTest, ElasticProgressIsExactAcrossResizes) {
  // max 3: 1 s at 1/3 and 1 s at 2/3 is 1000 ms of work exactly (333.3 +
  // 666.7), so 9000 ms remain at full speed. Rounding each stretch down
  // would leave 9001 and complete 1 ms late.
  WorkTracker w;
  w.Register("j", Work(10'000));
  w.SetRate("j", 0, 1, 3);
  w.Start("j", 0);
  w.SetRate("j", 1'000, 2, 3);
  w.SetRate("j", 2'000, 3, 3);
  EXPECT_EQ(w.NextCompletion(), 11'000);
}

TEST(WorkTest, PreemptionWithoutCheckpointLosesEverything) {
  WorkTracker w;
  w.Register("j", Work(1000'000));
  w.Start("j", 0);
  EXPECT_EQ(w.Stop("j", 300'000), 300'000);  // all 300 s lost.
  EXPECT_EQ(w.NextCompletion(), std::nullopt);
  w.Start("j", 500'000);
  EXPECT_EQ(w.NextCompletion(), 1500'000);  // starts over from 0.
}

TEST(WorkTest, ExplicitCheckpointKeepsProgress) {
  WorkTracker w;
  w.Register("j", Work(1000'000));
  w.Start("j", 0);
  w.Checkpoint("j", 200'000);
  EXPECT_EQ(w.Stop("j", 300'000), 100'000);  // lost 200..300.
  w.Start("j", 400'000);
  EXPECT_EQ(w.NextCompletion(), 1200'000);  // 800 s left.
}

TEST(WorkTest, CheckpointIntervalCountsFromTheLastStart) {
  WorkTracker w;
  w.Register("j", Work(1000'000, 60'000));
  w.Start("j", 10'000);
  // Ran 150 s: checkpoints at 60 and 120 s of running; 30 s lost.
  EXPECT_EQ(w.Stop("j", 160'000), 30'000);
  w.Start("j", 200'000);  // resumes at 120 s of progress.
  EXPECT_EQ(w.NextCompletion(), 200'000 + 880'000);
  EXPECT_EQ(w.Stop("j", 250'000), 50'000);  // less than one interval since restart.
}

TEST(WorkTest, StoppingAJobThatIsNotRunningLosesNothing) {
  WorkTracker w;
  w.Register("j", Work(100'000));
  EXPECT_EQ(w.Stop("j", 5'000), 0);
  EXPECT_EQ(w.Stop("unknown", 5'000), 0);
}

TEST(WorkTest, JobsWithoutRunNeverCompleteButStillLoseWork) {
  WorkTracker w;
  w.Register("j", WorkTracker::Spec{});
  w.Start("j", 0);
  EXPECT_EQ(w.NextCompletion(), std::nullopt);
  EXPECT_EQ(w.Stop("j", 40'000), 40'000);
}

TEST(WorkTest, EndedJobsDropTheirCompletionAndMayBeRegisteredAgain) {
  WorkTracker w;
  w.Register("j", Work(100'000));
  w.Start("j", 0);
  w.End("j");
  EXPECT_EQ(w.NextCompletion(), std::nullopt);
  w.Register("j", Work(5'000));
  w.Start("j", 200'000);
  EXPECT_EQ(w.NextCompletion(), 205'000);
}

TEST(WorkTest, RegisteringALiveJobAgainKeepsItsProgress) {
  WorkTracker w;
  w.Register("j", Work(100'000));
  w.Start("j", 0);
  w.Register("j", Work(1'000));  // an idempotent resubmit.
  EXPECT_EQ(w.NextCompletion(), 100'000);
}

TEST(WorkTest, SimultaneousCompletionsComeOutInTheOrderScheduled) {
  WorkTracker w;
  w.Register("b", Work(10));
  w.Register("a", Work(10));
  w.Start("b", 0);
  w.Start("a", 0);
  EXPECT_EQ(w.PopDue(10), "b");
  EXPECT_EQ(w.PopDue(10), "a");
  EXPECT_EQ(w.PopDue(10), std::nullopt);
}

TEST(WorkTest, ZeroWorkCompletesAtOnce) {
  WorkTracker w;
  w.Register("j", Work(0));
  w.Start("j", 42);
  EXPECT_EQ(w.PopDue(42), "j");
}

}  // namespace
}  // namespace tidegate::sim
