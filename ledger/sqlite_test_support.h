// What the SQLite store's tests share (sqlite_store_test.cc,
// sqlite_acked_record_test.cc): a temporary directory, a raw connection to
// the ledger's file for faults an operator or a disk could cause, record
// builders and the fixture.
#ifndef TIDEGATE_LEDGER_SQLITE_TEST_SUPPORT_H_
#define TIDEGATE_LEDGER_SQLITE_TEST_SUPPORT_H_

#include <sqlite3.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ledger/store.h"

namespace tidegate::ledger {

// A fresh directory, removed with everything in it at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "tidegate-ledger-XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string File(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// A plain connection to the same file: what an operator with the sqlite3
// shell, or a disk error, could do behind the store's back.
class RawDb {
 public:
  explicit RawDb(const std::string& path) {
    sqlite3_open(path.c_str(), &db_);
    sqlite3_busy_timeout(db_, 10'000);  // beside a running broker's commits
  }
  ~RawDb() { sqlite3_close(db_); }
  absl::Status Exec(const std::string& sql) {
    char* error = nullptr;
    const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error);
    std::string message = error != nullptr ? error : "";
    sqlite3_free(error);
    return rc == SQLITE_OK ? absl::OkStatus() : absl::InternalError(message);
  }
  // The `column` of every row, as text (e.g. the details of EXPLAIN QUERY PLAN).
  std::vector<std::string> Column(const std::string& sql, int column) {
    sqlite3_stmt* stmt = nullptr;
    std::vector<std::string> out;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) return {"prepare failed"};
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      const unsigned char* text = sqlite3_column_text(stmt, column);
      out.emplace_back(text != nullptr ? reinterpret_cast<const char*>(text) : "");
    }
    sqlite3_finalize(stmt);
    return out;
  }
  // The first column of the first row, as text.
  std::string Query(const std::string& sql) {
    sqlite3_stmt* stmt = nullptr;
    std::string out;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_text(stmt, 0) != nullptr) {
      out = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    }
    sqlite3_finalize(stmt);
    return out;
  }

 private:
  sqlite3* db_ = nullptr;
};

inline JournalRecord Entry(int64_t seq) {
  std::string payload = absl::StrCat("command ", seq);
  return JournalRecord{seq, 1000 * seq, "submit", payload, Checksum(payload)};
}

inline Batch FullBatch(int64_t seq) {
  Batch batch;
  batch.journal = {Entry(seq)};
  batch.jobs = {JobRow{"j1", "alpha", "c1", "admitted", 5, 6, 0, "", "spec"}};
  batch.usage = {UsageRow{"alpha", "gpu", 0, 10, 1, 0, 2}};
  batch.loans = {LoanRow{"alpha", "beta", "gpu", "2024-01-01", 4}};
  batch.snapshot = SnapshotRecord{seq, 1000 * seq, absl::StrCat("state after ", seq)};
  return batch;
}

inline SqliteOptions ReadOnly() {
  SqliteOptions options;
  options.read_only = true;
  return options;
}

class SqliteStoreTest : public testing::Test {
 protected:
  TempDir dir_;
  std::string path_ = dir_.File("ledger.db");
};

}  // namespace tidegate::ledger

#endif  // TIDEGATE_LEDGER_SQLITE_TEST_SUPPORT_H_
