// One writer per ledger file, whatever path names it. tidegated and
// `tidegate ledger import-usage` hold this lock while they write.
//
// The lock is an exclusive flock(2) on the ledger file itself, so it belongs
// to the file (device and inode), not to a path: a hard link or a symlink to
// a ledger in use finds it taken. (A lock file next to the path, as before,
// let a second broker run on a hard link and fork the journal: SQLite names
// its WAL after the path, so the two brokers did not even share one.)
// flock locks do not interact with SQLite's own fcntl locks on Linux.
//
// Keep the lock until every SQLite connection to the file is closed: closing
// any descriptor of a file drops the process's fcntl locks on it, SQLite's
// included, and this lock holds one descriptor.
//
// Threading: a value; not shared between threads.
#ifndef TIDEGATE_LEDGER_LEDGER_LOCK_H_
#define TIDEGATE_LEDGER_LEDGER_LOCK_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "ledger/store.h"

namespace tidegate::ledger {

class LedgerLock {
 public:
  // Opens `path` for writing (creating an empty file when `create` and it is
  // missing) and takes the lock without waiting. Errors name the path:
  //   NOT_FOUND            the file does not exist (and !create);
  //   UNAVAILABLE          another process holds the lock (a running broker);
  //   FAILED_PRECONDITION  the file system is read-only (EROFS);
  //   PERMISSION_DENIED    the file or its directory may not be written;
  //   INTERNAL             any other errno, named.
  static absl::StatusOr<LedgerLock> Acquire(const std::string& path, bool create);

  LedgerLock(LedgerLock&& other) noexcept;
  LedgerLock& operator=(LedgerLock&& other) noexcept;
  LedgerLock(const LedgerLock&) = delete;
  LedgerLock& operator=(const LedgerLock&) = delete;
  ~LedgerLock();  // releases the lock

  // Hard links to the file (st_nlink); more than one means another path may
  // name this ledger with a WAL of its own.
  int links() const;
  // Bytes in the file now; 0 for a file that holds no ledger yet.
  int64_t size() const;

 private:
  explicit LedgerLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// A SQLite ledger opened for writing under its lock: the lock is declared
// first, so it is released after the store's connections are closed.
struct LockedSqliteLedger {
  LedgerLock lock;
  std::unique_ptr<Store> store;
};

// The one way a writer (tidegated, `tidegate ledger import-usage`) opens a
// SQLite ledger: the file's lock (creating the file when options.create),
// then the store. `create_flag` is the caller's flag that makes a new ledger;
// errors name it. Errors: those of LedgerLock::Acquire (NOT_FOUND reads
// "ledger PATH does not exist; pass FLAG to create a new ledger there"),
// FAILED_PRECONDITION "ledger PATH is empty (0 bytes); pass FLAG ..." for a
// 0-byte file without options.create (a truncated or touched file is not a
// new ledger unless asked), then those of OpenSqliteStore.
absl::StatusOr<LockedSqliteLedger> OpenLockedSqliteLedger(const std::string& path, const SqliteOptions& options,
                                                          const std::string& create_flag);

}  // namespace tidegate::ledger

#endif  // TIDEGATE_LEDGER_LEDGER_LOCK_H_
