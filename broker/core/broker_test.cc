// The core's verbs through its public contract (broker.h): bad input,
// idempotent submission, admission, borrowing, reclaim with grace, quota
// changes (docs/policy.md §1-4).
#include "broker/core/broker.h"

#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "broker/core/test_support.h"
#include "broker/core/victims.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace tidegate::core {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

constexpr Time kSec = kMillisPerSecond;
constexpr Time kT0 = 1'000'000 * kSec;

using Spec = test_support::JobSpecBuilder;
using test_support::FinishCommand;
using test_support::TickCommand;

std::unique_ptr<Broker> Make(const std::string& text, Time now = kT0) { return test_support::MakeBroker(text, now); }

internal::v1::Command SetQuota(const std::string& text) {
  internal::v1::Command c;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, c.mutable_set_quota())) << text;
  return c;
}

// One line per event, the fields a reader checks: "admit a1 a borrowed=gpu:0".
std::string Line(const Event& e) {
  std::string s = absl::StrCat(EventTypeName(e.type), " ", e.job);
  if (!e.team.empty()) absl::StrAppend(&s, " ", e.team);
  switch (e.type) {
    case EventType::kAdmit: {
      std::vector<std::string> b;
      for (const auto& [r, q] : e.borrowed) b.push_back(absl::StrCat(r, ":", q));
      absl::StrAppend(&s, " borrowed=", absl::StrJoin(b, ","));
      break;
    }
    case EventType::kQueue:
      absl::StrAppend(&s, " (", e.reason, ")");
      break;
    case EventType::kPreempt:
      absl::StrAppend(&s, " by=", e.by, " (", e.reason, ")");
      break;
    case EventType::kReclaim:
      absl::StrAppend(&s, " ", v1::Decision_Name(e.decision), " [", absl::StrJoin(e.victims, ","), "]");
      break;
    case EventType::kReject:
    case EventType::kError:
      absl::StrAppend(&s, " (", e.reason, ")");
      break;
    default:
      break;
  }
  return s;
}
std::vector<std::string> Lines(const std::vector<Event>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.push_back(Line(e));
  return out;
}

TeamResourceView Resource(const Broker& b, const std::string& team, const std::string& r) {
  const std::optional<TeamView> view = b.GetTeam(team);
  EXPECT_TRUE(view.has_value()) << team;
  if (view) {
    for (const auto& rv : view->resources) {
      if (rv.resource == r) return rv;
    }
  }
  ADD_FAILURE() << team << " has no resource " << r;
  return {};
}
Quantity Used(const Broker& b, const std::string& team, const std::string& r = "gpu") {
  return Resource(b, team, r).used;
}
Quantity Borrowed(const Broker& b, const std::string& team, const std::string& r = "gpu") {
  return Resource(b, team, r).borrowed;
}

// capacity 8 gpu, 64 cpu in k1 (8 gpu in k2 for the two-cluster tests);
// a and b guaranteed 4 gpu each at the top level; org/c with c guaranteed 0.
const std::string kConfig = R"pb(
  clusters { name: "k1" capacity { key: "gpu" value: 8 } capacity { key: "cpu" value: 64 } }
  teams { name: "a" quota { key: "gpu" value { guaranteed: 4 } } }
  teams { name: "b" quota { key: "gpu" value { guaranteed: 4 } } }
  teams { name: "org" }
  teams { name: "c" parent: "org" })pb";

// ---------------------------------------------------------------- bad input

struct BadSubmit {
  std::string name;
  Spec job;
  std::string reason;  // a substring of the reject reason
};

class BadSubmitTest : public ::testing::TestWithParam<BadSubmit> {};

TEST_P(BadSubmitTest, IsRejectedWithAReasonAndChangesNothing) {
  auto b = Make(kConfig);
  b->Apply(Spec("keep").Team("a").Gpus(2).Submit(), kT0);
  ASSERT_EQ(Used(*b, "a"), 2);

  const auto events = b->Apply(GetParam().job.Submit(), kT0 + kSec);
  ASSERT_EQ(events.size(), 1u) << absl::StrJoin(Lines(events), "\n");
  EXPECT_EQ(events[0].type, EventType::kReject);
  EXPECT_THAT(events[0].reason, HasSubstr(GetParam().reason));
  // Known only as rejected: nothing was queued or holds capacity.
  if (auto bad = b->GetJob("bad")) {
    EXPECT_EQ(bad->state, v1::JOB_STATE_REJECTED);
  }
  EXPECT_EQ(b->JobCount(), 1u);
  EXPECT_EQ(Used(*b, "a"), 2);
  EXPECT_EQ(b->ClusterUsed("k1", "gpu"), 2);
}

