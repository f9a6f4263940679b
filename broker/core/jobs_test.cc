// A job's life from the caller's side (docs/design.md §3): ended and rejected
// jobs stay known for the retention window, retried requests never start
// finished work again, and every input is bounded and validated before it can
// reach a sum.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "broker/core/broker.h"
#include "broker/core/reasons_now.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace tidegate::core {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr Time kSec = kMillisPerSecond;
constexpr Time kT0 = 1'000'000 * kSec;

// capacity 8 gpu; a and b guaranteed 4 gpu each.
const char* const kConfig = R"pb(
  clusters { name: "k1" capacity { key: "gpu" value: 8 } capacity { key: "cpu" value: 64 } }
  teams { name: "a" quota { key: "gpu" value { guaranteed: 4 } } }
  teams { name: "b" quota { key: "gpu" value { guaranteed: 4 } } })pb";

std::unique_ptr<Broker> Make(const std::string& extra = "") {
  v1::Config c;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(std::string(kConfig) + extra, &c));
  auto b = Broker::Create(c, kT0);
  EXPECT_TRUE(b.ok()) << b.status();
  return b.ok() ? *std::move(b) : nullptr;
}

internal::v1::Command Submit(const std::string& text) {
  internal::v1::Command c;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, c.mutable_submit())) << text;
  return c;
}
internal::v1::Command Job(const std::string& id, int64_t gpus, const std::string& team = "a") {
  return Submit(absl::StrCat("job: '", id, "' team: '", team, "' per_replica { key: 'gpu' value: ", gpus, " }"));
}
internal::v1::Command Finish(const std::string& id) {
  internal::v1::Command c;
  c.set_finish(id);
  return c;
}
internal::v1::Command Checkpoint(const std::string& id) {
  internal::v1::Command c;
  c.set_checkpoint(id);
  return c;
}
internal::v1::Command Tick() {
  internal::v1::Command c;
  c.mutable_tick();
  return c;
}

std::vector<std::string> Lines(const std::vector<Event>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) {
    std::string s = absl::StrCat(EventTypeName(e.type), " ", e.job);
    if (!e.reason.empty()) absl::StrAppend(&s, " (", e.reason, ")");
    out.push_back(s);
  }
  return out;
}

Quantity UsedGpus(const Broker& b, const std::string& team) {
  const std::optional<TeamView> view = b.GetTeam(team);  // outlives the loop
  for (const auto& r : view->resources) {
    if (r.resource == "gpu") return r.used;
  }
  return -1;
}

Quantity QueuedGpus(const Broker& b, const std::string& team) {
  const std::optional<TeamView> view = b.GetTeam(team);  // outlives the loop
  for (const auto& r : view->resources) {
    if (r.resource == "gpu") return r.queued;
  }
  return -1;
}

// ---------------------------------------------------------------- ended jobs

TEST(EndedJobsTest, AFinishedJobStaysKnownWithItsFinalStateAndTimes) {
  auto b = Make();
  b->Apply(Job("t1", 2), kT0);
  b->Apply(Finish("t1"), kT0 + 60 * kSec);
  const std::optional<JobView> v = b->GetJob("t1");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->state, v1::JOB_STATE_ENDED);
  EXPECT_EQ(v->created_at, kT0);
  EXPECT_EQ(v->last_admitted_at, kT0);
  EXPECT_EQ(v->ended_at, kT0 + 60 * kSec);
  EXPECT_EQ(v->reason, "finished");
  EXPECT_EQ(v->demand, (NamedQuantities{{"gpu", 2}}));
  EXPECT_EQ(b->JobCount(), 0u);  // it holds nothing and is no live job.
  EXPECT_EQ(UsedGpus(*b, "a"), 0);
  ASSERT_EQ(b->ListEndedJobs().size(), 1u);
  EXPECT_TRUE(b->ListJobs().empty());
}

TEST(EndedJobsTest, FinishOrCheckpointOfAnEndedJobChangesNothingAndIsNoError) {
  auto b = Make();
  b->Apply(Job("t1", 2), kT0);
  b->Apply(Finish("t1"), kT0 + kSec);
  const internal::v1::CoreSnapshot before = b->Snapshot();
  EXPECT_THAT(b->Apply(Finish("t1"), kT0 + 2 * kSec), IsEmpty());
  EXPECT_THAT(b->Apply(Checkpoint("t1"), kT0 + 3 * kSec), IsEmpty());
  EXPECT_EQ(b->GetJob("t1")->ended_at, kT0 + kSec);
  internal::v1::CoreSnapshot after = b->Snapshot();
  after.set_now_ms(before.now_ms());
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(after, before));
}

