// Elastic jobs through the core's public contract (broker.h): a tide lead
// shrinks a borrower, a restored core keeps the schedule and the pending
// shrink, and acks that are stale, out of range or at the deadline instant
// (docs/design.md §5, docs/policy.md §4, §6).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "broker/core/broker.h"
#include "broker/core/test_support.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tidegate::core {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using Spec = test_support::JobSpecBuilder;
using test_support::MakeBroker;
using test_support::TickCommand;

constexpr Time kSec = kMillisPerSecond;

// 2026-01-05 00:00 UTC, a Monday.
constexpr Time kMonday = 1767571200 * kSec;

constexpr char kTide[] = R"pb(
  clusters { name: "a" capacity { key: "gpu" value: 16 } }
  teams { name: "serving" quota { key: "gpu" value { guaranteed: 4 } }
          tide { days: WEEKDAY_MON from: "08:00" to: "20:00" timezone: "UTC"
                 quota { key: "gpu" value { guaranteed: 12 lend_limit: 0 } } } }
  teams { name: "training" quota { key: "gpu" value { guaranteed: 4 } } }
  policy { tide_lead_s: 600 default_grace_s: 60 }
)pb";

std::vector<std::string> Kinds(const std::vector<Event>& events) {
  std::vector<std::string> out;
  for (const Event& e : events) {
    out.push_back(absl::StrCat(EventTypeName(e.type), " ", e.job, " ", e.from, "->", e.to, " ", e.by, " ", e.reason));
  }
  return out;
}

internal::v1::Command Ack(const std::string& job, int64_t epoch, int64_t replicas) {
  internal::v1::Command c;
  c.mutable_ack_resize()->set_job(job);
  c.mutable_ack_resize()->set_epoch(epoch);
  c.mutable_ack_resize()->set_replicas(replicas);
  return c;
}

TEST(ElasticTest, TideLeadShrinksAndARestoredCoreKeepsTheScheduleAndThePendingShrink) {
  auto b = MakeBroker(kTide, kMonday);
  b->Apply(Spec("t1").Team("training").Gpus(2).Elastic(2, 6).Submit(), kMonday);
  ASSERT_EQ(b->GetJob("t1")->replicas, 6);
  b->Apply(Ack("t1", 1, 6), kMonday);
  // The next deadline is the tide lead at 07:50.
  EXPECT_EQ(b->NextDeadline(), kMonday + (8 * 3600 - 600) * kSec);
  const Time lead = kMonday + (8 * 3600 - 600) * kSec;
  const auto at_lead = b->Apply(TickCommand(), lead);
  EXPECT_THAT(Kinds(at_lead), ElementsAre("resize t1 6->2 tide:serving tide"));
  const JobView pending = *b->GetJob("t1");
  EXPECT_EQ(pending.resize_from, 6);  // a shrink holds its capacity until the ack.
  EXPECT_EQ(pending.resize_to, 2);
  EXPECT_EQ(pending.epoch, 2);

  // A restored copy behaves the same: same deadline, same answers.
  auto copy = Broker::Restore(b->Snapshot());
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_EQ((*copy)->NextDeadline(), b->NextDeadline());
  for (const internal::v1::Command& c : {Ack("t1", 1, 2), Ack("t1", 2, 2), Spec("t2").Team("training").Gpus(2).Submit()}) {
    EXPECT_EQ(Kinds(b->Apply(c, lead + kSec)), Kinds((*copy)->Apply(c, lead + kSec)));
  }
  // The stale ack was an error; the right one shrank t1; t2 would borrow
  // capacity the coming quota needs, so it waits for the guard.
  EXPECT_EQ(b->GetJob("t1")->replicas, 2);
  EXPECT_EQ(b->GetJob("t2")->state, v1::JOB_STATE_QUEUED);
  EXPECT_THAT(b->GetJob("t2")->reason, HasSubstr("tide"));
  // At 20:00 the guarantee falls: t2 is admitted first, then t1 grows
  // into the rest (2 + 12 of 16 GPUs).
  const auto evening = b->Apply(TickCommand(), kMonday + 20 * 3600 * kSec);
  EXPECT_THAT(Kinds(evening), ElementsAre("admit t2 0->0  ", "resize t1 2->6  grow"));
}

TEST(ElasticTest, StaleOrOutOfRangeAcksChangeNothing) {
  auto b = MakeBroker(kTide, kMonday);
  b->Apply(Spec("t1").Team("training").Gpus(2).Elastic(2, 6).Submit(), kMonday);
  for (const internal::v1::Command& bad : {Ack("t1", 7, 6), Ack("t1", 1, 1), Ack("t1", 1, 7), Ack("ghost", 1, 1)}) {
    const auto events = b->Apply(bad, kMonday);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, EventType::kError);
  }
  EXPECT_EQ(b->GetJob("t1")->resize_from, 2);  // still waiting for its ack
  // A partial grow: the framework could only form 4 replicas.
  EXPECT_THAT(Kinds(b->Apply(Ack("t1", 1, 4), kMonday)), ElementsAre("resize t1 6->4  ack"));
  EXPECT_EQ(b->GetJob("t1")->replicas, 4);
  // It is not asked to grow again at once, only after resize_timeout_s.
  EXPECT_THAT(Kinds(b->Apply(TickCommand(), kMonday + 59 * kSec)), IsEmpty());
  EXPECT_THAT(Kinds(b->Apply(TickCommand(), kMonday + 60 * kSec)), ElementsAre("resize t1 4->6  grow"));
}

TEST(ElasticTest, AnAckAtTheDeadlineInstantIsInTime) {
  // The grow asked at Monday 00:00 is due resize_timeout_s (60 s) later; an
  // ack that arrives at that very ms completes it, with no `deadline`
  // record withdrawing it first.
  auto b = MakeBroker(kTide, kMonday);
  b->Apply(Spec("t1").Team("training").Gpus(2).Elastic(2, 6).Submit(), kMonday);
  ASSERT_EQ(b->NextDeadline(), kMonday + 60 * kSec);
  EXPECT_THAT(Kinds(b->Apply(Ack("t1", 1, 6), kMonday + 60 * kSec)), IsEmpty());
  EXPECT_EQ(b->GetJob("t1")->replicas, 6);
  EXPECT_EQ(b->GetJob("t1")->resize_from, -1);
}

}  // namespace
}  // namespace tidegate::core