INSTANTIATE_TEST_SUITE_P(
    BrokerTest, BadSubmitTest,
    ::testing::Values(
        BadSubmit{"UnknownTeam", Spec("bad").Team("nope").Gpus(1), "team: 'nope' is not a team"},
        BadSubmit{"UnknownCluster", Spec("bad").Team("a").Cluster("k9").Gpus(1), "cluster: 'k9' is not a cluster"},
        BadSubmit{"ZeroReplicas", Spec("bad").Team("a").Gpus(1).Replicas(0), "replicas: 0 must be > 0"},
        BadSubmit{"NegativeReplicas", Spec("bad").Team("a").Gpus(1).Replicas(-3), "replicas: -3 must be > 0"},
        BadSubmit{"NegativeQuantity", Spec("bad").Team("a").Gpus(-1), "per_replica.gpu: -1 must be >= 0"},
        BadSubmit{"UnknownResource", Spec("bad").Team("a").Per("tpu", 1), "unknown resource 'tpu'"},
        BadSubmit{"NoResources", Spec("bad").Team("a"), "per_replica"},
        BadSubmit{"OverflowingDemand", Spec("bad").Team("a").Gpus(4).Replicas(int64_t{1} << 62),
                  "per_replica.gpu: 4611686018427387904 replicas x 4 overflows int64"},
        BadSubmit{"InnerTeam", Spec("bad").Team("org").Gpus(1), "team: 'org' is not a leaf team"},
        BadSubmit{"ElasticMaxBelowMin", Spec("bad").Team("a").Gpus(1).Elastic(4, 2), "elastic.max: 2 must be >= elastic.min (4)"},
        BadSubmit{"ElasticZeroMin", Spec("bad").Team("a").Gpus(1).Elastic(0, 2), "elastic.min: 0 must be > 0"},
        BadSubmit{"NegativeGrace", Spec("bad").Team("a").Gpus(1).Grace(-1), "grace_s: -1 must be >= 0"}),
    [](const auto& info) { return info.param.name; });

TEST(BrokerTest, EmptyJobIdIsRejected) {
  auto b = Make(kConfig);
  const auto events = b->Apply(Spec("").Team("a").Gpus(1).Submit(), kT0);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, EventType::kReject);
  EXPECT_THAT(events[0].reason, HasSubstr("job"));
  EXPECT_EQ(b->JobCount(), 0u);
}

TEST(BrokerTest, ClusterIsRequiredWhenThereAreSeveral) {
  auto b = Make(kConfig + R"pb(clusters { name: "k2" capacity { key: "gpu" value: 8 } })pb");
  const auto events = b->Apply(Spec("j").Team("a").Gpus(1).Submit(), kT0);
  EXPECT_THAT(Lines(events), ElementsAre("reject j a (cluster: required when there are several clusters)"));
}

TEST(BrokerTest, FinishOfAnUnknownJobIsAnError) {
  auto b = Make(kConfig);
  EXPECT_THAT(Lines(b->Apply(FinishCommand("ghost"), kT0)), ElementsAre("error ghost (finish: unknown job 'ghost')"));
}

TEST(BrokerTest, EmptyCommandIsAnError) {
  auto b = Make(kConfig);
  const auto events = b->Apply(internal::v1::Command(), kT0);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, EventType::kError);
}

// ---------------------------------------------------------------- idempotency

TEST(BrokerTest, ResubmittingTheSameSpecIsANoOp) {
  auto b = Make(kConfig);
  EXPECT_THAT(Lines(b->Apply(Spec("a1").Team("a").Gpus(2).Submit(), kT0)),
              ElementsAre("admit a1 a borrowed=gpu:0"));
  EXPECT_THAT(b->Apply(Spec("a1").Team("a").Gpus(2).Submit(), kT0 + kSec), IsEmpty());
  EXPECT_EQ(Used(*b, "a"), 2);
  EXPECT_EQ(b->JobCount(), 1u);
}