TEST(EndedJobsTest, ARetriedSubmitOfAnEndedJobNeverStartsItAgain) {
  auto b = Make();
  b->Apply(Job("t1", 2), kT0);
  b->Apply(Finish("t1"), kT0 + kSec);
  EXPECT_THAT(b->Apply(Job("t1", 2), kT0 + 2 * kSec), IsEmpty());  // same spec: its final state.
  EXPECT_EQ(b->GetJob("t1")->state, v1::JOB_STATE_ENDED);
  EXPECT_EQ(UsedGpus(*b, "a"), 0);
  const auto other = b->Apply(Job("t1", 3), kT0 + 3 * kSec);
  ASSERT_EQ(other.size(), 1u);
  EXPECT_EQ(other[0].type, EventType::kError);
  EXPECT_THAT(other[0].reason, HasSubstr("already exists"));
  EXPECT_EQ(b->GetJob("t1")->state, v1::JOB_STATE_ENDED);
  EXPECT_EQ(UsedGpus(*b, "a"), 0);
}

TEST(EndedJobsTest, AnEndedJobIsForgottenAfterTheRetentionWindowAndItsIdIsFreeAgain) {
  auto b = Make("policy { ended_job_retention_s: 100 }");
  b->Apply(Job("t1", 2), kT0);
  b->Apply(Finish("t1"), kT0 + kSec);
  b->Apply(Tick(), kT0 + 100 * kSec);
  EXPECT_TRUE(b->GetJob("t1").has_value());
  b->Apply(Tick(), kT0 + 101 * kSec);
  EXPECT_FALSE(b->GetJob("t1").has_value());
  EXPECT_THAT(b->QuietlyChangedIds(), ElementsAre("t1"));
  EXPECT_THAT(Lines(b->Apply(Job("t1", 2), kT0 + 102 * kSec)), ElementsAre("admit t1"));
}

TEST(EndedJobsTest, RetentionZeroKeepsNothing) {
  auto b = Make("policy { ended_job_retention_s: 0 }");
  b->Apply(Job("t1", 2), kT0);
  b->Apply(Finish("t1"), kT0 + kSec);
  EXPECT_FALSE(b->GetJob("t1").has_value());
}

TEST(EndedJobsTest, ARejectedSpecIsKnownButItsIdMayBeUsedByACorrectedSpec) {
  auto b = Make();
  EXPECT_THAT(Lines(b->Apply(Job("t1", 2, "nope"), kT0)), ElementsAre("reject t1 (team: 'nope' is not a team)"));
  const std::optional<JobView> v = b->GetJob("t1");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->state, v1::JOB_STATE_REJECTED);
  EXPECT_EQ(v->reason, "team: 'nope' is not a team");
  EXPECT_THAT(b->Apply(Finish("t1"), kT0 + kSec), IsEmpty());
  EXPECT_THAT(Lines(b->Apply(Job("t1", 2), kT0 + 2 * kSec)), ElementsAre("admit t1"));
  EXPECT_EQ(b->GetJob("t1")->state, v1::JOB_STATE_ADMITTED);
}

TEST(EndedJobsTest, ARejectionNeverHidesAnEndedJob) {
  auto b = Make();
  b->Apply(Job("t1", 2), kT0);
  b->Apply(Finish("t1"), kT0 + kSec);
  b->Apply(Job("t1", 2, "nope"), kT0 + 2 * kSec);
  EXPECT_EQ(b->GetJob("t1")->state, v1::JOB_STATE_ENDED);
}

TEST(EndedJobsTest, AVictimThatIsNotRequeuedEndsWithTheReason) {
  auto b = Make();
  b->Apply(Submit("job: 'bor' team: 'b' replicas: 2 per_replica { key: 'gpu' value: 4 } grace_s: 0 requeue: false"),
           kT0);
  ASSERT_EQ(UsedGpus(*b, "b"), 8);
  b->Apply(Job("own", 4), kT0 + kSec);
  const std::optional<JobView> v = b->GetJob("bor");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->state, v1::JOB_STATE_ENDED);
  EXPECT_EQ(v->reason, "evicted for own and not requeued (requeue: false)");
}

