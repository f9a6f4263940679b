#include "broker/sim/expectations.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tidegate::sim {
namespace {

using ::testing::HasSubstr;

v1::Expectation JobExpect(int64_t at, const std::string& job, v1::JobState state) {
  v1::Expectation e;
  e.set_at(at);
  e.set_job(job);
  e.set_state(state);
  return e;
}

v1::Expectation VictimsExpect(int64_t at, const std::string& by,
                              std::vector<std::string> preempted) {
  v1::Expectation e;
  e.set_at(at);
  e.set_by(by);
  for (auto& id : preempted) e.add_preempted(id);
  return e;
}

core::Event Record(core::EventType type, const std::string& job) {
  core::Event e;
  e.type = type;
  e.job = job;
  return e;
}

TEST(ExpectationsTest, MatchingStatePasses) {
  JobStatus status{v1::JOB_STATE_ADMITTED, 4, false};
  auto r = CheckJobExpectation(JobExpect(130, "s1", v1::JOB_STATE_ADMITTED), 0, &status);
  EXPECT_TRUE(r.passed) << r.message;
}

TEST(ExpectationsTest, WrongStateReadsAsADiff) {
  JobStatus status{v1::JOB_STATE_QUEUED, 1, false};
  auto r = CheckJobExpectation(JobExpect(130, "s1", v1::JOB_STATE_ADMITTED), 3, &status);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.index, 3);
  EXPECT_EQ(r.message, "at 130: s1: expected state admitted, got queued");
}

TEST(ExpectationsTest, ReplicasAndBorrowingAreComparedOnlyWhenGiven) {
  JobStatus status{v1::JOB_STATE_ADMITTED, 2, true};
  v1::Expectation e = JobExpect(0, "t1", v1::JOB_STATE_ADMITTED);
  EXPECT_TRUE(CheckJobExpectation(e, 0, &status).passed);
  e.set_replicas(6);
  e.set_borrowing(false);
  auto r = CheckJobExpectation(e, 0, &status);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.message, "at 0: t1: expected replicas 6, got 2; expected borrowing false, got true");
}

TEST(ExpectationsTest, AJobWithoutRecordsFails) {
  auto r = CheckJobExpectation(JobExpect(5, "ghost", v1::JOB_STATE_QUEUED), 0, nullptr);
  EXPECT_FALSE(r.passed);
  EXPECT_THAT(r.message, HasSubstr("at 5: ghost: expected state queued, got no record"));
}

TEST(ExpectationsTest, VictimsCompareAsASetAndReportSorted) {
  auto pass = CheckVictimExpectation(VictimsExpect(100, "s1", {"r2", "r3"}), 0, {"r3", "r2"});
  EXPECT_TRUE(pass.passed) << pass.message;
  auto fail = CheckVictimExpectation(VictimsExpect(100, "s1", {"r3", "r2"}), 0, {"r3"});
  EXPECT_FALSE(fail.passed);
  EXPECT_EQ(fail.message, "at 100: by s1: expected preempted [r2, r3], got [r3]");
}

TEST(ExpectationsTest, EmptyPreemptedExpectsNoVictims) {
  EXPECT_TRUE(CheckVictimExpectation(VictimsExpect(1001, "b", {}), 0, {}).passed);
  auto r = CheckVictimExpectation(VictimsExpect(1001, "b", {}), 0, {"a1"});
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.message, "at 1001: by b: expected preempted [], got [a1]");
}

TEST(ExpectationsTest, ValidationNamesTheExpectation) {
  v1::Expectation no_kind;
  no_kind.set_at(3);
  EXPECT_THAT(ValidateExpectation(no_kind, 4).message(), HasSubstr("expect[4]: needs either"));
  v1::Expectation no_state;
  no_state.set_job("x");
  EXPECT_THAT(ValidateExpectation(no_state, 1).message(), HasSubstr("expect[1].state: required"));
  v1::Expectation mixed = VictimsExpect(0, "s1", {"r1"});
  mixed.set_job("r1");
  EXPECT_FALSE(ValidateExpectation(mixed, 0).ok());
  EXPECT_TRUE(ValidateExpectation(VictimsExpect(0, "s1", {}), 0).ok());
  EXPECT_TRUE(ValidateExpectation(JobExpect(0, "x", v1::JOB_STATE_ENDED), 0).ok());
}

TEST(JobStatesTest, RecordsDriveTheStates) {
  JobStates states;
  core::Event admit = Record(core::EventType::kAdmit, "r1");
  admit.replicas = 4;
  admit.borrowed = {{"gpu", 0}, {"cpu", 2}};
  states.Apply(admit);
  ASSERT_NE(states.Find("r1"), nullptr);
  EXPECT_EQ(states.Find("r1")->state, v1::JOB_STATE_ADMITTED);
  EXPECT_EQ(states.Find("r1")->replicas, 4);
  EXPECT_TRUE(states.Find("r1")->borrowing);  // any borrowed > 0.
  EXPECT_EQ(states.Count(v1::JOB_STATE_ADMITTED), 1);

  states.Apply(Record(core::EventType::kPreempt, "r1"));
  EXPECT_EQ(states.Find("r1")->state, v1::JOB_STATE_DRAINING);
  states.Apply(Record(core::EventType::kQueue, "r1"));
  EXPECT_EQ(states.Find("r1")->state, v1::JOB_STATE_QUEUED);
  EXPECT_EQ(states.Count(v1::JOB_STATE_QUEUED), 1);
  EXPECT_EQ(states.Count(v1::JOB_STATE_ADMITTED), 0);

  core::Event resize = Record(core::EventType::kResize, "r1");
  resize.to = 2;
  states.Apply(resize);
  EXPECT_EQ(states.Find("r1")->replicas, 2);
  EXPECT_FALSE(states.Find("r1")->borrowing);

  states.Apply(Record(core::EventType::kReclaim, "s1"));  // waits for its victims.
  EXPECT_EQ(states.Find("s1")->state, v1::JOB_STATE_QUEUED);
  states.Apply(Record(core::EventType::kEnd, "r1"));
  EXPECT_EQ(states.Find("r1")->state, v1::JOB_STATE_ENDED);
  states.Apply(Record(core::EventType::kReject, "x"));
  EXPECT_EQ(states.Find("x")->state, v1::JOB_STATE_REJECTED);
  EXPECT_EQ(states.Find("nobody"), nullptr);
}

}  // namespace
}  // namespace tidegate::sim