TEST(BrokerTest, ResubmittingTheSameIdWithAnotherSpecIsAnError) {
  auto b = Make(kConfig);
  b->Apply(Spec("a1").Team("a").Gpus(2).Submit(), kT0);
  EXPECT_THAT(Lines(b->Apply(Spec("a1").Team("a").Gpus(3).Submit(), kT0 + kSec)),
              ElementsAre("error a1 (job 'a1' already exists with a different spec)"));
  EXPECT_EQ(b->GetJob("a1")->demand, (NamedQuantities{{"gpu", 2}}));  // unchanged
  EXPECT_EQ(Used(*b, "a"), 2);
}

// ---------------------------------------------------------------- admission

TEST(BrokerTest, AdmitsWithinGuaranteeWithNothingBorrowed) {
  auto b = Make(kConfig);
  // 2 replicas x 2 gpu = 4 = g(a).
  EXPECT_THAT(Lines(b->Apply(Spec("a1").Team("a").Gpus(2).Replicas(2).Submit(), kT0)),
              ElementsAre("admit a1 a borrowed=gpu:0"));
  const JobView j = *b->GetJob("a1");
  EXPECT_EQ(j.state, v1::JOB_STATE_ADMITTED);
  EXPECT_EQ(j.admitted_at, kT0);
  EXPECT_FALSE(j.borrowing);
  EXPECT_EQ(Used(*b, "a"), 4);
  EXPECT_EQ(Borrowed(*b, "a"), 0);
  EXPECT_EQ(b->ClusterUsed("k1", "gpu"), 4);
}

TEST(BrokerTest, BorrowingReportsOnlyTheJobsOwnPartAboveGuarantee) {
  auto b = Make(kConfig);
  b->Apply(Spec("a1").Team("a").Gpus(3).Submit(), kT0);
  // u(a) = 3, d = 3, g = 4: borrowed = min(3, 3 + 3 - 4) = 2.
  EXPECT_THAT(Lines(b->Apply(Spec("a2").Team("a").Gpus(3).Submit(), kT0 + kSec)),
              ElementsAre("admit a2 a borrowed=gpu:2"));
  EXPECT_TRUE(b->GetJob("a2")->borrowing);
  EXPECT_EQ(Used(*b, "a"), 6);
  EXPECT_EQ(Borrowed(*b, "a"), 2);
  // A leaf under an entry-less inner node has g = 0: all of it is borrowed.
  EXPECT_THAT(Lines(b->Apply(Spec("c1").Team("c").Gpus(1).Per("cpu", 8).Submit(), kT0 + 2 * kSec)),
              ElementsAre("admit c1 c borrowed=cpu:8,gpu:1"));
}

TEST(BrokerTest, AJobLargerThanCapacityQueuesAsExceedsMax) {
  auto b = Make(kConfig);
  EXPECT_THAT(Lines(b->Apply(Spec("big").Team("a").Gpus(9).Submit(), kT0)),
              ElementsAre("queue big a (exceeds_max: the job needs 9 gpu; cluster k1 has 8 in all; it waits for a "
                          "config change)"));
  EXPECT_EQ(b->GetJob("big")->state, v1::JOB_STATE_QUEUED);
  EXPECT_EQ(Resource(*b, "a", "gpu").queued, 9);
}

TEST(BrokerTest, ABorrowLimitBelowTheDemandQueuesAsExceedsMax) {
  auto b = Make(R"pb(
    clusters { name: "k1" capacity { key: "gpu" value: 8 } }
    teams { name: "a" quota { key: "gpu" value { guaranteed: 2 borrow_limit: 1 } } })pb");
  // potential(a) = min(2 + 1, 8) = 3 < 4.
  const std::string why =
      "exceeds_max: a would use 4 gpu > 3 (2 guaranteed + 1 borrow limit) even with nothing else running; it waits "
      "for a config change";
  EXPECT_THAT(Lines(b->Apply(Spec("a1").Team("a").Gpus(4).Submit(), kT0)), ElementsAre("queue a1 a (" + why + ")"));
  EXPECT_EQ(b->GetJob("a1")->reason, why);
}