TEST(EndedJobsTest, ARestoredCoreKnowsTheEndedJobs) {
  auto b = Make();
  b->Apply(Job("t1", 2), kT0);
  b->Apply(Finish("t1"), kT0 + kSec);
  b->Apply(Job("bad", 2, "nope"), kT0 + 2 * kSec);
  auto restored = Broker::Restore(b->Snapshot());
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals((*restored)->Snapshot(), b->Snapshot()));
  EXPECT_EQ((*restored)->GetJob("t1")->state, v1::JOB_STATE_ENDED);
  EXPECT_EQ((*restored)->GetJob("bad")->state, v1::JOB_STATE_REJECTED);
  EXPECT_EQ((*restored)->Apply(Job("t1", 3), kT0 + 3 * kSec).at(0).type, EventType::kError);
}

TEST(EndedJobsTest, TheSnapshotKeepsEndedJobsInIdOrderWhateverTheOrderTheyEnded) {
  auto b = Make();
  int t = 0;
  for (const char* id : {"z", "a", "m"}) {
    b->Apply(Job(id, 1), kT0 + ++t * kSec);
    b->Apply(Finish(id), kT0 + ++t * kSec);
  }
  b->Apply(Job("bad", 2, "nope"), kT0 + ++t * kSec);
  const auto snap = b->Snapshot();
  std::vector<std::string> ids;
  for (const auto& e : snap.ended_jobs()) ids.push_back(e.spec().job());
  EXPECT_THAT(ids, ElementsAre("a", "bad", "m", "z"));
  auto restored = Broker::Restore(snap);
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals((*restored)->Snapshot(), snap));
}

TEST(EndedJobsTest, ARequeuedJobKeepsItsLastAdmissionTime) {
  auto b = Make();
  b->Apply(Submit("job: 'bor' team: 'b' replicas: 2 per_replica { key: 'gpu' value: 4 } grace_s: 0"), kT0);
  b->Apply(Job("own", 4), kT0 + kSec);
  const std::optional<JobView> v = b->GetJob("bor");
  ASSERT_EQ(v->state, v1::JOB_STATE_QUEUED);
  EXPECT_EQ(v->admitted_at, -1);
  EXPECT_EQ(v->last_admitted_at, kT0);
}

// ---------------------------------------------------------------- why it waits

// a may not take capacity back, so when nothing of a fits the cycle tries
// none of its jobs (a "stuck" team): their reasons are stated when read.
const char* const kStuckConfig = R"pb(
  clusters { name: "k1" capacity { key: "gpu" value: 8 } }
  teams { name: "a" quota { key: "gpu" value { guaranteed: 4 } } preemption { reclaim: RECLAIM_NEVER } %s }
  teams { name: "b" quota { key: "gpu" value { guaranteed: 4 } } })pb";

std::unique_ptr<Broker> MakeStuck(const std::string& a_extra) {
  v1::Config c;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(absl::StrFormat(kStuckConfig, a_extra), &c));
  auto b = Broker::Create(c, kT0);
  EXPECT_TRUE(b.ok()) << b.status();
  return b.ok() ? *std::move(b) : nullptr;
}

// The reason a reader computes from a picture of the core (what the broker
// service publishes) given the reason it had read before.
std::string PictureReason(const Broker& b, const std::string& id, const std::string& read_before) {
  const JobView v = *b.GetJob(id);
  return b.TakeWaitPicture(nullptr)->Reason(id, v.team, v.cluster, v.demand, read_before);
}

TEST(WhyItWaitsTest, EveryJobOfAStuckTeamStatesTheNumbersOfNow) {
  auto b = MakeStuck("");
  b->Apply(Job("b1", 6, "b"), kT0);
  b->Apply(Job("a1", 3), kT0);
  b->Apply(Job("a2", 4), kT0);
  const std::string before = b->GetJob("a2")->reason;
  EXPECT_EQ(before, "capacity k1 gpu: the job needs 4; k1 has 2 of 8 free; it waits for jobs there to end");
  // b takes one more GPU: a is not tried (nothing of it fits), yet both of
  // its jobs say what is free now, not only the head.
  EXPECT_THAT(Lines(b->Apply(Job("b2", 1, "b"), kT0 + kSec)), ElementsAre("admit b2"));
  EXPECT_EQ(b->GetJob("a1")->reason,
            "capacity k1 gpu: the job needs 3; k1 has 1 of 8 free; it waits for jobs there to end");
  EXPECT_EQ(b->GetJob("a2")->reason,
            "capacity k1 gpu: the job needs 4; k1 has 1 of 8 free; it waits for jobs there to end");
  EXPECT_EQ(PictureReason(*b, "a2", before), b->GetJob("a2")->reason);
  EXPECT_EQ(PictureReason(*b, "a1", before), b->GetJob("a1")->reason);
}

