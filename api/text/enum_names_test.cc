#include "api/text/enum_names.h"

#include "gtest/gtest.h"

namespace tidegate::text {
namespace {

TEST(EnumNamesTest, JobStatesAreLowerCaseWithoutThePrefix) {
  EXPECT_STREQ(JobStateName(v1::JOB_STATE_QUEUED), "queued");
  EXPECT_STREQ(JobStateName(v1::JOB_STATE_ADMITTED), "admitted");
  EXPECT_STREQ(JobStateName(v1::JOB_STATE_DRAINING), "draining");
  EXPECT_STREQ(JobStateName(v1::JOB_STATE_ENDED), "ended");
  EXPECT_STREQ(JobStateName(v1::JOB_STATE_REJECTED), "rejected");
  EXPECT_STREQ(JobStateName(v1::JOB_STATE_UNSPECIFIED), "unknown");
  EXPECT_STREQ(JobStateName(static_cast<v1::JobState>(42)), "unknown");
}

TEST(EnumNamesTest, DecisionsKeepTheirCaseWithoutThePrefix) {
  EXPECT_EQ(DecisionName(v1::DECISION_ADMITTED_BORROWING), "ADMITTED_BORROWING");
  EXPECT_EQ(DecisionName(v1::DECISION_ENDED), "ENDED");
  EXPECT_EQ(DecisionName(static_cast<v1::Decision>(42)), "DECISION 42");
}

}  // namespace
}  // namespace tidegate::text