TEST(BrokerTest, FinishingAJobFreesItsCapacityForTheQueue) {
  auto b = Make(kConfig);
  b->Apply(Spec("a1").Team("a").Gpus(8).Submit(), kT0);
  EXPECT_THAT(Lines(b->Apply(Spec("a2").Team("a").Gpus(1).Submit(), kT0 + kSec)),
              ElementsAre("queue a2 a (capacity k1 gpu: the job needs 1; k1 has 0 of 8 free; it waits for jobs there "
                          "to end)"));
  EXPECT_THAT(Lines(b->Apply(FinishCommand("a1"), kT0 + 2 * kSec)),
              ElementsAre("end a1 a", "admit a2 a borrowed=gpu:0"));
  EXPECT_EQ(b->GetJob("a1")->state, v1::JOB_STATE_ENDED);  // known for the retention window.
  EXPECT_EQ(Used(*b, "a"), 1);
}

// ---------------------------------------------------------------- reclaim

// b borrows a's idle guarantee; a comes back for 2 of it.
TEST(BrokerTest, ReclaimDrainsTheLeastLostWorkBorrowersForTheGracePeriod) {
  auto b = Make(kConfig);
  // b1..b8 at t0+0s..t0+7s, 1 gpu each: the first 4 within b's guarantee.
  for (int i = 1; i <= 8; ++i) {
    const auto events = b->Apply(Spec(absl::StrCat("b", i)).Team("b").Gpus(1).Submit(), kT0 + (i - 1) * kSec);
    EXPECT_THAT(Lines(events), ElementsAre(absl::StrCat("admit b", i, " b borrowed=gpu:", i <= 4 ? 0 : 1)));
  }
  EXPECT_EQ(Borrowed(*b, "b"), 4);

  // At t = t0 + 100 s a asks 2: b8 and b7 have lost the least work (93 s, 94 s).
  const Time t = kT0 + 100 * kSec;
  EXPECT_THAT(Lines(b->Apply(Spec("a1").Team("a").Gpus(2).Submit(), t)),
              ElementsAre("preempt b8 b by=a1 (reclaim)", "preempt b7 b by=a1 (reclaim)",
                          "reclaim a1 a DECISION_RECLAIMING [b8,b7]"));
  EXPECT_EQ(b->GetJob("b8")->state, v1::JOB_STATE_DRAINING);
  EXPECT_EQ(b->GetJob("a1")->state, v1::JOB_STATE_QUEUED);
  // Draining victims still hold their capacity for their 30 s grace.
  EXPECT_EQ(Used(*b, "b"), 8);
  EXPECT_EQ(b->ClusterUsed("k1", "gpu"), 8);
  ASSERT_TRUE(b->NextDeadline().has_value());
  EXPECT_EQ(*b->NextDeadline(), t + 30 * kSec);

  // Nothing happens before the deadline.
  EXPECT_THAT(b->Apply(TickCommand(), t + 29 * kSec), IsEmpty());
  EXPECT_EQ(b->GetJob("b7")->state, v1::JOB_STATE_DRAINING);

  // Both leave at t + 30 s (in either order), then a1 is admitted at once.
  const std::vector<std::string> at_deadline = Lines(b->Apply(TickCommand(), t + 30 * kSec));
  ASSERT_EQ(at_deadline.size(), 3u) << absl::StrJoin(at_deadline, "\n");
  EXPECT_THAT(std::vector<std::string>(at_deadline.begin(), at_deadline.begin() + 2),
              UnorderedElementsAre("queue b8 b (requeued)", "queue b7 b (requeued)"));
  EXPECT_EQ(at_deadline[2], "admit a1 a borrowed=gpu:0");
  EXPECT_EQ(b->GetJob("a1")->admitted_at, t + 30 * kSec);
  EXPECT_EQ(b->GetJob("b8")->state, v1::JOB_STATE_QUEUED);
  EXPECT_EQ(Used(*b, "a"), 2);
  EXPECT_EQ(Used(*b, "b"), 6);
  EXPECT_EQ(b->ClusterUsed("k1", "gpu"), 8);
}

