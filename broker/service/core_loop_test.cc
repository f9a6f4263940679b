// The single writer as a unit, on an in-memory ledger and a fake clock: its
// bounds against hostile clients (docs/limits.md: what is journalled, what is
// refused), group commit and batching, a failing commit, the published read
// model, and the usage it accounts.
#include "broker/service/core_loop.h"

#include <future>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "broker/service/failing_store_for_tests.h"

namespace tidegate::service {
namespace {

using ::testing::HasSubstr;
using ::testing::ElementsAre;

constexpr char kConfig[] = R"pb(
  clusters { name: "a" capacity { key: "gpu" value: 8 } }
  teams { name: "research" quota { key: "gpu" value { guaranteed: 8 } } }
)pb";

internal::v1::Command Submit(const std::string& id, const std::string& team, int64_t gpus) {
  internal::v1::Command c;
  c.mutable_submit()->set_job(id);
  c.mutable_submit()->set_team(team);
  (*c.mutable_submit()->mutable_per_replica())["gpu"] = gpus;
  return c;
}

class CoreLoopTest : public ::testing::Test {
 protected:
  void Open(CoreLoopOptions options = {}, bool start = true, const char* config_text = kConfig,
            std::unique_ptr<ledger::Store> store = ledger::NewMemoryStore()) {
    v1::Config config;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(config_text, &config));
    auto loop = CoreLoop::Open(config, std::move(store), &clock_, options, /*init=*/true);
    ASSERT_TRUE(loop.ok()) << loop.status();
    loop_ = *std::move(loop);
    if (start) loop_->Start();
  }
  absl::StatusOr<Applied> Run(internal::v1::Command command) {
    std::promise<absl::StatusOr<Applied>> answer;
    auto future = answer.get_future();
    loop_->Submit(std::move(command), [&answer](absl::StatusOr<Applied> a) { answer.set_value(std::move(a)); });
    return future.get();
  }
  // Queues `command`; its answer arrives in the returned future.
  std::future<absl::StatusOr<Applied>> Queue(internal::v1::Command command) {
    auto answer = std::make_shared<std::promise<absl::StatusOr<Applied>>>();
    auto future = answer->get_future();
    loop_->Submit(std::move(command), [answer](absl::StatusOr<Applied> a) { answer->set_value(std::move(a)); });
    return future;
  }
  // Records the size and outcome of every batch (set before Start()).
  void ObserveBatches() {
    loop_->SetBatchObserver([this](const BatchStats& stats) {
      std::lock_guard<std::mutex> lock(batches_mu_);
      batches_.push_back({stats.commands, stats.committed});
    });
  }
  std::vector<std::pair<int64_t, bool>> Batches() {
    std::lock_guard<std::mutex> lock(batches_mu_);
    return batches_;
  }
  // The journal's commands, in order.
  std::vector<internal::v1::Command> Journal() {
    std::vector<internal::v1::Command> out;
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
  std::unique_ptr<ledger::Store> memory_ = ledger::NewMemoryStore();  // outlives loop_
  std::mutex batches_mu_;
  std::vector<std::pair<int64_t, bool>> batches_;  // commands, committed
  std::unique_ptr<CoreLoop> loop_;  // last: its threads use the members above until it stops
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
  internal::v1::Command set_capacity;
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
  internal::v1::Command c = Submit("r1", "research", 2);
  const std::string blob(10000, 'z');
  c.mutable_submit()->GetReflection()->MutableUnknownFields(c.mutable_submit())->AddLengthDelimited(999, blob);
  c.GetReflection()->MutableUnknownFields(&c)->AddVarint(998, 7);
  auto a = Run(c);
  ASSERT_TRUE(a.ok());
  auto job = a->model->FindJob("r1");
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

internal::v1::Command Finish(const std::string& id) {
  internal::v1::Command c;
  c.set_finish(id);
  return c;
}

// Commands that wait for the writer together are journalled in one commit
// and answered from one published model.
TEST_F(CoreLoopTest, CommandsQueuedTogetherGoToTheLedgerInOneCommit) {
  Open({}, /*start=*/false);
  ObserveBatches();
  std::vector<std::future<absl::StatusOr<Applied>>> answers;
  for (int i = 0; i < 5; ++i) answers.push_back(Queue(Submit("g" + std::to_string(i), "research", 1)));
  loop_->Start();
  std::vector<std::shared_ptr<const ReadModel>> models;
  for (auto& f : answers) {
    auto a = f.get();
    ASSERT_TRUE(a.ok()) << a.status();
    models.push_back(a->model);
  }
  EXPECT_EQ(Batches(), (std::vector<std::pair<int64_t, bool>>{{5, true}}));
  EXPECT_EQ(Journal().size(), 5u);
  for (const auto& m : models) {
    EXPECT_EQ(m, models[0]);  // one model for the batch, holding all of it
    EXPECT_EQ(m->seq(), 5);
  }
  for (int i = 0; i < 5; ++i) EXPECT_NE(models[0]->FindJob("g" + std::to_string(i)), nullptr);
}

TEST_F(CoreLoopTest, ABatchTakesAtMostMaxBatchCommands) {
  CoreLoopOptions options;
  options.max_batch = 2;
  Open(options, /*start=*/false);
  ObserveBatches();
  std::vector<std::future<absl::StatusOr<Applied>>> answers;
  for (int i = 0; i < 5; ++i) answers.push_back(Queue(Submit("b" + std::to_string(i), "research", 1)));
  loop_->Start();
  for (auto& f : answers) ASSERT_TRUE(f.get().ok());
  EXPECT_EQ(Batches(), (std::vector<std::pair<int64_t, bool>>{{2, true}, {2, true}, {1, true}}));
  EXPECT_EQ(loop_->last_seq(), 5);
}

// A failed commit refuses the whole batch: nothing of it is acknowledged,
// published or kept; after the retry delay the ledger is tried again.
TEST_F(CoreLoopTest, AFailingCommitRefusesItsWholeBatchAndPublishesNothing) {
  auto failing = std::make_unique<FailingStore>(memory_.get());
  FailingStore* store = failing.get();
  Open({}, /*start=*/false, kConfig, std::move(failing));
  ObserveBatches();
  store->Fail(absl::ResourceExhaustedError("disk full"));
  std::vector<std::future<absl::StatusOr<Applied>>> answers;
  for (int i = 0; i < 3; ++i) answers.push_back(Queue(Submit("f" + std::to_string(i), "research", 1)));
  loop_->Start();
  for (auto& f : answers) {
    auto a = f.get();
    EXPECT_EQ(a.status().code(), absl::StatusCode::kUnavailable);
    EXPECT_THAT(a.status().message(), HasSubstr("disk full"));
  }
  EXPECT_EQ(Batches(), (std::vector<std::pair<int64_t, bool>>{{3, false}}));
  EXPECT_EQ(loop_->Published()->seq(), 0);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(loop_->Published()->FindJobAny("f" + std::to_string(i)), nullptr);
  EXPECT_FALSE(loop_->LedgerHealth().ok());
  store->Heal();
  clock_.Advance(loop_->options().retry_commit_after_ms);
  auto again = Run(Submit("f0", "research", 1));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(Has(*again, core::EventType::kAdmit));
  EXPECT_TRUE(loop_->LedgerHealth().ok());
  // Only the retried command: none of the refused batch. The clock's advance
  // may also bring a tick into the journal, which is not the batch's.
  std::vector<std::string> submitted;
  for (const internal::v1::Command& c : Journal()) {
    if (c.has_submit()) submitted.push_back(c.submit().job());
  }
  EXPECT_THAT(submitted, ElementsAre("f0"));
}

// Readers hold the model of their choice: a later batch publishes a new one
// and leaves the earlier ones as they were.
TEST_F(CoreLoopTest, EachBatchPublishesANewModelAndEarlierModelsStayAsTheyWere) {
  Open();
  const auto empty = loop_->Published();
  auto admitted = Run(Submit("m1", "research", 2));
  ASSERT_TRUE(admitted.ok());
  const auto first = loop_->Published();
  EXPECT_EQ(admitted->model, first);
  EXPECT_EQ(first->seq(), loop_->last_seq());
  ASSERT_NE(first->FindJob("m1"), nullptr);
  EXPECT_EQ(first->FindJob("m1")->state(), v1::JOB_STATE_ADMITTED);
  EXPECT_EQ(first->TeamWithFigures("research")->resources(0).used(), 2);
  ASSERT_TRUE(Run(Finish("m1")).ok());
  const auto second = loop_->Published();
  EXPECT_GT(second->seq(), first->seq());
  EXPECT_EQ(second->FindJob("m1"), nullptr);  // ended: retained, not live
  ASSERT_NE(second->FindJobAny("m1"), nullptr);
  EXPECT_EQ(second->FindJobAny("m1")->state(), v1::JOB_STATE_ENDED);
  EXPECT_EQ(second->TeamWithFigures("research")->resources(0).used(), 0);
  // The earlier models are unchanged.
  EXPECT_EQ(empty->FindJobAny("m1"), nullptr);
  EXPECT_EQ(first->FindJob("m1")->state(), v1::JOB_STATE_ADMITTED);
  EXPECT_EQ(first->TeamWithFigures("research")->resources(0).used(), 2);
}

constexpr char kTwoTeams[] = R"pb(
  clusters { name: "a" capacity { key: "gpu" value: 16 } }
  teams { name: "research" quota { key: "gpu" value { guaranteed: 8 } } }
  teams { name: "training" quota { key: "gpu" value { guaranteed: 8 } } }
  teams { name: "idle" quota { key: "gpu" value { guaranteed: 0 } } }
)pb";

// Usage rows in GPU-seconds per team: the writer re-reads only the teams of
// each batch's jobs, so a team that a batch does not touch must keep being
// counted at its last usage.
std::map<std::string, double> UsedSeconds(ledger::Store& store) {
  auto rows = store.Usage("", 0);
  EXPECT_TRUE(rows.ok());
  std::map<std::string, double> out;
  for (const auto& r : *rows) out[r.team] += r.used;
  return out;
}

TEST_F(CoreLoopTest, UsageCountsEveryTeamThroughBatchesThatTouchOnlyOthers) {
  CoreLoopOptions options;
  options.accounting_every_ms = 0;  // rows with every batch
  Open(options, /*start=*/true, kTwoTeams);
  ASSERT_TRUE(Run(Submit("r1", "research", 2)).ok());  // research: 2 GPUs from t0
  clock_.Advance(1000);
  ASSERT_TRUE(Run(Submit("t1", "training", 4)).ok());  // training: 4 from t0+1 s
  clock_.Advance(1000);
  ASSERT_TRUE(Run(Submit("t2", "training", 1)).ok());  // training: 5 from t0+2 s
  clock_.Advance(2000);
  ASSERT_TRUE(Run(Finish("r1")).ok());  // research: 0 from t0+4 s
  clock_.Advance(1000);
  ASSERT_TRUE(Run(Finish("t1")).ok());  // training: 1 from t0+5 s
  clock_.Advance(1000);
  ASSERT_TRUE(Run(Finish("t2")).ok());  // training: 0 from t0+6 s
  const auto used = UsedSeconds(loop_->store_for_tests());
  EXPECT_DOUBLE_EQ(used.at("research"), 2 * 4.0);
  EXPECT_DOUBLE_EQ(used.at("training"), 4 * 1.0 + 5 * 3.0 + 1 * 1.0);
  EXPECT_EQ(used.count("idle"), 0u);
}

}  // namespace
}  // namespace tidegate::service
