// A test store that fails commits on demand (over ledger/forwarding_store.h),
// for the commit-failure path of the real CoreLoop and the services over it.
//
// Threading: Fail/FailReads/Heal/MirrorTo/StopMirroring/FailOverOnNextCommit/
// commits/recoveries/held_rows from any thread; Commit and reads from the
// store's one thread.
#ifndef TIDEGATE_BROKER_SERVICE_FAILING_STORE_FOR_TESTS_H_
#define TIDEGATE_BROKER_SERVICE_FAILING_STORE_FOR_TESTS_H_

#include <atomic>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "ledger/forwarding_store.h"

namespace tidegate::service {

// Commit fails with `failure` while it is set; counts the calls.
class FailingStore : public ledger::ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;
  absl::Status Commit(const ledger::Batch& batch) override {
    ++commits_;
    bool after_writing;
    absl::Status failure;
    {
      absl::MutexLock lock(&mu_);
      held_rows_ = static_cast<int>(batch.usage.size() + batch.loans.size());
      if (fail_over_ && replica_ != nullptr) {
        fail_over_ = false;
        set_target(replica_);
        replica_ = nullptr;
        return absl::UnavailableError("server closed the connection unexpectedly");
      }
      if (failure_.ok()) {
        absl::Status committed = target()->Commit(batch);
        if (committed.ok() && replica_ != nullptr && mirroring_) committed = replica_->Commit(batch);
        return committed;
      }
      after_writing = after_writing_;
      failure = failure_;
    }
    if (after_writing) {
      if (absl::Status written = target()->Commit(batch); !written.ok()) return written;
    }
    return failure;
  }
  void Fail(absl::Status failure) {
    absl::MutexLock lock(&mu_);
    failure_ = std::move(failure);
    after_writing_ = false;
  }
  // Commits, then reports `failure`: the server committed and the answer
  // was lost (a database restarted, a connection reset).
  void FailAfterWriting(absl::Status failure) {
    absl::MutexLock lock(&mu_);
    failure_ = std::move(failure);
    after_writing_ = true;
  }
  // Every commit is copied to `replica` (which must start as empty as the
  // store), until StopMirroring.
  void MirrorTo(ledger::Store* replica) {
    absl::MutexLock lock(&mu_);
    replica_ = replica;
    mirroring_ = true;
  }
  void StopMirroring() {
    absl::MutexLock lock(&mu_);
    mirroring_ = false;
  }
  // The next commit fails, and from then on the store is the replica given
  // to MirrorTo: a database failed over to a replica that missed the
  // commits since StopMirroring.
  void FailOverOnNextCommit() {
    absl::MutexLock lock(&mu_);
    fail_over_ = true;
  }
  // The first read of a recovery fails too (a server still starting).
  absl::StatusOr<std::optional<ledger::SnapshotRecord>> LatestSnapshot() override {
    ++recoveries_;
    if (reads_fail_.load()) return absl::UnavailableError("could not receive data from server");
    return target()->LatestSnapshot();
  }
  void FailReads() { reads_fail_ = true; }
  void Heal() {
    Fail(absl::OkStatus());
    reads_fail_ = false;
  }
  int commits() const { return commits_.load(); }
  // Recoveries started (each reads the latest snapshot first).
  int recoveries() const { return recoveries_.load(); }
  // Usage and loan rows of the latest commit attempt.
  int held_rows() {
    absl::MutexLock lock(&mu_);
    return held_rows_;
  }

 private:
  absl::Mutex mu_;
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
  bool after_writing_ ABSL_GUARDED_BY(mu_) = false;
  ledger::Store* replica_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool mirroring_ ABSL_GUARDED_BY(mu_) = false;
  bool fail_over_ ABSL_GUARDED_BY(mu_) = false;
  int held_rows_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<int> commits_{0};
  std::atomic<int> recoveries_{0};
  std::atomic<bool> reads_fail_{false};
};

}  // namespace tidegate::service

#endif  // TIDEGATE_BROKER_SERVICE_FAILING_STORE_FOR_TESTS_H_