TEST(BrokerTest, AVictimThatFinishesEarlyLetsTheOwnerInAtOnce) {
  auto b = Make(kConfig);
  for (int i = 1; i <= 8; ++i) b->Apply(Spec(absl::StrCat("b", i)).Team("b").Gpus(1).Submit(), kT0 + i * kSec);
  const Time t = kT0 + 100 * kSec;
  b->Apply(Spec("a1").Team("a").Gpus(1).Submit(), t);
  EXPECT_EQ(b->GetJob("b8")->state, v1::JOB_STATE_DRAINING);
  EXPECT_THAT(Lines(b->Apply(FinishCommand("b8"), t + 3 * kSec)), ElementsAre("end b8 b", "admit a1 a borrowed=gpu:0"));
  // b8's grace timer may still be reported (NextDeadline may be stale); a
  // tick then does nothing.
  if (b->NextDeadline()) {
    EXPECT_THAT(b->Apply(TickCommand(), *b->NextDeadline()), IsEmpty());
  }
  EXPECT_FALSE(b->NextDeadline().has_value());
}

TEST(BrokerTest, ReclaimNeverLeavesTheBorrowerRunning) {
  auto b = Make(R"pb(
    clusters { name: "k1" capacity { key: "gpu" value: 8 } }
    teams { name: "a" quota { key: "gpu" value { guaranteed: 4 } }
            preemption { reclaim: RECLAIM_NEVER } }
    teams { name: "b" quota { key: "gpu" value { guaranteed: 4 } } })pb");
  b->Apply(Spec("b1").Team("b").Gpus(8).Submit(), kT0);
  const auto events = b->Apply(Spec("a1").Team("a").Gpus(2).Submit(), kT0 + kSec);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, EventType::kQueue);
  EXPECT_EQ(b->GetJob("b1")->state, v1::JOB_STATE_ADMITTED);
}

// Found by property_test (seeds 619, 741, 817 of 3,000): a victim that leaves
// at once (grace 0) and is not requeued frees more than its reclaimer takes,
// but jobs already passed over in the cycle (or whose team was skipped as
// stuck when the pass began) are not offered it; they wait for the next
// unrelated event, and NextDeadline() is empty. Enable with the fix (the
// cycle must rerun whenever a victim leaves, not only when it is requeued).
TEST(BrokerTest, CapacityAVictimFreesBeyondTheReclaimersNeedGoesToTheQueueAtOnce) {
  auto b = Make(R"pb(
    clusters { name: "k1" capacity { key: "gpu" value: 4 } }
    teams { name: "own" quota { key: "gpu" value { guaranteed: 2 } } }
    teams { name: "bor" quota { key: "gpu" value { guaranteed: 0 } } }
    teams { name: "w" quota { key: "gpu" value { guaranteed: 2 } } preemption { reclaim: RECLAIM_NEVER } })pb");
  internal::v1::Command borrower = Spec("b1").Team("bor").Gpus(3).Grace(0).Submit();
  borrower.mutable_submit()->set_requeue(false);
  EXPECT_THAT(Lines(b->Apply(borrower, kT0)), ElementsAre("admit b1 bor borrowed=gpu:3"));
  EXPECT_THAT(Lines(b->Apply(Spec("w1").Team("w").Gpus(2).Submit(), kT0 + kSec)),
              ElementsAre(::testing::StartsWith("queue w1 w (capacity k1 gpu: the job needs 2; k1 has 1 of 4 free")));
  // o1 reclaims b1 (3 GPUs) but needs 2: 2 are free after it, and w1 fits.
  EXPECT_THAT(Lines(b->Apply(Spec("o1").Team("own").Gpus(2).Priority(1).Submit(), kT0 + 2 * kSec)),
              ElementsAre("preempt b1 bor by=o1 (reclaim)", "reclaim o1 own DECISION_RECLAIMING [b1]", "end b1 bor",
                          "admit o1 own borrowed=gpu:0", "admit w1 w borrowed=gpu:0"));
}

