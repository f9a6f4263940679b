// A test store that fails commits on demand (over ledger/forwarding_store.h),
// for the commit-failure path of the real CoreLoop and the services over it.
//
// Threading: Fail/Heal/commits/held_rows from any thread; Commit from the
// store's one thread.
#ifndef TIDEGATE_BROKER_SERVICE_FAILING_STORE_FOR_TESTS_H_
#define TIDEGATE_BROKER_SERVICE_FAILING_STORE_FOR_TESTS_H_

#include <atomic>
#include <mutex>

#include "ledger/forwarding_store.h"

namespace tidegate::service {

// Commit fails with `failure` while it is set; counts the calls.
class FailingStore : public ledger::ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;
  absl::Status Commit(const ledger::Batch& batch) override {
    ++commits_;
    {
      std::lock_guard<std::mutex> lock(mu_);
      held_rows_ = static_cast<int>(batch.usage.size() + batch.loans.size());
      if (!failure_.ok()) return failure_;
    }
    return target()->Commit(batch);
  }
  void Fail(absl::Status failure) {
    std::lock_guard<std::mutex> lock(mu_);
    failure_ = std::move(failure);
  }
  void Heal() { Fail(absl::OkStatus()); }
  int commits() const { return commits_.load(); }
  // Usage and loan rows of the latest commit attempt.
  int held_rows() {
    std::lock_guard<std::mutex> lock(mu_);
    return held_rows_;
  }

 private:
  std::mutex mu_;
  absl::Status failure_;
  int held_rows_ = 0;
  std::atomic<int> commits_{0};
};

}  // namespace tidegate::service

#endif  // TIDEGATE_BROKER_SERVICE_FAILING_STORE_FOR_TESTS_H_
