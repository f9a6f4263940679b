#include "ledger/acked_seq.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "ledger/store.h"

namespace tidegate::ledger {
namespace {

std::string Slot(int64_t seq) {
  const std::string body = absl::StrCat("acked ", seq);
  std::string slot = absl::StrFormat("%s %08x", body, Checksum(body));
  slot.resize(AckedSeqFile::kSlotBytes - 1, ' ');
  slot.push_back('\n');
  return slot;
}

std::optional<int64_t> ParseSlot(absl::string_view slot) {
  std::vector<absl::string_view> parts = absl::StrSplit(slot, ' ', absl::SkipEmpty());
  int64_t seq = 0;
  uint32_t crc = 0;
  if (parts.size() < 3 || parts[0] != "acked" || !absl::SimpleAtoi(parts[1], &seq) ||
      !absl::SimpleHexAtoi(absl::StripSuffix(parts[2], "\n"), &crc)) {
    return std::nullopt;
  }
  if (Checksum(absl::StrCat("acked ", seq)) != crc) return std::nullopt;
  return seq;
}

absl::Status Errno(const std::string& path, const char* what) {
  return absl::UnavailableError(absl::StrCat(path, ": cannot ", what, ": ", std::strerror(errno)));
}

}  // namespace

std::string AckedSeqPath(const std::string& ledger_path) {
  std::error_code ec;
  std::filesystem::path resolved = std::filesystem::canonical(ledger_path, ec);
  return (ec ? ledger_path : resolved.string()) + ".acked";
}

absl::StatusOr<std::optional<int64_t>> ReadAckedSeq(const std::string& ledger_path) {
  return ReadAckedSeqAt(AckedSeqPath(ledger_path));
}

absl::StatusOr<std::optional<int64_t>> ReadAckedSeqAt(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    return Errno(path, "open");
  }
  char buf[2 * AckedSeqFile::kSlotBytes];
  const ssize_t n = pread(fd, buf, sizeof buf, 0);
  close(fd);
  if (n < 0) return Errno(path, "read");
  std::optional<int64_t> best;
  for (ssize_t at = 0; at + AckedSeqFile::kSlotBytes <= n; at += AckedSeqFile::kSlotBytes) {
    std::optional<int64_t> seq = ParseSlot(absl::string_view(buf + at, AckedSeqFile::kSlotBytes));
    if (seq.has_value() && (!best.has_value() || *seq > *best)) best = seq;
  }
  return best;
}

std::string JournalBehindRecord(const std::string& ledger_path, int64_t last_seq, int64_t acked) {
  return absl::StrCat(
      "ledger ", ledger_path, ": the journal ends at seq ", last_seq, " but seq ", acked,
      " was acknowledged (", AckedSeqPath(ledger_path), "): acknowledged commits are missing, "
      "most likely with a deleted or damaged WAL (", ledger_path,
      "-wal). Restore the ledger with its WAL; to accept the loss (e.g. a ledger restored from a "
      "backup on purpose), remove ", AckedSeqPath(ledger_path));
}

absl::StatusOr<AckedSeqFile> AckedSeqFile::Open(const std::string& ledger_path, bool sync, bool reset) {
  return OpenAt(AckedSeqPath(ledger_path), sync, reset);
}

absl::StatusOr<AckedSeqFile> AckedSeqFile::OpenAt(const std::string& path, bool sync, bool reset) {
  std::optional<int64_t> existing;
  if (!reset) {
    absl::StatusOr<std::optional<int64_t>> read = ReadAckedSeqAt(path);
    if (!read.ok()) return read.status();
    existing = *read;
  }
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Errno(path, "open");
  AckedSeqFile file(fd, sync, 0);
  // Both slots hold the same seq to start with; Record then alternates.
  const int64_t start = existing.value_or(0);
  const std::string slot = Slot(start);
  const std::string both = slot + slot;
  if (pwrite(fd, both.data(), both.size(), 0) != static_cast<ssize_t>(both.size())) return Errno(path, "write");
  if (sync && fdatasync(fd) != 0) return Errno(path, "sync");
  file.recorded_ = start;
  return file;
}

AckedSeqFile::AckedSeqFile(AckedSeqFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      sync_(other.sync_),
      recorded_(other.recorded_),
      next_slot_(other.next_slot_) {}

AckedSeqFile::~AckedSeqFile() {
  if (fd_ >= 0) close(fd_);
}

absl::Status AckedSeqFile::Record(int64_t seq) {
  if (seq <= recorded_) return absl::OkStatus();
  const std::string slot = Slot(seq);
  if (pwrite(fd_, slot.data(), slot.size(), static_cast<off_t>(next_slot_) * kSlotBytes) !=
      static_cast<ssize_t>(slot.size())) {
    return absl::UnavailableError(absl::StrCat("cannot write the acknowledged seq: ", std::strerror(errno)));
  }
  if (sync_ && fdatasync(fd_) != 0) {
    return absl::UnavailableError(absl::StrCat("cannot sync the acknowledged seq: ", std::strerror(errno)));
  }
  recorded_ = seq;
  next_slot_ = 1 - next_slot_;
  return absl::OkStatus();
}

AckedSeqRecorder::AckedSeqRecorder(std::function<absl::Status(int64_t)> record,
                                   std::chrono::steady_clock::duration gap)
    : record_(std::move(record)), gap_(gap), thread_([this] { Run(); }) {}

AckedSeqRecorder::AckedSeqRecorder(AckedSeqFile file)
    : AckedSeqRecorder([file = std::make_shared<AckedSeqFile>(std::move(file))](int64_t seq) {
        return file->Record(seq);
      }) {}

AckedSeqRecorder::~AckedSeqRecorder() { Close(); }

bool AckedSeqRecorder::Advance(int64_t seq) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closing_) return false;
    if (seq <= latest_) return true;
    latest_ = seq;
  }
  wake_.notify_one();
  return true;
}

void AckedSeqRecorder::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait(lock, [this] { return closing_ || latest_ > taken_; });
    if (closing_) return;  // Close records what is left
    // Everything advanced while the previous sync ran is coalesced here.
    taken_ = latest_;
    const int64_t seq = taken_;
    lock.unlock();
    record_(seq).IgnoreError();
    lock.lock();
    // What commits meanwhile waits out the gap and is coalesced too. Only
    // Close wakes this wait, so a commit does not wake the thread.
    closing_wake_.wait_for(lock, gap_, [this] { return closing_; });
  }
}

void AckedSeqRecorder::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closing_) return;
    closing_ = true;
  }
  wake_.notify_one();
  closing_wake_.notify_one();
  thread_.join();
  // The thread is gone: no other record_ runs now.
  if (latest_ > taken_) {
    taken_ = latest_;
    record_(taken_).IgnoreError();
  }
}

}  // namespace tidegate::ledger