// A team with same-team preemption whose queue cannot move (its head may not
// preempt anyone of its own) is skipped by the admission cycle; a new head of
// higher priority must still take its victim from the team's running jobs.
TEST(BrokerTest, AHigherPriorityHeadPreemptsWithinItsTeamBesideAStuckQueue) {
  auto b = Make(R"pb(
    clusters { name: "k1" capacity { key: "gpu" value: 2 } }
    teams { name: "w" quota { key: "gpu" value { guaranteed: 2 } }
            preemption { within_team: WITHIN_TEAM_LOWER_PRIORITY reclaim: RECLAIM_NEVER } })pb");
  internal::v1::Command low = Spec("l1").Team("w").Gpus(2).Grace(0).Submit();
  low.mutable_submit()->set_requeue(false);
  EXPECT_THAT(Lines(b->Apply(low, kT0)), ElementsAre("admit l1 w borrowed=gpu:0"));
  // Same priority as l1: it may not preempt it, and waits.
  EXPECT_THAT(Lines(b->Apply(Spec("q1").Team("w").Gpus(2).Submit(), kT0 + kSec)),
              ElementsAre(::testing::StartsWith("queue q1 w")));
  EXPECT_THAT(Lines(b->Apply(TickCommand(), kT0 + 2 * kSec)), IsEmpty());
  const auto events = b->Apply(Spec("h1").Team("w").Gpus(2).Priority(5).Submit(), kT0 + 3 * kSec);
  EXPECT_THAT(Lines(events), ::testing::Contains(::testing::StartsWith("preempt l1 w by=h1")));
  EXPECT_THAT(Lines(events), ::testing::Contains("admit h1 w borrowed=gpu:0"));
  EXPECT_EQ(b->GetJob("q1")->state, v1::JOB_STATE_QUEUED);
}

// ---------------------------------------------------------------- set_quota

TEST(BrokerTest, RaisingAGuaranteeAdmitsAJobThatExceededTheOldMax) {
  auto b = Make(R"pb(
    clusters { name: "k1" capacity { key: "gpu" value: 8 } }
    teams { name: "a" quota { key: "gpu" value { guaranteed: 2 borrow_limit: 0 } } })pb");
  EXPECT_THAT(Lines(b->Apply(Spec("a1").Team("a").Gpus(3).Submit(), kT0)),
              ElementsAre("queue a1 a (exceeds_max: a would use 3 gpu > 2 (2 guaranteed + 0 borrow limit) even with "
                          "nothing else running; it waits for a config change)"));
  EXPECT_THAT(Lines(b->Apply(SetQuota(R"pb(team: "a" quota { key: "gpu" value { guaranteed: 3 borrow_limit: 0 } })pb"),
                             kT0 + kSec)),
              ElementsAre("admit a1 a borrowed=gpu:0"));
  EXPECT_EQ(Resource(*b, "a", "gpu").guaranteed, 3);
  EXPECT_EQ(Used(*b, "a"), 3);
}

// A waiting job's reason (JobView.reason) must follow a config change: here
// exceeds_max stays although the limit was lifted, because the team is
// skipped as stuck and the job is never retried. Minor (display only: the
// job is admitted as soon as capacity frees). Enable with the fix.
TEST(BrokerTest, AQueuedJobsReasonFollowsAQuotaChange) {
  auto b = Make(R"pb(
    clusters { name: "k1" capacity { key: "gpu" value: 8 } }
    teams { name: "a" quota { key: "gpu" value { guaranteed: 2 borrow_limit: 1 } } preemption { reclaim: RECLAIM_NEVER } }
    teams { name: "b" quota { key: "gpu" value { guaranteed: 6 } } })pb");
  b->Apply(Spec("b1").Team("b").Gpus(8).Submit(), kT0);
  EXPECT_THAT(Lines(b->Apply(Spec("a1").Team("a").Gpus(4).Submit(), kT0 + kSec)),
              ElementsAre(::testing::StartsWith("queue a1 a (exceeds_max: a would use 4 gpu > 3")));
  b->Apply(SetQuota(R"pb(team: "a" quota { key: "gpu" value { guaranteed: 2 } })pb"), kT0 + 2 * kSec);
  EXPECT_THAT(b->GetJob("a1")->reason, ::testing::Not(::testing::StartsWith("exceeds_max")));  // potential(a) is now 8
  EXPECT_THAT(Lines(b->Apply(FinishCommand("b1"), kT0 + 3 * kSec)), ElementsAre("end b1 b", "admit a1 a borrowed=gpu:2"));
}

