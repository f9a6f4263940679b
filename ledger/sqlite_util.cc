#include "ledger/sqlite_util.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"

namespace tidegate::ledger {

absl::Status SqliteStatus(sqlite3* db, int rc, const std::string& what) {
  const std::string message =
      absl::StrCat(what, ": ", db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  switch (rc & 0xff) {  // the primary code; extended codes refine it
    case SQLITE_OK:
    case SQLITE_ROW:
    case SQLITE_DONE:
      return absl::OkStatus();
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_PROTOCOL:
      return absl::UnavailableError(message);
    case SQLITE_FULL:
    case SQLITE_NOMEM:
      return absl::ResourceExhaustedError(message);
    case SQLITE_CORRUPT:
      return absl::DataLossError(message);
    case SQLITE_NOTADB:
    case SQLITE_READONLY:
    case SQLITE_CONSTRAINT:
    case SQLITE_PERM:
      return absl::FailedPreconditionError(message);
    default:
      return absl::InternalError(message);
  }
}

absl::Status Exec(sqlite3* db, const std::string& sql) {
  char* error = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
  if (rc == SQLITE_OK) return absl::OkStatus();
  std::string what = error != nullptr ? error : "exec";
  sqlite3_free(error);
  return SqliteStatus(db, rc, absl::StrCat(what, " (in: ", sql.substr(0, 80), ")"));
}

Statement::Statement(sqlite3* db, sqlite3_stmt* stmt, bool* in_use, bool owned)
    : db_(db), stmt_(stmt), in_use_(in_use), owned_(owned) {}

Statement::Statement(Statement&& other) noexcept
    : db_(other.db_),
      stmt_(std::exchange(other.stmt_, nullptr)),
      in_use_(std::exchange(other.in_use_, nullptr)),
      owned_(other.owned_) {}

Statement::~Statement() {
  if (stmt_ == nullptr) return;
  if (owned_) {
    sqlite3_finalize(stmt_);
    return;
  }
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  if (in_use_ != nullptr) *in_use_ = false;
}

void Statement::BindInt(int index, int64_t value) { sqlite3_bind_int64(stmt_, index, value); }
void Statement::BindReal(int index, double value) { sqlite3_bind_double(stmt_, index, value); }
// SQLITE_STATIC: SQLite reads the caller's bytes until the destructor's
// sqlite3_clear_bindings, instead of copying each value into its own buffer.
void Statement::BindText(int index, const std::string& value) {
  sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()), SQLITE_STATIC);
}
void Statement::BindBlob(int index, const std::string& value) {
  // data() is never null, so an empty payload binds as an empty blob, not NULL.
  sqlite3_bind_blob(stmt_, index, value.data(), static_cast<int>(value.size()), SQLITE_STATIC);
}

absl::StatusOr<bool> Statement::Step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return SqliteStatus(db_, rc, std::string(sqlite3_sql(stmt_)).substr(0, 60));
}

absl::Status Statement::Run() {
  for (;;) {
    absl::StatusOr<bool> row = Step();
    if (!row.ok()) return row.status();
    if (!*row) return absl::OkStatus();
  }
}

int64_t Statement::Int(int column) const { return sqlite3_column_int64(stmt_, column); }
double Statement::Real(int column) const { return sqlite3_column_double(stmt_, column); }

std::string Statement::Text(int column) const {
  const auto* text = sqlite3_column_text(stmt_, column);
  const int size = sqlite3_column_bytes(stmt_, column);
  return text == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(text), size);
}

bool Statement::IsNull(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }

std::string Statement::Blob(int column) const {
  const void* blob = sqlite3_column_blob(stmt_, column);
  const int size = sqlite3_column_bytes(stmt_, column);
  return blob == nullptr ? std::string() : std::string(static_cast<const char*>(blob), size);
}

StatementCache::~StatementCache() {
  for (auto& [sql, entry] : entries_) sqlite3_finalize(entry->stmt);
}

absl::StatusOr<Statement> StatementCache::Get(const char* sql) {
  auto prepare = [&](unsigned flags) -> absl::StatusOr<sqlite3_stmt*> {
    sqlite3_stmt* stmt = nullptr;
    const int rc = sqlite3_prepare_v3(db_, sql, -1, flags, &stmt, nullptr);
    if (rc != SQLITE_OK) return SqliteStatus(db_, rc, absl::StrCat("prepare ", sql));
    return stmt;
  };
  std::unique_ptr<Entry>& entry = entries_[sql];
  if (entry == nullptr) {
    absl::StatusOr<sqlite3_stmt*> stmt = prepare(SQLITE_PREPARE_PERSISTENT);
    if (!stmt.ok()) {
      entries_.erase(sql);
      return stmt.status();
    }
    entry = std::make_unique<Entry>();
    entry->stmt = *stmt;
  }
  if (entry->in_use) {
    absl::StatusOr<sqlite3_stmt*> stmt = prepare(0);
    if (!stmt.ok()) return stmt.status();
    return Statement(db_, *stmt, nullptr, /*owned=*/true);
  }
  entry->in_use = true;
  return Statement(db_, entry->stmt, &entry->in_use, /*owned=*/false);
}

}  // namespace tidegate::ledger
