// The single writer's bounds against hostile clients (docs/limits.md), on an
// in-memory ledger and a fake clock: what is journalled, what is refused.
#include "broker/service/core_loop.h"

#include <future>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace tidegate::service {
namespace {

using ::testing::HasSubstr;

constexpr char kConfig[] = R"pb(
  clusters { name: "a" capacity { key: "gpu" value: 8 } }
  teams { name: "research" quota { key: "gpu" value { guaranteed: 8 } } }
)pb";

v1::Command Submit(const std::string& id, const std::string& team, int64_t gpus) {
  v1::Command c;
  c.mutable_submit()->set_job(id);
  c.mutable_submit()->set_team(team);
  (*c.mutable_submit()->mutable_per_replica())["gpu"] = gpus;
  return c;
}

class CoreLoopTest : public ::testing::Test {
 protected:
  void Open(CoreLoopOptions options = {}, bool start = true) {
    v1::Config config;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(kConfig, &config));
    auto loop = CoreLoop::Open(config, ledger::NewMemoryStore(), &clock_, options, /*init=*/true);
    ASSERT_TRUE(loop.ok()) << loop.status();
    loop_ = *std::move(loop);
    if (start) loop_->Start();
  }
  absl::StatusOr<Applied> Run(v1::Command command) {
    std::promise<absl::StatusOr<Applied>> answer;
    auto future = answer.get_future();
    loop_->Submit(std::move(command), [&answer](absl::StatusOr<Applied> a) { answer.set_value(std::move(a)); });
    return future.get();
  }
  // The journal's commands, in order.
  std::vector<v1::Command> Journal() {
    std::vector<v1::Command> out;
    EXPECT_TRUE(loop_->store_for_tests()
                    .ReadJournal(0,
                                 [&](const ledger::JournalRecord& rec) {
                                   out.emplace_back().ParseFromString(rec.payload);
                                   return absl::OkStatus();
                                 })
                    .ok());
    return out;
  }
  static bool Has(const Applied& a, core::EventType type) {
    for (const auto& e : a.events) {
      if (e.type == type) return true;
    }
    return false;
  }

  FakeClock clock_{1'000'000};
  std::unique_ptr<CoreLoop> loop_;
};

TEST_F(CoreLoopTest, RejectedSubmitsAreAnsweredWithTheCoreReasonButNotJournalled) {
  Open();
  for (int i = 0; i < 100; ++i) {
    auto a = Run(Submit("bad-" + std::to_string(i), "nobody", 1));
    ASSERT_TRUE(a.ok());
    ASSERT_EQ(a->events.size(), 1u);
    EXPECT_EQ(a->events[0].type, core::EventType::kReject);
    EXPECT_THAT(a->events[0].reason, HasSubstr("team: 'nobody' is not a team"));
  }
  EXPECT_EQ(loop_->last_seq(), 0);
  EXPECT_TRUE(Journal().empty());
  // A valid submit after them is journalled alone.
  auto ok = Run(Submit("r1", "research", 2));
  ASSERT_TRUE(ok.ok());
  EXPECT_TRUE(Has(*ok, core::EventType::kAdmit));
  const auto journal = Journal();
  ASSERT_EQ(journal.size(), 1u);
  EXPECT_EQ(journal[0].submit().job(), "r1");
}

TEST_F(CoreLoopTest, ResubmitsThatChangeNothingAreNotJournalled) {
  Open();
  ASSERT_TRUE(Run(Submit("r1", "research", 2)).ok());
  const int64_t seq = loop_->last_seq();
  auto same = Run(Submit("r1", "research", 2));  // idempotent
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE(same->events.empty());
  ASSERT_NE(same->model->FindJob("r1"), nullptr);  // answered from the model readers have.
  auto other = Run(Submit("r1", "research", 4));  // another spec
  ASSERT_TRUE(other.ok());
  ASSERT_EQ(other->events.size(), 1u);
  EXPECT_EQ(other->events[0].type, core::EventType::kError);
  EXPECT_THAT(other->events[0].reason, HasSubstr("already exists with a different spec"));
  EXPECT_EQ(loop_->last_seq(), seq);
  EXPECT_EQ(Journal().size(), 1u);
}

