// A test fixture: the real CoreLoop over a FailingStore
// (failing_store_for_tests.h) on a memory ledger, for tests of the services
// while the ledger refuses writes. The loop retries the ledger every 10 ms,
// and the fixture follows its health so a test can wait for writes to resume.
#ifndef TIDEGATE_BROKER_SERVICE_FAILING_LOOP_FOR_TESTS_H_
#define TIDEGATE_BROKER_SERVICE_FAILING_LOOP_FOR_TESTS_H_

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>

#include "broker/service/core_loop.h"
#include "broker/service/failing_store_for_tests.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "ledger/memory_store.h"

namespace tidegate::service {

class FailingLoopTest : public ::testing::Test {
 protected:
  // Opens the loop on `config_text` (a v1.Config in text format); the
  // services are made over loop_ next, then StartLoop.
  void OpenLoop(const char* config_text) {
    v1::Config config;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(config_text, &config));
    auto failing = std::make_unique<FailingStore>(memory_.get());
    store_ = failing.get();
    CoreLoopOptions options;
    options.retry_commit_after_ms = 10;
    auto loop = CoreLoop::Open(config, std::move(failing), &clock_, options, /*init=*/true);
    ASSERT_TRUE(loop.ok()) << loop.status();
    loop_ = *std::move(loop);
    loop_->SetHealthHook([this](const absl::Status& s) {
      std::lock_guard<std::mutex> lock(health_mu_);
      healthy_ = s.ok();
      health_cv_.notify_all();
    });
  }
  // Starts it with `publish` as its publish hook (the services' Notify).
  void StartLoop(std::function<void(const PublishedChange&)> publish) {
    loop_->SetPublishHook(std::move(publish));
    loop_->Start();
  }
  // Stops the loop, so that its hooks no longer reach the services.
  void TearDown() override {
    if (loop_) loop_->Stop();
  }
  // The loop retries the ledger every 10 ms, without a client.
  void HealAndWaitForWrites() {
    store_->Heal();
    std::unique_lock<std::mutex> lock(health_mu_);
    ASSERT_TRUE(health_cv_.wait_for(lock, std::chrono::seconds(10), [&] { return healthy_; }));
  }

  std::unique_ptr<ledger::Store> memory_ = ledger::NewMemoryStore();
  FailingStore* store_ = nullptr;
  RealClock clock_;
  std::unique_ptr<CoreLoop> loop_;

 private:
  std::mutex health_mu_;
  std::condition_variable health_cv_;
  bool healthy_ = true;  // guarded by health_mu_
};

}  // namespace tidegate::service

#endif  // TIDEGATE_BROKER_SERVICE_FAILING_LOOP_FOR_TESTS_H_
