// The in-memory Store: ordered maps behind one mutex. Commit validates the
// whole batch first (batch_rules.h) and then only inserts into maps, which
// cannot fail, so a refused batch changes nothing.
#include "ledger/memory_store.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "ledger/batch_rules.h"
#include "ledger/journal_damage.h"

namespace tidegate::ledger {
namespace {

using UsageKey = std::tuple<std::string, std::string, int64_t>;  // team, resource, hour
using LoanKey = std::tuple<std::string, std::string, std::string, std::string>;  // b, l, r, day

class MemoryStore final : public Store {
 public:
  absl::Status Commit(const Batch& batch) override {
    absl::MutexLock lock(&mu_);
    if (absl::Status s = ValidateBatch(batch, LastSeqLocked()); !s.ok()) return s;
    if (absl::Status s = CheckPartsStoredLocked(batch); !s.ok()) return s;
    for (const JournalRecord& record : batch.journal) journal_[record.seq] = record;
    for (const JobRow& job : batch.jobs) jobs_[job.job] = job;
    for (const UsageRow& row : batch.usage) {
      auto [it, inserted] =
          usage_.try_emplace(UsageKey{row.team, row.resource, row.hour_start_ms}, row);
      if (!inserted) {
        it->second.used += row.used;
        it->second.borrowed += row.borrowed;
        it->second.lent += row.lent;
        it->second.queued += row.queued;
      }
    }
    for (const LoanRow& row : batch.loans) {
      auto [it, inserted] =
          loans_.try_emplace(LoanKey{row.borrower, row.lender, row.resource, row.day}, row);
      if (!inserted) it->second.amount += row.amount;
    }
    for (const SnapshotPart& part : batch.snapshot_parts) parts_[{part.seq, part.index}] = part.bytes;
    if (batch.snapshot.has_value()) {
      snapshots_[batch.snapshot->seq] = {*batch.snapshot, SnapshotChecksum(*batch.snapshot), 0};
    }
    if (const auto& parted = batch.parted_snapshot; parted.has_value()) {
      snapshots_[parted->seq] = {SnapshotRecord{parted->seq, parted->at_ms, ""}, parted->checksum, parted->parts};
    }
    if (batch.snapshot.has_value() || batch.parted_snapshot.has_value()) {
      PruneSnapshotsLocked();
      // Parts no parted row names: of a snapshot abandoned midway or pruned.
      for (auto it = parts_.begin(); it != parts_.end();) {
        auto row = snapshots_.find(it->first.first);
        const bool named = row != snapshots_.end() && it->first.second < row->second.parts;
        it = named ? std::next(it) : parts_.erase(it);
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<int64_t> LastSeq() override {
    absl::MutexLock lock(&mu_);
    return LastSeqLocked();
  }

  absl::StatusOr<std::optional<SnapshotRecord>> LatestSnapshot() override {
    absl::MutexLock lock(&mu_);
    if (snapshots_.empty()) return std::nullopt;
    return CheckedLocked(snapshots_.rbegin()->second);
  }

  absl::StatusOr<std::optional<SnapshotRecord>> EarliestSnapshot() override {
    absl::MutexLock lock(&mu_);
    if (snapshots_.empty()) return std::nullopt;
    return CheckedLocked(snapshots_.begin()->second);
  }

  absl::StatusOr<std::optional<SnapshotRecord>> SnapshotBefore(int64_t seq) override {
    absl::MutexLock lock(&mu_);
    auto it = snapshots_.lower_bound(seq);
    if (it == snapshots_.begin()) return std::nullopt;
    return CheckedLocked(std::prev(it)->second);
  }

  absl::StatusOr<int64_t> UnfinishedSnapshotParts() override {
    absl::MutexLock lock(&mu_);
    int64_t unnamed = 0;
    for (const auto& [key, bytes] : parts_) {
      auto row = snapshots_.find(key.first);
      if (row == snapshots_.end() || key.second >= row->second.parts) ++unnamed;
    }
    return unnamed;
  }

  absl::Status ReadJournal(int64_t after_seq,
                           const std::function<absl::Status(const JournalRecord&)>& fn) override {
    // One entry at a time, calling fn without the lock so it may use the store.
    int64_t expected = std::max<int64_t>(after_seq, 0) + 1;
    for (;;) {
      JournalRecord record;
      {
        absl::MutexLock lock(&mu_);
        auto it = journal_.lower_bound(expected);
        if (it == journal_.end()) return absl::OkStatus();
        record = it->second;
      }
      if (absl::Status s = CheckStoredRecord(record, expected); !s.ok()) return s;
      if (absl::Status s = fn(record); !s.ok()) return s;
      expected = record.seq + 1;
    }
  }

  absl::StatusOr<std::vector<JobRow>> Jobs(const JobFilter& filter) override {
    absl::MutexLock lock(&mu_);
    std::vector<JobRow> out;
    for (const auto& [id, job] : jobs_) {
      if (!filter.team.empty() && job.team != filter.team) continue;
      if (!filter.state.empty() && job.state != filter.state) continue;
      out.push_back(job);
    }
    std::sort(out.begin(), out.end(), [](const JobRow& a, const JobRow& b) {
      return std::tie(a.created_at_ms, a.job) < std::tie(b.created_at_ms, b.job);
    });
    return out;
  }

  absl::StatusOr<std::optional<JobRow>> Job(const std::string& id) override {
    absl::MutexLock lock(&mu_);
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return std::nullopt;
    return it->second;
  }

  absl::StatusOr<std::vector<UsageRow>> Usage(const std::string& team, int64_t since_ms) override {
    absl::MutexLock lock(&mu_);
    std::vector<UsageRow> out;  // the map's order is (team, resource, hour): the contract's
    for (const auto& [key, row] : usage_) {
      if ((team.empty() || row.team == team) && row.hour_start_ms >= since_ms) out.push_back(row);
    }
    return out;
  }

  absl::StatusOr<std::vector<LoanRow>> Loans(const std::string& team,
                                             const std::string& since_day) override {
    absl::MutexLock lock(&mu_);
    std::vector<LoanRow> out;
    for (const auto& [key, row] : loans_) {
      const bool involved = team.empty() || row.borrower == team || row.lender == team;
      if (involved && row.day >= since_day) out.push_back(row);
    }
    std::sort(out.begin(), out.end(), [](const LoanRow& a, const LoanRow& b) {
      return std::tie(a.day, a.borrower, a.lender, a.resource) <
             std::tie(b.day, b.borrower, b.lender, b.resource);
    });
    return out;
  }

  // Test hooks (memory_store.h).
  absl::Status CorruptSnapshotForTest(int64_t seq) {
    absl::MutexLock lock(&mu_);
    auto it = snapshots_.find(seq);
    if (it == snapshots_.end()) return absl::NotFoundError(absl::StrCat("no snapshot at seq ", seq));
    if (it->second.parts > 0) {
      parts_[{seq, 0}].push_back('!');
    } else {
      it->second.record.payload.push_back('!');
    }
    return absl::OkStatus();
  }

  absl::Status MutateForTest(int64_t seq, bool drop) {
    absl::MutexLock lock(&mu_);
    auto it = journal_.find(seq);
    if (it == journal_.end()) return absl::NotFoundError(absl::StrCat("no journal seq ", seq));
    if (drop) {
      journal_.erase(it);
    } else {
      it->second.payload.push_back('!');
    }
    return absl::OkStatus();
  }

 private:
  struct StoredSnapshot {
    SnapshotRecord record;  // the payload is empty when written in parts
    uint32_t checksum = 0;
    int64_t parts = 0;      // 0: the payload is whole
  };

  absl::StatusOr<std::optional<SnapshotRecord>> CheckedLocked(const StoredSnapshot& stored) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    SnapshotRecord record = stored.record;
    for (int64_t i = 0; i < stored.parts; ++i) {
      auto part = parts_.find({record.seq, i});
      if (part == parts_.end()) return MissingSnapshotParts(record.seq, stored.parts, i);
      record.payload += part->second;
    }
    if (absl::Status s = CheckStoredSnapshot(record, stored.checksum); !s.ok()) return s;
    return record;
  }

  // A parted snapshot's parts are stored already or come with it.
  absl::Status CheckPartsStoredLocked(const Batch& batch) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!batch.parted_snapshot.has_value()) return absl::OkStatus();
    const PartedSnapshot& parted = *batch.parted_snapshot;
    for (int64_t i = 0; i < parted.parts; ++i) {
      const bool in_batch = std::any_of(batch.snapshot_parts.begin(), batch.snapshot_parts.end(),
                                        [&](const SnapshotPart& p) { return p.seq == parted.seq && p.index == i; });
      if (!in_batch && parts_.count({parted.seq, i}) == 0) {
        return absl::FailedPreconditionError(absl::StrCat("parted snapshot at seq ", parted.seq, ": part ", i,
                                                          " of ", parted.parts, " is not stored"));
      }
    }
    return absl::OkStatus();
  }

