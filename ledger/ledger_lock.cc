#include "ledger/ledger_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace tidegate::ledger {
namespace {

absl::Status FromErrno(int err, const std::string& path, const char* what) {
  const std::string message = absl::StrCat(path, ": cannot ", what, ": ", std::strerror(err));
  switch (err) {
    case ENOENT: return absl::NotFoundError(message);
    case EROFS: return absl::FailedPreconditionError(message);
    case EACCES:
    case EPERM: return absl::PermissionDeniedError(message);
    case EWOULDBLOCK:
      return absl::UnavailableError(
          absl::StrCat(path, " is in use by a running tidegated (it holds the ledger file's lock)"));
    default: return absl::InternalError(message);
  }
}

}  // namespace

absl::StatusOr<LedgerLock> LedgerLock::Acquire(const std::string& path, bool create) {
  // O_RDWR although flock needs no write access: a ledger that cannot be
  // written is reported here, by its errno, not later as a failed commit.
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0644);
  if (fd < 0) {
    if (errno == ENOENT && !create) return absl::NotFoundError(absl::StrCat("ledger ", path, " does not exist"));
    return FromErrno(errno, path, create ? "create or open the ledger for writing" : "open the ledger for writing");
  }
  LedgerLock lock(fd);
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) return FromErrno(errno, path, "lock the ledger");
  return lock;
}

LedgerLock::LedgerLock(LedgerLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

LedgerLock& LedgerLock::operator=(LedgerLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

LedgerLock::~LedgerLock() {
  if (fd_ >= 0) close(fd_);  // releases the flock
}

int LedgerLock::links() const {
  struct stat st {};
  return fstat(fd_, &st) == 0 ? static_cast<int>(st.st_nlink) : 0;
}

int64_t LedgerLock::size() const {
  struct stat st {};
  return fstat(fd_, &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
}

absl::StatusOr<LockedSqliteLedger> OpenLockedSqliteLedger(const std::string& path, const SqliteOptions& options,
                                                          const std::string& create_flag) {
  absl::StatusOr<LedgerLock> lock = LedgerLock::Acquire(path, options.create);
  if (absl::IsNotFound(lock.status())) {
    return absl::NotFoundError(absl::StrCat(lock.status().message(), "; pass ", create_flag,
                                            " to create a new ledger there"));
  }
  if (!lock.ok()) return lock.status();
  if (lock->size() == 0 && !options.create) {
    return absl::FailedPreconditionError(absl::StrCat("ledger ", path, " is empty (0 bytes); pass ", create_flag,
                                                      " to start a new ledger in it"));
  }
  absl::StatusOr<std::unique_ptr<Store>> store = OpenSqliteStore(path, options);
  if (!store.ok()) return store.status();
  return LockedSqliteLedger{*std::move(lock), *std::move(store)};
}

}  // namespace tidegate::ledger
