// The core loop's hooks the HTTP endpoint relies on, on the real CoreLoop over
// an in-memory ledger that fails on demand: the batch observer feeds the
// metrics with committed decisions only, and the writer's wake time and the
// ledger's health drive /healthz and /readyz.
#include <future>
#include <memory>

#include "broker/core/test_support.h"
#include "broker/http/broker_metrics.h"
#include "broker/http/health.h"
#include "broker/service/core_loop.h"
#include "broker/service/failing_store_for_tests.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ledger/memory_store.h"

namespace tidegate::http {
namespace {

using ::testing::HasSubstr;

class LoopHooks : public ::testing::Test {
 protected:
  void SetUp() override {
    const v1::Config config = core::test_support::OneTeamConfig();
    memory_ = ledger::NewMemoryStore();
    auto failing = std::make_unique<service::FailingStore>(memory_.get());
    store_ = failing.get();
    auto loop = service::CoreLoop::Open(config, std::move(failing), &clock_, {}, /*init=*/true);
    ASSERT_TRUE(loop.ok()) << loop.status();
    loop_ = *std::move(loop);
    loop_->SetBatchObserver([this](const service::BatchStats& stats) {
      metrics_.ObserveBatch(stats);
      if (stats.commands > 0) {
        ++batches_;
        last_committed_ = stats.committed;
      }
    });
  }
  absl::Status Admit(const std::string& job) {
    const internal::v1::Command c = core::test_support::JobSpecBuilder(job).Team("red").Gpus(1).Submit();
    std::promise<absl::Status> answer;
    loop_->Submit(c, [&answer](absl::StatusOr<service::Applied> a) { answer.set_value(a.status()); });
    return answer.get_future().get();
  }
  HealthInputs Health() {
    HealthInputs in;
    in.now_ms = clock_.NowMs();
    in.writer_wake_ms = loop_->LastLoopWakeMs();
    in.ledger = loop_->LedgerHealth();
    return in;
  }
  std::string Metrics() {
    LiveFigures live;
    live.now_ms = clock_.NowMs();
    return metrics_.Render(*loop_->Published(), live);
  }

  service::FakeClock clock_{1700000000000};
  std::unique_ptr<ledger::Store> memory_;
  service::FailingStore* store_ = nullptr;
  std::unique_ptr<service::CoreLoop> loop_;
  BrokerMetrics metrics_;
  int batches_ = 0;              // written on the loop thread, read after an answer
  bool last_committed_ = false;  // likewise
};

TEST_F(LoopHooks, TheWriterIsAliveOnlyWhileItsThreadRuns) {
  EXPECT_FALSE(Liveness(Health()).ok);  // not started
  loop_->Start();
  EXPECT_TRUE(Liveness(Health()).ok) << Liveness(Health()).text;
  ASSERT_TRUE(Admit("j1").ok());
  EXPECT_GT(loop_->LastLoopWakeMs(), 0);
  loop_->Stop();
  EXPECT_EQ(Liveness(Health()).text, "the writer thread is not running");
}

TEST_F(LoopHooks, CommittedDecisionsAreCountedAndRefusedOnesAreNot) {
  loop_->Start();
  ASSERT_TRUE(Admit("j1").ok());
  EXPECT_EQ(batches_, 1);
  EXPECT_TRUE(last_committed_);
  EXPECT_THAT(Metrics(), HasSubstr("tidegate_decisions_total{type=\"admit\",team=\"red\"} 1\n"));
  EXPECT_TRUE(Readiness(Health()).ok);

  store_->Fail(absl::FailedPreconditionError("attempt to write a readonly database"));
  const absl::Status refused = Admit("j2");
  EXPECT_TRUE(absl::IsUnavailable(refused)) << refused;
  EXPECT_EQ(batches_, 2);
  EXPECT_FALSE(last_committed_);
  const std::string text = Metrics();
  EXPECT_THAT(text, HasSubstr("tidegate_decisions_total{type=\"admit\",team=\"red\"} 1\n"));  // j2 never happened
  EXPECT_THAT(text, HasSubstr("tidegate_commit_failures_total 1\n"));
  EXPECT_THAT(Readiness(Health()).text, HasSubstr("readonly database"));
  EXPECT_TRUE(Liveness(Health()).ok);
}

TEST_F(LoopHooks, FailedSnapshotCapturesAreCounted) {
  loop_->Stop();
  service::CoreLoopOptions options;
  options.snapshot_every = 3;
  auto loop = service::CoreLoop::Open(core::test_support::OneTeamConfig(), ledger::NewMemoryStore(), &clock_,
                                      options, /*init=*/true);
  ASSERT_TRUE(loop.ok()) << loop.status();
  loop_ = *std::move(loop);
  loop_->FailSnapshotChildrenForTests(1);
  loop_->Start();
  // The capture runs beside the writer: admit until its failure is counted.
  for (int i = 0; i < 2000 && loop_->SnapshotFailures() == 0; ++i) ASSERT_TRUE(Admit("j" + std::to_string(i)).ok());
  ASSERT_EQ(loop_->SnapshotFailures(), 1);
  LiveFigures live;
  live.snapshot_failures = loop_->SnapshotFailures();
  EXPECT_THAT(metrics_.Render(*loop_->Published(), live), HasSubstr("tidegate_snapshot_failures_total 1\n"));
  loop_->Stop();
}

}  // namespace
}  // namespace tidegate::http