TEST(WhyItWaitsTest, JobsBehindAStuckStrictHeadNameTheHeadOfNow) {
  auto b = MakeStuck("queueing: QUEUEING_STRICT_FIFO");
  b->Apply(Job("b1", 6, "b"), kT0);
  b->Apply(Job("a1", 3), kT0);
  b->Apply(Job("a2", 4), kT0);
  b->Apply(Job("a3", 3), kT0);
  const std::string before = b->GetJob("a3")->reason;
  EXPECT_THAT(before, HasSubstr("behind strict-FIFO head a1 of a"));
  // The head leaves the queue; the team is still stuck (nothing of it fits
  // in the 2 GPUs free), so no cycle marks a3 behind the new head.
  b->Apply(Finish("a1"), kT0 + kSec);
  EXPECT_EQ(b->GetJob("a3")->reason,
            "strict_fifo: behind strict-FIFO head a2 of a, which cannot be admitted yet (see its reason)");
  EXPECT_EQ(PictureReason(*b, "a3", before), b->GetJob("a3")->reason);
  EXPECT_THAT(b->GetJob("a2")->reason, HasSubstr("k1 has 2 of 8 free"));
}

TEST(WhyItWaitsTest, APictureLeavesTheReasonsOfTriedJobsAlone) {
  auto b = Make();
  b->Apply(Job("a1", 8), kT0);  // a borrows all of b's guarantee
  b->Apply(Job("b1", 2, "b"), kT0 + kSec);  // b reclaims: it waits for its victim
  const std::string reason = b->GetJob("b1")->reason;
  EXPECT_THAT(reason, ::testing::StartsWith("reclaiming"));
  EXPECT_EQ(PictureReason(*b, "b1", reason), reason);
}

// Every reason names its numbers and what would unblock the job
// (docs/jobs.md, "Why a job waits"); one case per code the cycle gives.
std::unique_ptr<Broker> MakeFrom(const std::string& text) {
  v1::Config c;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &c)) << text;
  auto b = Broker::Create(c, kT0);
  EXPECT_TRUE(b.ok()) << b.status();
  return b.ok() ? *std::move(b) : nullptr;
}

TEST(WhyItWaitsTest, BorrowLimitNamesTheTeamItsUseAndItsLimit) {
  auto b = MakeFrom(R"pb(
    clusters { name: "k1" capacity { key: "gpu" value: 8 } }
    teams { name: "a" quota { key: "gpu" value { guaranteed: 2 borrow_limit: 2 } } }
    teams { name: "b" quota { key: "gpu" value { guaranteed: 6 } } })pb");
  b->Apply(Job("a1", 3), kT0);
  b->Apply(Job("a2", 2), kT0);
  EXPECT_EQ(b->GetJob("a2")->reason,
            "borrow_limit a gpu: a would use 5 gpu > 4 (2 guaranteed + 2 borrow limit); it waits for a's jobs to end");
}

TEST(WhyItWaitsTest, QuotaInUseSaysWhatTheTeamCanTakeAndWhatTheFleetKeeps) {
  auto b = MakeFrom(R"pb(
    clusters { name: "k1" capacity { key: "gpu" value: 8 } }
    teams { name: "a" quota { key: "gpu" value { guaranteed: 4 } } preemption { reclaim: RECLAIM_NEVER } }
    teams { name: "b" quota { key: "gpu" value { guaranteed: 4 lend_limit: 0 } } })pb");
  b->Apply(Job("a1", 4), kT0);
  b->Apply(Job("a2", 1), kT0);
  EXPECT_EQ(b->GetJob("a2")->reason,
            "quota_in_use fleet gpu: the job needs 1; a can take 0 more now (the fleet, all clusters: 8 of 8 in use or "
            "kept for guarantees); it waits for borrowers to leave or jobs to end");
}

