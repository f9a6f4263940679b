// A snapshot of the core taken without holding up the writer.
//
// Building and serializing the core's snapshot takes seconds at 100k+ jobs,
// and it must see one consistent state. fork() gives that state for the cost
// of copying the page tables (tens of ms): the child shares the parent's
// memory copy-on-write, so it sees the core exactly as it was at the fork
// while the parent goes on applying batches. The child builds the snapshot,
// serializes it, writes it into a pipe and _exits; a thread of the parent
// reads the bytes and reaps the child.
//
// The child runs only the core's pure code and malloc (glibc makes malloc
// safe across fork): it never logs, never touches gRPC, the store or a
// mutex another thread may hold at the fork.
//
// Threading: Start and the destructor on the thread that owns the broker;
// Done and TakeResult from that thread too. `on_done` runs on the capture's
// own thread when the result is ready.
#ifndef TIDEGATE_BROKER_SERVICE_SNAPSHOT_CAPTURE_H_
#define TIDEGATE_BROKER_SERVICE_SNAPSHOT_CAPTURE_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "absl/status/statusor.h"
#include "broker/core/broker.h"

namespace tidegate::service {

// Bytes in an anonymous memory mapping of their own, unmapped when dropped.
// A snapshot is tens of MB; from malloc, such a block raises glibc's mmap
// and trim thresholds, after which every arena keeps tens of MB it freed
// (measured: the broker's RSS doubled), so it never goes through malloc.
class MappedBytes {
 public:
  MappedBytes() = default;
  // INTERNAL when mmap fails.
  static absl::StatusOr<MappedBytes> Allocate(size_t size);
  MappedBytes(MappedBytes&& other) noexcept { *this = std::move(other); }
  MappedBytes& operator=(MappedBytes&& other) noexcept;
  MappedBytes(const MappedBytes&) = delete;
  MappedBytes& operator=(const MappedBytes&) = delete;
  ~MappedBytes() { Release(); }

  char* data() { return data_; }
  std::string_view view() const { return std::string_view(data_, size_); }
  size_t size() const { return size_; }

 private:
  void Release();
  char* data_ = nullptr;
  size_t size_ = 0;
};

// What a test makes the child do instead of capturing.
enum class SnapshotChildFault { kNone, kExit, kHang };

class SnapshotCapture {
 public:
  // Forks a child that serializes `broker` as it is now, the state after
  // journal entry `seq`, stamped `at_ms`. `fault` (tests only) makes the
  // child exit with status 3, or wait until killed, before writing anything. INTERNAL when the pipe
  // or the fork fails (nothing is left running).
  static absl::StatusOr<std::unique_ptr<SnapshotCapture>> Start(const core::Broker& broker, int64_t seq,
                                                                int64_t at_ms, std::function<void()> on_done,
                                                                SnapshotChildFault fault = SnapshotChildFault::kNone);
  // Kills the child if it still runs and waits for the reading thread.
  ~SnapshotCapture();
  SnapshotCapture(const SnapshotCapture&) = delete;
  SnapshotCapture& operator=(const SnapshotCapture&) = delete;

  bool Done() const { return done_.load(std::memory_order_acquire); }
  // After Done(): the serialized v1::CoreSnapshot, or INTERNAL saying how the
  // child failed (its exit status or signal, or a short read).
  absl::StatusOr<MappedBytes> TakeResult();
  // After Done() with a result: ledger::SnapshotChecksum of it at (seq, at_ms),
  // computed on the capture's thread.
  uint32_t checksum() const { return checksum_; }
  // Wall time from the fork to the result, for the log.
  int64_t elapsed_ms() const { return elapsed_ms_; }

 private:
  SnapshotCapture(pid_t child, int read_fd, int64_t seq, int64_t at_ms, std::function<void()> on_done);
  void Read();

  const pid_t child_;
  const int read_fd_;
  const int64_t seq_;
  const int64_t at_ms_;
  std::function<void()> on_done_;
  std::atomic<bool> done_{false};
  std::mutex reap_mu_;
  bool reaped_ = false;  // guarded by reap_mu_
  // Written by the reading thread before done_ is set.
  absl::StatusOr<MappedBytes> result_;
  uint32_t checksum_ = 0;
  int64_t elapsed_ms_ = 0;
  std::thread reader_;
};

}  // namespace tidegate::service

#endif  // TIDEGATE_BROKER_SERVICE_SNAPSHOT_CAPTURE_H_
