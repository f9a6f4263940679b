// Thin helpers over the SQLite C API for the ledger: error codes mapped onto
// absl::Status, and a cache of prepared statements (the writer runs the same
// few statements thousands of times a second; preparing costs more than
// running them).
//
// Not thread-safe: one connection, one thread (the Store's rule).
#ifndef TIDEGATE_LEDGER_SQLITE_UTIL_H_
#define TIDEGATE_LEDGER_SQLITE_UTIL_H_

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tidegate::ledger {

// Maps a SQLite result code onto the canonical codes (STYLE.md 3):
// BUSY/LOCKED/IOERR/CANTOPEN -> UNAVAILABLE, FULL -> RESOURCE_EXHAUSTED,
// CORRUPT -> DATA_LOSS, NOTADB/READONLY/CONSTRAINT -> FAILED_PRECONDITION,
// anything else -> INTERNAL. The message is "<what>: <sqlite's message>".
absl::Status SqliteStatus(sqlite3* db, int rc, const std::string& what);

// Runs one or more statements that return no rows (DDL, PRAGMA).
absl::Status Exec(sqlite3* db, const std::string& sql);

// One use of a prepared statement: bind, step, read columns. Resets and
// unbinds the statement when destroyed so the cache can hand it out again.
class Statement {
 public:
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&&) = delete;
  Statement(const Statement&) = delete;
  ~Statement();

  void BindInt(int index, int64_t value);
  void BindReal(int index, double value);
  // Bound without a copy (a 256 KiB snapshot part, every job row's fields):
  // `value` must outlive this Statement, whose destructor unbinds it.
  // Temporaries are refused at compile time.
  void BindText(int index, const std::string& value);
  void BindBlob(int index, const std::string& value);
  void BindText(int index, std::string&& value) = delete;
  void BindBlob(int index, std::string&& value) = delete;

  // true: a row is ready; false: done. An error maps through SqliteStatus.
  absl::StatusOr<bool> Step();
  // Steps to the end, for statements that return no rows.
  absl::Status Run();

  int64_t Int(int column) const;
  double Real(int column) const;
  std::string Text(int column) const;
  std::string Blob(int column) const;
  bool IsNull(int column) const;

 private:
  friend class StatementCache;
  Statement(sqlite3* db, sqlite3_stmt* stmt, bool* in_use, bool owned);

  sqlite3* db_;
  sqlite3_stmt* stmt_;
  bool* in_use_;  // the cache's flag for this statement; null when owned
  bool owned_;    // a one-off statement, finalized on destruction
};

class StatementCache {
 public:
  explicit StatementCache(sqlite3* db) : db_(db) {}
  StatementCache(const StatementCache&) = delete;
  StatementCache& operator=(const StatementCache&) = delete;
  ~StatementCache();  // finalizes every cached statement; call before sqlite3_close

  // The statement for `sql`, keyed by the pointer: pass named constants, not
  // temporaries. A statement already in use (a callback re-entering the store
  // mid-read) gets a one-off copy instead.
  absl::StatusOr<Statement> Get(const char* sql);

 private:
  struct Entry {
    sqlite3_stmt* stmt = nullptr;
    bool in_use = false;
  };
  sqlite3* db_;
  // Heap-allocated so a borrowed Statement's in_use flag stays put when the
  // map rehashes.
  absl::flat_hash_map<const char*, std::unique_ptr<Entry>> entries_;
};

}  // namespace tidegate::ledger

#endif  // TIDEGATE_LEDGER_SQLITE_UTIL_H_