TEST(WhyItWaitsTest, AReclaimAndItsVictimNameEachOtherAndTheDeadline) {
  auto b = MakeFrom(R"pb(
    clusters { name: "k1" capacity { key: "gpu" value: 8 } }
    teams { name: "a" quota { key: "gpu" value { guaranteed: 4 } } preemption { reclaim: RECLAIM_NEVER } }
    teams { name: "b" quota { key: "gpu" value { guaranteed: 4 } } }
    policy { default_grace_s: 30 requeue_backoff_s: 60 })pb");
  b->Apply(Job("a1", 8), kT0);      // borrows b's guarantee
  b->Apply(Job("b1", 2, "b"), kT0);  // b takes it back
  // kT0 = 1970-01-12T13:46:40Z; the grace ends 30 s later.
  EXPECT_EQ(b->GetJob("b1")->reason,
            "reclaiming: waiting for 1 victim(s) to drain (a1), the last by 1970-01-12T13:47:10Z");
  EXPECT_EQ(b->GetJob("a1")->reason, "draining for b1 (reclaim) until 1970-01-12T13:47:10Z at the latest");
  // The grace ends: a1 is requeued, and may not preempt for 60 s.
  b->Apply(Tick(), kT0 + 30 * kSec);
  EXPECT_EQ(b->GetJob("a1")->state, v1::JOB_STATE_QUEUED);
  EXPECT_EQ(b->GetJob("a1")->reason,
            "requeued after preemption by b1 at 1970-01-12T13:47:10Z; may preempt again from 1970-01-12T13:48:10Z");
  // After the backoff it says what blocks it now, not "requeued".
  b->Apply(Tick(), kT0 + 91 * kSec);
  EXPECT_EQ(b->GetJob("a1")->reason,
            "capacity k1 gpu: the job needs 8; k1 has 6 of 8 free; it waits for jobs there to end");
}

// ---------------------------------------------------------------- bad input

struct BadSpec {
  std::string name;
  std::string spec;    // text proto of a JobSpec
  std::string reason;  // the whole reject reason, or a part of it
};

class BadSpecTest : public ::testing::TestWithParam<BadSpec> {};

TEST_P(BadSpecTest, IsRejectedNamingTheFieldAndChangesNothing) {
  auto b = Make();
  b->Apply(Job("keep", 2), kT0);
  const auto events = b->Apply(Submit(GetParam().spec), kT0 + kSec);
  ASSERT_EQ(events.size(), 1u) << absl::StrJoin(Lines(events), "\n");
  EXPECT_EQ(events[0].type, EventType::kReject);
  EXPECT_THAT(events[0].reason, HasSubstr(GetParam().reason));
  EXPECT_EQ(b->JobCount(), 1u);
  EXPECT_EQ(UsedGpus(*b, "a"), 2);
  EXPECT_EQ(b->ClusterUsed("k1", "gpu"), 2);
}

const std::string kLongId(254, 'x');

INSTANTIATE_TEST_SUITE_P(
    JobsTest, BadSpecTest,
    ::testing::Values(
        BadSpec{"AllZeroDemand", "job: 'z' team: 'a' per_replica { key: 'gpu' value: 0 }",
                "per_replica: every quantity is 0"},
        BadSpec{"ElasticZeroRange", "job: 'z' team: 'a' per_replica { key: 'gpu' value: 1 } elastic {}",
                "elastic: {min: 0, max: 0} is no range"},
        BadSpec{"IdTooLong", "job: '" + kLongId + "' team: 'a' per_replica { key: 'gpu' value: 1 }",
                "job: '" + std::string(64, 'x') + "'... (254 bytes) is 254 bytes; at most 253"},
        BadSpec{"IdWithNewline", "job: 'a\\nb' team: 'a' per_replica { key: 'gpu' value: 1 }",
                "job: 'a\\nb' may hold only letters, digits and . _ : / - (found '\\n')"},
        BadSpec{"IdWithRightToLeftMark", "job: 'a\\342\\200\\217b' team: 'a' per_replica { key: 'gpu' value: 1 }",
                "job: 'a\\342\\200\\217b' may hold only"},
        BadSpec{"TooManyLabels",
                [] {
                  std::string s = "job: 'l' team: 'a' per_replica { key: 'gpu' value: 1 }";
                  for (int i = 0; i < 65; ++i) absl::StrAppend(&s, " labels { key: 'k", i, "' value: 'v' }");
                  return s;
                }(),
                "labels: 65 labels; at most 64"},
        BadSpec{"LabelValueTooLong",
                "job: 'l' team: 'a' per_replica { key: 'gpu' value: 1 } labels { key: 'k' value: '" +
                    std::string(1025, 'v') + "' }",
                "labels.k: the value is 1025 bytes; at most 1024"},
        BadSpec{"CreatedAtOverflows",
                "job: 'c' team: 'a' per_replica { key: 'gpu' value: 1 } created_at: 9223372036854775807",
                "created_at: 9223372036854775807 is out of range"},
        BadSpec{"LastCheckpointOverflows",
                "job: 'c' team: 'a' per_replica { key: 'gpu' value: 1 } last_checkpoint_at: 9223372036854776",
                "last_checkpoint_at: 9223372036854776 is out of range"},
        BadSpec{"CheckpointIntervalOverflows",
                "job: 'c' team: 'a' per_replica { key: 'gpu' value: 1 } checkpoint_interval_s: 9223372036854776",
                "checkpoint_interval_s: 9223372036854776 is out of range"},
        BadSpec{"NegativeCreatedAt", "job: 'c' team: 'a' per_replica { key: 'gpu' value: 1 } created_at: -5",
                "created_at: -5 must be >= 0"},
        BadSpec{"DemandOfInt64Max", "job: 'o' team: 'a' per_replica { key: 'gpu' value: 9223372036854775807 }",
                "per_replica.gpu: 9223372036854775807 x 1 replicas = 9223372036854775807 gpu cannot be counted"}),
    [](const auto& info) { return info.param.name; });

