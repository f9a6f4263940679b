// Periodic snapshots off the writer's path: after a commit that reaches the
// next snapshot_every entries and the journal share of the last snapshot's
// size (snapshot_journal_ratio), a child process captures the state just committed
// (snapshot_capture.h); once its bytes are here they are written in parts,
// one per commit (riding on the writer's own batches, or alone when it is
// idle), and the row naming the parts last. A crash midway leaves parts
// without a row, which recovery never reads and the next row deletes.
#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "broker/service/core_loop.h"
#include "spdlog/spdlog.h"

namespace tidegate::service {

bool CoreLoop::SnapshotDue() const {
  if (seq_ - last_snapshot_seq_ < options_.snapshot_every) return false;
  // A snapshot costs writing its whole size; waiting for a journal of a
  // share of that size keeps the cost per journal byte flat as the state
  // grows, where a fixed count of entries would write it ever more often
  // relative to the work done.
  return static_cast<double>(journal_bytes_since_snapshot_) >=
         options_.snapshot_journal_ratio * static_cast<double>(snapshot_bytes_);
}

void CoreLoop::SnapshotNotTaken() {
  journal_bytes_since_snapshot_ += journal_bytes_before_capture_;
  journal_bytes_before_capture_ = 0;
}

void CoreLoop::MaybeStartSnapshot(core::Time now) {
  if (!SnapshotDue()) return;
  if (capture_ != nullptr || snapshot_parts_.has_value() || core_dirty_) return;
  // Due or not, the next attempt comes after another snapshot_every entries.
  last_snapshot_seq_ = seq_;
  journal_bytes_before_capture_ = journal_bytes_since_snapshot_;
  journal_bytes_since_snapshot_ = 0;
  SnapshotChildFault fault = SnapshotChildFault::kNone;
  for (int n = fail_snapshot_children_.load(); n > 0;) {
    if (fail_snapshot_children_.compare_exchange_weak(n, n - 1)) {
      fault = snapshot_child_fault_.load();
      break;
    }
  }
  auto wake = [this] {
    absl::MutexLock lock(&mu_);
    snapshot_captured_ = true;
  };
  const auto fork_started = std::chrono::steady_clock::now();
  absl::StatusOr<std::unique_ptr<SnapshotCapture>> started = SnapshotCapture::Start(*broker_, seq_, now, wake, fault);
  capture_fork_us_ = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - fork_started).count();
  if (!started.ok()) {
    SnapshotNotTaken();
    snapshot_failures_.fetch_add(1, std::memory_order_relaxed);
    spdlog::warn("ledger: snapshot at seq {} not taken ({}); the next is tried after {} more journal entries",
                 seq_, std::string(started.status().message()), options_.snapshot_every);
    return;
  }
  capture_ = *std::move(started);
  capture_seq_ = seq_;
  capture_at_ms_ = now;
}

void CoreLoop::CollectSnapshot() {
  if (capture_ == nullptr) return;
  if (!capture_->Done()) {
    if (clock_->NowMs() - capture_at_ms_ > options_.snapshot_capture_timeout_ms) {
      AbandonSnapshot(absl::StrCat("its capture ran over ", options_.snapshot_capture_timeout_ms,
                                   " ms and its child was killed; the next is tried after ",
                                   options_.snapshot_every, " more journal entries"));
    }
    return;
  }
  std::unique_ptr<SnapshotCapture> capture = std::move(capture_);
  absl::StatusOr<MappedBytes> bytes = capture->TakeResult();
  if (!bytes.ok()) {
    SnapshotNotTaken();
    snapshot_failures_.fetch_add(1, std::memory_order_relaxed);
    spdlog::warn("ledger: snapshot at seq {} failed: {}; the ledger recovers from the previous snapshot and the "
                 "journal, and the next snapshot is tried after {} more journal entries",
                 capture_seq_, std::string(bytes.status().message()), options_.snapshot_every);
    return;
  }
  SnapshotInParts parts;
  parts.seq = capture_seq_;
  parts.at_ms = capture_at_ms_;
  parts.payload = *std::move(bytes);
  parts.checksum = capture->checksum();
  const int64_t part_bytes = std::max<int64_t>(1, options_.snapshot_part_bytes);
  parts.parts = std::max<int64_t>(1, (static_cast<int64_t>(parts.payload.size()) + part_bytes - 1) / part_bytes);
  parts.capture_ms = capture->elapsed_ms();
  parts.fork_us = capture_fork_us_;
  snapshot_parts_ = std::move(parts);
}

void CoreLoop::AddSnapshotParts(ledger::Batch* out) {
  parts_in_last_batch_ = false;
  if (!snapshot_parts_.has_value()) return;
  const SnapshotInParts& s = *snapshot_parts_;
  const int64_t part_bytes = std::max<int64_t>(1, options_.snapshot_part_bytes);
  const size_t at = static_cast<size_t>(s.next * part_bytes);
  out->snapshot_parts.push_back(ledger::SnapshotPart{
      s.seq, s.next,
      at < s.payload.size() ? std::string(s.payload.view().substr(at, static_cast<size_t>(part_bytes))) : std::string()});
  if (s.next + 1 == s.parts) out->parted_snapshot = ledger::PartedSnapshot{s.seq, s.at_ms, s.parts, s.checksum};
  parts_in_last_batch_ = true;
}

void CoreLoop::SnapshotPartsCommitted(const ledger::Batch& committed) {
  if (!snapshot_parts_.has_value() || committed.snapshot_parts.empty()) return;
  SnapshotInParts& s = *snapshot_parts_;
  s.next += static_cast<int64_t>(committed.snapshot_parts.size());
  if (!committed.parted_snapshot.has_value()) return;
  snapshot_row_seq_ = std::max(snapshot_row_seq_, s.seq);
  snapshot_bytes_ = static_cast<int64_t>(s.payload.size());
  spdlog::info("ledger: snapshot at seq {} written ({:.1f} MB in {} parts after {:.1f} MB of journal; the writer "
               "forked in {:.1f} ms, the child captured it in {} ms)",
               s.seq, static_cast<double>(s.payload.size()) / 1e6, s.parts,
               static_cast<double>(journal_bytes_before_capture_) / 1e6, s.fork_us / 1000.0, s.capture_ms);
  journal_bytes_before_capture_ = 0;
  snapshot_parts_.reset();
}

void CoreLoop::WriteSnapshotPartAlone() {
  if (!snapshot_parts_.has_value() || parts_in_last_batch_) {
    parts_in_last_batch_ = false;
    return;
  }
  ledger::Batch out;
  AddSnapshotParts(&out);
  parts_in_last_batch_ = false;
  if (absl::Status s = store_->Commit(out); !s.ok()) {
    // Retrying at once would spin on a ledger that refuses writes; the next
    // snapshot is due after another snapshot_every entries.
    AbandonSnapshot(std::string(s.message()));
    return;
  }
  SnapshotPartsCommitted(out);
}

void CoreLoop::AbandonSnapshot(const std::string& why) {
  const int64_t seq = snapshot_parts_.has_value() ? snapshot_parts_->seq : capture_seq_;
  if (!snapshot_parts_.has_value() && capture_ == nullptr) return;
  capture_.reset();  // kills a child still at work
  snapshot_parts_.reset();
  SnapshotNotTaken();
  if (why.empty()) return;
  snapshot_failures_.fetch_add(1, std::memory_order_relaxed);
  spdlog::warn("ledger: snapshot at seq {} abandoned: {}", seq, why);
}

}  // namespace tidegate::service
