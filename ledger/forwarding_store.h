// ForwardingStore: a Store that passes every call to another Store. Tests
// subclass it and override one method to inject a fault (a Commit that fails
// with UNAVAILABLE, a read that returns DATA_LOSS) without touching the real
// implementations — LevelDB's EnvWrapper, for the ledger (STYLE.md 7).
//
// Threading: as the wrapped store. Does not own it.
#ifndef TIDEGATE_LEDGER_FORWARDING_STORE_H_
#define TIDEGATE_LEDGER_FORWARDING_STORE_H_

#include "ledger/store.h"

namespace tidegate::ledger {

class ForwardingStore : public Store {
 public:
  explicit ForwardingStore(Store* target) : target_(target) {}

  absl::Status Commit(const Batch& batch) override { return target_->Commit(batch); }
  absl::StatusOr<int64_t> LastSeq() override { return target_->LastSeq(); }
  absl::StatusOr<std::optional<SnapshotRecord>> LatestSnapshot() override {
    return target_->LatestSnapshot();
  }
  absl::StatusOr<std::optional<SnapshotRecord>> EarliestSnapshot() override {
    return target_->EarliestSnapshot();
  }
  absl::StatusOr<std::optional<SnapshotRecord>> SnapshotBefore(int64_t seq) override {
    return target_->SnapshotBefore(seq);
  }
  absl::StatusOr<int64_t> UnfinishedSnapshotParts() override { return target_->UnfinishedSnapshotParts(); }
  absl::Status ReadJournal(int64_t after_seq,
                           const std::function<absl::Status(const JournalRecord&)>& fn) override {
    return target_->ReadJournal(after_seq, fn);
  }
  absl::StatusOr<std::vector<JobRow>> Jobs(const JobFilter& filter) override {
    return target_->Jobs(filter);
  }
  absl::StatusOr<std::optional<JobRow>> Job(const std::string& id) override {
    return target_->Job(id);
  }
  absl::StatusOr<std::vector<UsageRow>> Usage(const std::string& team, int64_t since_ms) override {
    return target_->Usage(team, since_ms);
  }
  absl::StatusOr<std::vector<LoanRow>> Loans(const std::string& team,
                                             const std::string& since_day) override {
    return target_->Loans(team, since_day);
  }

 protected:
  Store* target() const { return target_; }
  // From the wrapped store's own thread only: calls are not fenced.
  void set_target(Store* target) { target_ = target; }

 private:
  Store* target_;
};

}  // namespace tidegate::ledger

#endif  // TIDEGATE_LEDGER_FORWARDING_STORE_H_