TEST(JobsTest, TwoDemandsThatWouldOverflowTheirSumAreRefusedNamingTheField) {
  auto b = Make();
  // 2^60 each: one fits below the ceiling, the second would pass it.
  const std::string big = "per_replica { key: 'gpu' value: 1152921504606846976 }";
  EXPECT_THAT(Lines(b->Apply(Submit("job: 'x1' team: 'a' " + big), kT0)),
              ElementsAre("queue x1 (exceeds_max: the job needs 1152921504606846976 gpu; cluster k1 has 8 in all; it "
                          "waits for a config change)"));
  const auto events = b->Apply(Submit("job: 'x2' team: 'b' " + big), kT0 + kSec);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, EventType::kReject);
  EXPECT_THAT(events[0].reason, HasSubstr("per_replica.gpu: 1152921504606846976 x 1 replicas"));
  EXPECT_THAT(events[0].reason, HasSubstr("1152921504606846976 asked by other jobs"));
  // The sums stay exact: b's queued demand is 0, a's is x1's.
  EXPECT_EQ(QueuedGpus(*b, "b"), 0);
  EXPECT_EQ(QueuedGpus(*b, "a"), 1152921504606846976);
  // Once x1 is gone the fleet has room to count x2.
  b->Apply(Finish("x1"), kT0 + 2 * kSec);
  EXPECT_THAT(Lines(b->Apply(Submit("job: 'x3' team: 'b' " + big), kT0 + 3 * kSec)),
              ElementsAre(::testing::StartsWith("queue x3 (exceeds_max")));
}

TEST(JobsTest, AnElasticJobIsCountedAtItsLargestSize) {
  auto b = Make();
  const auto events = b->Apply(
      Submit("job: 'e' team: 'a' per_replica { key: 'gpu' value: 1152921504606846976 } elastic { min: 1 max: 2 }"),
      kT0);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, EventType::kReject);
  EXPECT_THAT(events[0].reason, HasSubstr("x 2 replicas = 2305843009213693952 gpu"));
}

TEST(JobsTest, NamesInTheConfigAreBoundedToo) {
  for (const std::string& bad : {std::string("teams { name: 'a b' }"), std::string("teams { name: '") +
                                                                          std::string(254, 't') + "' }",
                                 std::string("clusters { name: 'k\\n2' }")}) {
    v1::Config c;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(std::string(kConfig) + bad, &c));
    auto b = Broker::Create(c, kT0);
    ASSERT_FALSE(b.ok()) << bad;
    EXPECT_EQ(b.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(b.status().message(), ::testing::AnyOf(HasSubstr("teams.name: "), HasSubstr("clusters.name: ")));
  }
}

// A config that would turn a team with jobs into an inner team is refused
// naming one of its jobs: the least id, so the message is the same on every
// run and replay, whatever order the job index holds them in.
TEST(ConfigChangeTest, ARefusedConfigNamesTheLeastIdOfTheJobsInTheWay) {
  auto b = Make();
  for (int i = 39; i >= 0; --i) {
    b->Apply(Submit(absl::StrFormat("job: 'j%02d' team: 'a' per_replica { key: 'cpu' value: 1 }", i)), kT0 + 1);
  }
  internal::v1::Command change;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      std::string(kConfig) + R"pb( teams { name: "a1" parent: "a" quota { key: "gpu" value { guaranteed: 1 } } })pb",
      change.mutable_apply_config()));
  EXPECT_THAT(Lines(b->Apply(change, kT0 + 2)),
              ElementsAre("error  (config: team 'a' has job 'j00' and must stay a leaf team)"));
}

}  // namespace
}  // namespace tidegate::core