TEST_F(CoreLoopTest, AFullQueueAnswersResourceExhaustedAtOnce) {
  CoreLoopOptions options;
  options.max_queued = 2;
  Open(options, /*start=*/false);  // nothing drains the queue
  std::promise<absl::Status> q1, q2;
  loop_->Submit(Submit("q1", "research", 1), [&](absl::StatusOr<Applied> a) { q1.set_value(a.status()); });
  loop_->Submit(Submit("q2", "research", 1), [&](absl::StatusOr<Applied> a) { q2.set_value(a.status()); });
  absl::Status refused;
  loop_->Submit(Submit("q3", "research", 1), [&](absl::StatusOr<Applied> a) { refused = a.status(); });
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.message(), HasSubstr("command queue is full (2 commands waiting"));
  EXPECT_EQ(loop_->queued_for_tests(), 2);
  // Once the writer runs, the queue drains and takes commands again.
  loop_->Start();
  EXPECT_TRUE(q1.get_future().get().ok());
  EXPECT_TRUE(q2.get_future().get().ok());
  EXPECT_TRUE(Run(Submit("q4", "research", 1)).ok());
}

TEST_F(CoreLoopTest, ACommandLargerThanItsLimitIsInvalidArgumentAndNotJournalled) {
  CoreLoopOptions options;
  options.max_command_bytes = 1024;
  Open(options);
  auto a = Run(Submit(std::string(2000, 'x'), "research", 1));
  EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(a.status().message(), HasSubstr("more than the 1024 accepted (--max-request-bytes)"));
  EXPECT_TRUE(Journal().empty());
  // A config-sized command has its own, larger limit.
  v1::Command set_capacity;
  set_capacity.mutable_set_capacity()->set_cluster("a");
  (*set_capacity.mutable_set_capacity()->mutable_capacity())["gpu"] = 8;
  EXPECT_TRUE(Run(set_capacity).ok());
}

// A dry run is bounded like the command it previews: the same size limit and
// the same queue bound, checked at once on the caller's thread.
TEST_F(CoreLoopTest, DryRunsPassTheSameSizeAndQueueChecksAsSubmits) {
  CoreLoopOptions options;
  options.max_command_bytes = 1024;
  options.max_queued = 1;
  Open(options, /*start=*/false);  // nothing drains the queue
  absl::Status too_large;
  loop_->DryRun(Submit(std::string(2000, 'x'), "research", 1),
                [&](absl::StatusOr<Applied> a) { too_large = a.status(); });
  EXPECT_EQ(too_large.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(too_large.message(), HasSubstr("more than the 1024 accepted (--max-request-bytes)"));
  EXPECT_EQ(loop_->queued_for_tests(), 0);
  std::promise<absl::Status> queued;
  loop_->Submit(Submit("q1", "research", 1), [&](absl::StatusOr<Applied> a) { queued.set_value(a.status()); });
  absl::Status full;
  loop_->DryRun(Submit("q2", "research", 1), [&](absl::StatusOr<Applied> a) { full = a.status(); });
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(loop_->queued_for_tests(), 1);
  loop_->Start();
  EXPECT_TRUE(queued.get_future().get().ok());
}

TEST_F(CoreLoopTest, UnknownFieldsAreDroppedBeforeTheCommandIsJournalledOrServed) {
  Open();
  v1::Command c = Submit("r1", "research", 2);
  const std::string blob(10000, 'z');
  c.mutable_submit()->GetReflection()->MutableUnknownFields(c.mutable_submit())->AddLengthDelimited(999, blob);
  c.GetReflection()->MutableUnknownFields(&c)->AddVarint(998, 7);
  auto a = Run(c);
  ASSERT_TRUE(a.ok());
  const v1::JobInfo* job = a->model->FindJob("r1");
  ASSERT_NE(job, nullptr);
  EXPECT_EQ(job->spec().GetReflection()->GetUnknownFields(job->spec()).field_count(), 0);
  const auto journal = Journal();
  ASSERT_EQ(journal.size(), 1u);
  EXPECT_EQ(journal[0].GetReflection()->GetUnknownFields(journal[0]).field_count(), 0);
  EXPECT_EQ(journal[0].submit().GetReflection()->GetUnknownFields(journal[0].submit()).field_count(), 0);
  EXPECT_LT(journal[0].ByteSizeLong(), 200u);
}

TEST_F(CoreLoopTest, AStreamOfRejectsDoesNotHoldBackTimeDrivenWork) {
  Open();
  ASSERT_TRUE(Run(Submit("r1", "research", 8)).ok());
  const int64_t seq = loop_->last_seq();
  // A tick period (10 s) later only rejects arrive: the writer still runs
  // the time-driven work, as a journalled tick.
  clock_.Advance(11'000);
  auto a = Run(Submit("bad", "nobody", 1));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->events[0].type, core::EventType::kReject);
  const auto journal = Journal();
  ASSERT_EQ(static_cast<int64_t>(journal.size()), seq + 1);
  EXPECT_TRUE(journal.back().has_tick());
}

}  // namespace
}  // namespace tidegate::service