TEST(BrokerTest, LoweringAGuaranteeTurnsUseIntoBorrowingWithoutEvictions) {
  auto b = Make(kConfig);
  b->Apply(Spec("a1").Team("a").Gpus(3).Submit(), kT0);
  EXPECT_EQ(Borrowed(*b, "a"), 0);
  EXPECT_THAT(b->Apply(SetQuota(R"pb(team: "a" quota { key: "gpu" value { guaranteed: 1 } })pb"), kT0 + kSec),
              IsEmpty());
  EXPECT_EQ(Resource(*b, "a", "gpu").guaranteed, 1);
  EXPECT_EQ(Used(*b, "a"), 3);
  EXPECT_EQ(Borrowed(*b, "a"), 2);
  EXPECT_EQ(b->GetJob("a1")->state, v1::JOB_STATE_ADMITTED);
}

TEST(BrokerTest, SetQuotaThatBreaksTheTreeIsAnErrorAndChangesNothing) {
  auto b = Make(R"pb(
    clusters { name: "k1" capacity { key: "gpu" value: 8 } }
    teams { name: "org" quota { key: "gpu" value { guaranteed: 4 } } }
    teams { name: "x" parent: "org" quota { key: "gpu" value { guaranteed: 2 } } })pb");
  const auto events = b->Apply(SetQuota(R"pb(team: "x" quota { key: "gpu" value { guaranteed: 5 } })pb"), kT0);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, EventType::kError);
  EXPECT_THAT(events[0].reason, HasSubstr("team 'org'"));
  EXPECT_EQ(Resource(*b, "x", "gpu").guaranteed, 2);
}

TEST(BrokerTest, SetQuotaOfAnUnknownTeamIsAnError) {
  auto b = Make(kConfig);
  EXPECT_THAT(Lines(b->Apply(SetQuota(R"pb(team: "zz" quota { key: "gpu" value { guaranteed: 1 } })pb"), kT0)),
              ElementsAre("error  (set_quota.team: 'zz' is not a team)"));
}

// ---------------------------------------------------------------- reads

TEST(BrokerTest, InnerTeamsReportTheirSubtreeUsage) {
  auto b = Make(kConfig);
  b->Apply(Spec("c1").Team("c").Gpus(2).Submit(), kT0);
  const TeamView org = *b->GetTeam("org");
  EXPECT_FALSE(org.leaf);
  EXPECT_EQ(org.resources[1].used, 2);
  EXPECT_EQ(org.resources[1].guaranteed, 0);
  EXPECT_EQ(org.resources[1].borrowed, 2);
  EXPECT_EQ(b->GetTeam("c")->parent, "org");
  EXPECT_EQ(b->TeamNames(), (std::vector<std::string>{"a", "b", "org", "c"}));
  EXPECT_EQ(b->TotalCapacity("gpu"), 8);
}

// The victim searches compare candidates by a packed key; it must order
// every pair as CandidateKey does, ties and ids sharing their first 8 bytes
// included (the fair-sharing search's order, and so its victims, hang on it).
TEST(CandidateKeyTest, PackedKeyOrdersAsTheKey) {
  const std::vector<std::string> ids = {"", "a", "a\x01", "ab", "b1", "b10", "b1.0", "b12345678", "b12345679",
                                        "b1234567", "b123456780", std::string("a\0b", 3), "\xff", "z"};
  std::vector<CandidateKey> keys;
  uint64_t rng = 7;
  auto draw = [&](int n) {
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int>((rng >> 33) % n);
  };
  for (int i = 0; i < 400; ++i) {
    CandidateKey k{};
    k.not_draining = draw(2);
    k.list = static_cast<CandidateList>(draw(3));
    k.outside_cluster = draw(2);
    k.own_team = draw(2);
    const int32_t priorities[] = {std::numeric_limits<int32_t>::min(), -1, 0, 1, std::numeric_limits<int32_t>::max()};
    k.priority = priorities[draw(5)];
    k.not_shrinkable = draw(2);
    k.lost_work = draw(2) ? u128{0} : (u128{1} << 70) + draw(2);
    k.neg_admitted_at = draw(3) - 1;
    k.id = &ids[draw(static_cast<int>(ids.size()))];
    k.whole_part = draw(2);
    keys.push_back(k);
  }
  for (const CandidateKey& a : keys) {
    for (const CandidateKey& b : keys) {
      ASSERT_EQ(PackedCandidateKey::Of(a) < PackedCandidateKey::Of(b), a < b) << *a.id << " vs " << *b.id;
    }
  }
}

}  // namespace
}  // namespace tidegate::core