  int64_t LastSeqLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return journal_.empty() ? 0 : journal_.rbegin()->first;
  }

  // Keeps the earliest snapshot and the kLatestSnapshotsKept latest.
  void PruneSnapshotsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    while (static_cast<int>(snapshots_.size()) > kLatestSnapshotsKept + 1) {
      snapshots_.erase(std::next(snapshots_.begin()));
    }
  }

  absl::Mutex mu_;
  std::map<int64_t, JournalRecord> journal_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, StoredSnapshot> snapshots_ ABSL_GUARDED_BY(mu_);
  std::map<std::pair<int64_t, int64_t>, std::string> parts_ ABSL_GUARDED_BY(mu_);  // (seq, index)
  std::map<std::string, JobRow> jobs_ ABSL_GUARDED_BY(mu_);
  std::map<UsageKey, UsageRow> usage_ ABSL_GUARDED_BY(mu_);
  std::map<LoanKey, LoanRow> loans_ ABSL_GUARDED_BY(mu_);
};

absl::Status Mutate(Store& store, int64_t seq, bool drop) {
  auto* memory = dynamic_cast<MemoryStore*>(&store);
  if (memory == nullptr) return absl::InvalidArgumentError("not a memory store");
  return memory->MutateForTest(seq, drop);
}

}  // namespace

std::unique_ptr<Store> NewMemoryStore() { return std::make_unique<MemoryStore>(); }

absl::Status CorruptMemoryJournalForTest(Store& store, int64_t seq) {
  return Mutate(store, seq, /*drop=*/false);
}

absl::Status DropMemoryJournalEntryForTest(Store& store, int64_t seq) {
  return Mutate(store, seq, /*drop=*/true);
}

absl::Status CorruptMemorySnapshotForTest(Store& store, int64_t seq) {
  auto* memory = dynamic_cast<MemoryStore*>(&store);
  if (memory == nullptr) return absl::InvalidArgumentError("not a memory store");
  return memory->CorruptSnapshotForTest(seq);
}

}  // namespace tidegate::ledger
