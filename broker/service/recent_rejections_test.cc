// The bounds of the in-memory record of refused admits (recent_rejections.h).
#include "broker/service/recent_rejections.h"

#include "gtest/gtest.h"

namespace tidegate::service {
namespace {

constexpr int64_t kHour = 3600 * 1000;

v1::JobSpec Spec(const std::string& id, const std::string& team) {
  v1::JobSpec spec;
  spec.set_job(id);
  spec.set_team(team);
  spec.set_replicas(2);
  (*spec.mutable_per_replica())["gpu"] = 4;
  (*spec.mutable_labels())["big"] = std::string(1000, 'x');
  return spec;
}

std::vector<std::string> Ids(const std::vector<v1::JobInfo>& jobs) {
  std::vector<std::string> ids;
  for (const auto& j : jobs) ids.push_back(j.job());
  return ids;
}

TEST(RecentRejectionsTest, KeepsTheFinalStateTimesAndReasonForTheWindow) {
  RecentRejections r;
  r.Record(Spec("j1", "ml"), true, "per_replica.gpu: ...", 1000, 24 * kHour);
  auto j = r.Find("j1", 2000);
  ASSERT_TRUE(j.has_value());
  EXPECT_EQ(j->state(), v1::JOB_STATE_REJECTED);
  EXPECT_EQ(j->team(), "ml");
  EXPECT_EQ(j->created_at_ms(), 1000);
  EXPECT_EQ(j->ended_at_ms(), 1000);
  EXPECT_EQ(j->reason(), "per_replica.gpu: ...");
  EXPECT_EQ(j->replicas(), 2);
  EXPECT_EQ(j->demand().at("gpu"), 8);  // 2 replicas of 4
  EXPECT_TRUE(j->spec().labels().empty());  // kept small
  EXPECT_FALSE(r.Find("j1", 1000 + 24 * kHour).has_value());  // the window is over
  // Nothing is kept with retention 0, nor for an id no job can have.
  r.Record(Spec("j2", "ml"), true, "x", 1000, 0);
  r.Record(Spec("a b", "ml"), true, "x", 1000, kHour);
  EXPECT_FALSE(r.Find("j2", 1000).has_value());
  EXPECT_EQ(r.size(), 1u);
}

TEST(RecentRejectionsTest, OneTeamsFloodDropsOnlyItsOwnOldestRecords) {
  RecentRejections r(/*per_team=*/3, /*total=*/5);
  r.Record(Spec("web-1", "web"), true, "x", 1, kHour);
  r.Record(Spec("ml-1", "ml"), true, "x", 2, kHour);
  for (int i = 0; i < 10; ++i) r.Record(Spec("flood-" + std::to_string(i), "ml"), true, "x", 3 + i, kHour);
  EXPECT_TRUE(r.Find("web-1", 20).has_value());
  EXPECT_FALSE(r.Find("ml-1", 20).has_value());
  EXPECT_EQ(Ids(r.After("ml", "", 10, 20)), (std::vector<std::string>{"flood-7", "flood-8", "flood-9"}));
  // Made-up team names share one bucket: they cannot push out web's record either.
  for (int i = 0; i < 10; ++i) r.Record(Spec("x-" + std::to_string(i), "team" + std::to_string(i)), false, "x", 20, kHour);
  EXPECT_TRUE(r.Find("web-1", 21).has_value());
  EXPECT_LE(r.size(), 5u);
}

TEST(RecentRejectionsTest, PastTheTotalTheLargestBucketGivesWay) {
  RecentRejections r(/*per_team=*/10, /*total=*/4);
  r.Record(Spec("a-1", "a"), true, "x", 1, kHour);
  r.Record(Spec("b-1", "b"), true, "x", 2, kHour);
  r.Record(Spec("b-2", "b"), true, "x", 3, kHour);
  r.Record(Spec("b-3", "b"), true, "x", 4, kHour);
  r.Record(Spec("c-1", "c"), true, "x", 5, kHour);  // b, the largest, loses b-1
  EXPECT_EQ(Ids(r.After("", "", 10, 6)), (std::vector<std::string>{"a-1", "b-2", "b-3", "c-1"}));
}

TEST(RecentRejectionsTest, AnAcceptedResubmissionOrANewRejectionReplacesTheRecord) {
  RecentRejections r;
  r.Record(Spec("j", "ml"), true, "first", 1, kHour);
  r.Record(Spec("j", "ml"), true, "second", 2, kHour);
  EXPECT_EQ(r.size(), 1u);
  EXPECT_EQ(r.Find("j", 3)->reason(), "second");
  r.Forget("j");
  EXPECT_FALSE(r.Find("j", 3).has_value());
  EXPECT_EQ(r.size(), 0u);
}

TEST(RecentRejectionsTest, PagesFollowIdsAndTeams) {
  RecentRejections r;
  for (const char* id : {"c", "a", "b", "d"}) r.Record(Spec(id, std::string(id) < "c" ? "ml" : "web"), true, "x", 1, kHour);
  EXPECT_EQ(Ids(r.After("", "a", 2, 2)), (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(Ids(r.After("web", "", 10, 2)), (std::vector<std::string>{"c", "d"}));
}

}  // namespace
}  // namespace tidegate::service
