#include "broker/service/snapshot_capture.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "ledger/store.h"

namespace tidegate::service {
namespace {

// The child's exit statuses, for the parent's message.
constexpr int kChildFailedForTests = 3;
constexpr int kChildCannotSerialize = 4;
constexpr int kChildCannotWrite = 5;

bool WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// The child: only the core's code, malloc and system calls from here on.
[[noreturn]] void RunChild(const core::Broker& broker, int write_fd, pid_t parent, SnapshotChildFault fault) {
  // A signal meant for the broker (a shutdown) must not run its handlers here.
  signal(SIGTERM, SIG_DFL);
  signal(SIGINT, SIG_DFL);
  signal(SIGHUP, SIG_DFL);
  // Nobody reads the snapshot once the broker is gone (it also keeps the
  // broker's files open, e.g. the ledger lock).
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(kChildCannotWrite);  // it died before the line above
  if (fault == SnapshotChildFault::kExit) _exit(kChildFailedForTests);
  while (fault == SnapshotChildFault::kHang) pause();  // until the parent kills it
  std::string bytes;
  if (!broker.Snapshot().SerializeToString(&bytes)) _exit(kChildCannotSerialize);
  // The size first, so the parent tells a whole snapshot from a cut one.
  const uint64_t size = bytes.size();
  char header[sizeof(size)];
  std::memcpy(header, &size, sizeof(size));
  if (!WriteAll(write_fd, header, sizeof(header)) || !WriteAll(write_fd, bytes.data(), bytes.size())) {
    _exit(kChildCannotWrite);
  }
  _exit(0);
}

std::string DescribeExit(int status) {
  if (WIFSIGNALED(status)) return absl::StrCat("was killed by signal ", WTERMSIG(status));
  if (!WIFEXITED(status)) return absl::StrCat("ended with wait status ", status);
  switch (WEXITSTATUS(status)) {
    case kChildFailedForTests: return "was told to fail (a test)";
    case kChildCannotSerialize: return "could not serialize the snapshot";
    case kChildCannotWrite: return "could not write the snapshot into the pipe";
  }
  return absl::StrCat("exited with status ", WEXITSTATUS(status));
}

// Reads until `size` bytes or the end of the pipe; the number read.
size_t ReadUpTo(int fd, char* data, size_t size) {
  size_t got = 0;
  while (got < size) {
    const ssize_t n = read(fd, data + got, size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  return got;
}

// A child's snapshot is at most this big: a larger header is a damaged one.
constexpr uint64_t kMaxSnapshotBytes = uint64_t{64} << 30;

}  // namespace

absl::StatusOr<MappedBytes> MappedBytes::Allocate(size_t size) {
  MappedBytes bytes;
  if (size == 0) return bytes;
  void* data = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (data == MAP_FAILED) {
    return absl::InternalError(absl::StrCat("cannot map ", size, " bytes for a snapshot: ", std::strerror(errno)));
  }
  bytes.data_ = static_cast<char*>(data);
  bytes.size_ = size;
  return bytes;
}

MappedBytes& MappedBytes::operator=(MappedBytes&& other) noexcept {
  if (this != &other) {
    Release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void MappedBytes::Release() {
  if (data_ != nullptr) munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

absl::StatusOr<std::unique_ptr<SnapshotCapture>> SnapshotCapture::Start(const core::Broker& broker, int64_t seq,
                                                                        int64_t at_ms, std::function<void()> on_done,
                                                                        SnapshotChildFault fault) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("snapshot: cannot make a pipe: ", std::strerror(errno)));
  }
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child < 0) {
    const int error = errno;
    close(fds[0]);
    close(fds[1]);
    return absl::InternalError(absl::StrCat("snapshot: cannot fork: ", std::strerror(error)));
  }
  if (child == 0) {
    close(fds[0]);
    RunChild(broker, fds[1], parent, fault);
  }
  close(fds[1]);  // the child holds the only write end: its exit ends the read
  return std::unique_ptr<SnapshotCapture>(new SnapshotCapture(child, fds[0], seq, at_ms, std::move(on_done)));
}

SnapshotCapture::SnapshotCapture(pid_t child, int read_fd, int64_t seq, int64_t at_ms, std::function<void()> on_done)
    : child_(child), read_fd_(read_fd), seq_(seq), at_ms_(at_ms), on_done_(std::move(on_done)), result_(MappedBytes()) {
  reader_ = std::thread([this] { Read(); });
}

SnapshotCapture::~SnapshotCapture() {
  // Abandoned midway (a stop): the child's work is not wanted. Killing it
  // closes the pipe, so the reading thread ends. Under the lock the child is
  // running or a zombie, never reaped, so its pid cannot be another's.
  {
    std::lock_guard<std::mutex> lock(reap_mu_);
    if (!reaped_) kill(child_, SIGKILL);
  }
  if (reader_.joinable()) reader_.join();
}

void SnapshotCapture::Read() {
  const auto started = std::chrono::steady_clock::now();
  // The size, then exactly that many bytes, then the end of the pipe.
  uint64_t size = 0;
  char header[sizeof(size)];
  const bool has_header = ReadUpTo(read_fd_, header, sizeof(header)) == sizeof(header);
  if (has_header) std::memcpy(&size, header, sizeof(size));
  absl::StatusOr<MappedBytes> bytes = MappedBytes();
  size_t got = 0;
  if (has_header && size <= kMaxSnapshotBytes) {
    bytes = MappedBytes::Allocate(size);
    if (bytes.ok()) got = ReadUpTo(read_fd_, bytes->data(), bytes->size());
  }
  char extra = 0;
  const bool trailing = ReadUpTo(read_fd_, &extra, 1) > 0;
  close(read_fd_);  // a child still writing (after a refused header) gets EPIPE
  // Wait without reaping, then reap under the lock the destructor kills under.
  siginfo_t info{};
  while (waitid(P_PID, child_, &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
  }
  int status = 0;
  {
    std::lock_guard<std::mutex> lock(reap_mu_);
    while (waitpid(child_, &status, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    result_ = absl::InternalError(absl::StrCat("the snapshot's child process ", DescribeExit(status)));
  } else if (!bytes.ok()) {
    result_ = bytes.status();
  } else if (!has_header || size > kMaxSnapshotBytes || got != size || trailing) {
    result_ = absl::InternalError(absl::StrCat("the snapshot's child process sent ", got, " bytes after a header of ",
                                               has_header ? absl::StrCat(size) : "none", ", not a whole snapshot"));
  } else {
    checksum_ = ledger::SnapshotChecksum(bytes->view(), seq_, at_ms_);
    result_ = std::move(bytes);
  }
  elapsed_ms_ = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
  done_.store(true, std::memory_order_release);
  if (on_done_) on_done_();
}

absl::StatusOr<MappedBytes> SnapshotCapture::TakeResult() { return std::move(result_); }

}  // namespace tidegate::service
