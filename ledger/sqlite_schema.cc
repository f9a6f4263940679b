#include "ledger/sqlite_schema.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ledger/sqlite_util.h"

namespace tidegate::ledger {
namespace {

// kMigrations[i] takes version i to i+1. Append only.
const char* const kMigrations[] = {
    // 0 -> 1: the tables.
    R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value);
CREATE TABLE journal(
  seq INTEGER PRIMARY KEY,
  at_ms INTEGER NOT NULL,
  kind TEXT NOT NULL,
  payload BLOB NOT NULL,
  checksum INTEGER NOT NULL);
CREATE TABLE snapshots(
  seq INTEGER PRIMARY KEY,
  at_ms INTEGER NOT NULL,
  payload BLOB NOT NULL);
CREATE TABLE jobs(
  job TEXT PRIMARY KEY,
  team TEXT NOT NULL,
  cluster TEXT NOT NULL,
  state TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL,
  admitted_at_ms INTEGER NOT NULL,
  ended_at_ms INTEGER NOT NULL,
  reason TEXT NOT NULL,
  spec BLOB NOT NULL);
CREATE TABLE usage_hourly(
  team TEXT NOT NULL,
  resource TEXT NOT NULL,
  hour_start_ms INTEGER NOT NULL,
  used REAL NOT NULL,
  borrowed REAL NOT NULL,
  lent REAL NOT NULL,
  queued REAL NOT NULL,
  PRIMARY KEY(team, resource, hour_start_ms));
CREATE TABLE loans(
  borrower TEXT NOT NULL,
  lender TEXT NOT NULL,
  resource TEXT NOT NULL,
  day TEXT NOT NULL,
  amount REAL NOT NULL,
  PRIMARY KEY(borrower, lender, resource, day));
)sql",
    // 1 -> 2: the CLI lists jobs in (created_at_ms, job) order, all or by
    // team or state, and loans by lender as well as borrower (the primary key
    // serves the borrower). Each index ends with the sort order, so listing
    // 100k jobs needs no sort.
    R"sql(
CREATE INDEX jobs_by_created ON jobs(created_at_ms, job);
CREATE INDEX jobs_by_team ON jobs(team, created_at_ms, job);
CREATE INDEX jobs_by_state ON jobs(state, created_at_ms, job);
CREATE INDEX loans_by_lender ON loans(lender, day);
)sql",
    // 2 -> 3: a snapshot's checksum, checked on every read, so a flipped bit
    // in one is found rather than served. Rows written before have NULL and
    // are read unchecked.
    R"sql(
ALTER TABLE snapshots ADD COLUMN checksum INTEGER;
)sql",
    // 3 -> 4: snapshots written in parts over several commits, so no one
    // transaction carries the whole state. A row with `parts` set has an
    // empty payload and reads its parts 0..parts-1 in order; rows written
    // before have NULL and hold their payload whole.
    R"sql(
CREATE TABLE snapshot_parts(
  seq INTEGER NOT NULL,
  part INTEGER NOT NULL,
  bytes BLOB NOT NULL,
  PRIMARY KEY(seq, part));
ALTER TABLE snapshots ADD COLUMN parts INTEGER;
)sql",
    // 4 -> 5: jobs_by_state held every row, so each job that ended moved its
    // entry into the 'ended' range, which grows with the whole history: more
    // pages written per commit for a listing nothing on the write path needs.
    // The live states keep an index; ended jobs, most rows of a ledger, are
    // listed from jobs_by_created (or jobs_by_team) in the same order,
    // skipping the few live ones. Rejected rows stay in the index: each is
    // written once, at the refusal, and never moves.
    R"sql(
DROP INDEX jobs_by_state;
CREATE INDEX jobs_live_by_state ON jobs(state, created_at_ms, job) WHERE state <> 'ended';
)sql",
    // 5 -> 6: every new job put an entry into jobs_by_team and
    // jobs_live_by_state, and every job that ended took one out of the
    // latter: a third of the pages a commit wrote, for listings no reader on
    // the broker's path makes (the service lists jobs from its read model;
    // `ledger verify` reads every row). A listing by team or state now reads
    // jobs_by_created in its order and skips the other rows: still no sort,
    // and the index the whole listing needs anyway. Dropping an index frees
    // its pages without reading the table.
    R"sql(
DROP INDEX jobs_by_team;
DROP INDEX jobs_live_by_state;
)sql",
};
static_assert(std::size(kMigrations) == kSchemaVersion);

absl::StatusOr<bool> HasTable(sqlite3* db, const char* sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr);
  if (rc != SQLITE_OK) return SqliteStatus(db, rc, "read sqlite_master");
  rc = sqlite3_step(stmt);
  const bool found = rc == SQLITE_ROW;
  sqlite3_finalize(stmt);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return SqliteStatus(db, rc, "read sqlite_master");
  return found;
}

absl::Status NewerThanBinary(const std::string& path, int64_t version) {
  return absl::FailedPreconditionError(absl::StrCat(
      path, ": ledger schema version ", version, " is newer than this binary's version ",
      kSchemaVersion, "; run a tidegate that knows version ", version, " or later"));
}

}  // namespace

#define TIDEGATE_JOB_COLUMNS                                                                    \
  "SELECT job, team, cluster, state, created_at_ms, admitted_at_ms, ended_at_ms, reason, spec " \
  "FROM jobs "
// Every listing reads jobs_by_created in its order, the filtered ones
// skipping the rows they leave out (sqlite_store_test checks the plans):
// without the named index the planner could scan the table and sort.
constexpr char kJobsAll[] = TIDEGATE_JOB_COLUMNS "ORDER BY created_at_ms, job";
constexpr char kJobsByTeam[] =
    TIDEGATE_JOB_COLUMNS "INDEXED BY jobs_by_created WHERE team = ?1 ORDER BY created_at_ms, job";
constexpr char kJobsByState[] =
    TIDEGATE_JOB_COLUMNS "INDEXED BY jobs_by_created WHERE state = ?2 ORDER BY created_at_ms, job";
constexpr char kJobsByTeamState[] =
    TIDEGATE_JOB_COLUMNS "INDEXED BY jobs_by_created WHERE team = ?1 AND state = ?2 ORDER BY created_at_ms, job";
constexpr char kJobById[] = TIDEGATE_JOB_COLUMNS "WHERE job = ?1";
#undef TIDEGATE_JOB_COLUMNS

const JobListingSql kJobListingSql{kJobsAll, kJobsByTeam, kJobsByState, kJobsByTeamState, kJobById};

// A job's row is written at each change of its state, but its team and
// creation time stay, and the creation time keys jobs_by_created: SQLite
// rewrites an index entry when its column is in the SET list, even to the
// same value, so the usual update leaves them out and rewrites only the row.
// A reused id whose team or creation time differ updates nothing here (the
// WHERE) and is written whole by kRewriteJob.
constexpr char kUpsertJob[] =
    "INSERT INTO jobs(job, team, cluster, state, created_at_ms, admitted_at_ms, ended_at_ms, "
    "reason, spec) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT(job) DO UPDATE SET "
    "cluster = excluded.cluster, state = excluded.state, admitted_at_ms = excluded.admitted_at_ms, "
    "ended_at_ms = excluded.ended_at_ms, reason = excluded.reason, spec = excluded.spec "
    "WHERE team = excluded.team AND created_at_ms = excluded.created_at_ms";
// A job's last row (ended) updates the row its first one inserted: a plain
// UPDATE does that with less work than the upsert, which first builds the
// row to insert and looks for a new rowid before it finds the conflict
// (3 % of a commit's instructions). When it changes nothing (the row is not
// there, or its id was reused) the upsert follows.
constexpr char kUpdateJob[] =
    "UPDATE jobs SET cluster = ?3, state = ?4, admitted_at_ms = ?6, ended_at_ms = ?7, reason = ?8, spec = ?9 "
    "WHERE job = ?1 AND team = ?2 AND created_at_ms = ?5";
constexpr char kRewriteJob[] =
    "UPDATE jobs SET team = ?2, cluster = ?3, state = ?4, created_at_ms = ?5, admitted_at_ms = ?6, "
    "ended_at_ms = ?7, reason = ?8, spec = ?9 WHERE job = ?1";
const JobWriteSql kJobWriteSql{kUpsertJob, kUpdateJob, kRewriteJob};

const char* InsertJournalRowsSql(size_t rows) {
  static const std::vector<std::string>* const sql = [] {
    auto* out = new std::vector<std::string>(kJournalRowsPerInsert + 1);
    for (size_t n = 1; n <= kJournalRowsPerInsert; ++n) {
      std::string& text = (*out)[n];
      text = "INSERT INTO journal(seq, at_ms, kind, payload, checksum) VALUES";
      for (size_t i = 0; i < n; ++i) {
        const size_t at = i * 5;
        absl::StrAppend(&text, i == 0 ? "" : ", ", "(?", at + 1, ", ?", at + 2, ", ?", at + 3, ", ?", at + 4,
                        ", ?", at + 5, ")");
      }
    }
    return out;
  }();
  return (*sql)[rows].c_str();
}

absl::StatusOr<int64_t> ReadSchemaVersion(sqlite3* db, const std::string& path) {
  absl::StatusOr<bool> has_meta =
      HasTable(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'");
  if (!has_meta.ok()) return has_meta.status();
  if (!*has_meta) {
    absl::StatusOr<bool> has_any = HasTable(db, "SELECT 1 FROM sqlite_master LIMIT 1");
    if (!has_any.ok()) return has_any.status();
    if (*has_any) {
      return absl::FailedPreconditionError(
          absl::StrCat(path, " is a SQLite database but not a tidegate ledger (no meta table)"));
    }
    return 0;
  }
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'schema_version'", -1, &stmt,
                              nullptr);
  if (rc != SQLITE_OK) return SqliteStatus(db, rc, "read schema_version");
  rc = sqlite3_step(stmt);
  int64_t version = -1;
  if (rc == SQLITE_ROW && sqlite3_column_type(stmt, 0) == SQLITE_INTEGER) {
    version = sqlite3_column_int64(stmt, 0);
  }
  sqlite3_finalize(stmt);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return SqliteStatus(db, rc, "read schema_version");
  if (version < 1) {
    return absl::FailedPreconditionError(absl::StrCat(path, ": meta has no valid schema_version"));
  }
  return version;
}

absl::Status MigrateSchema(sqlite3* db, const std::string& path) {
  // IMMEDIATE takes the write lock before reading the version, so two
  // processes opening a new file cannot both run step 0.
  if (absl::Status s = Exec(db, "BEGIN IMMEDIATE"); !s.ok()) return s;
  absl::Status status = [&]() -> absl::Status {
    absl::StatusOr<int64_t> version = ReadSchemaVersion(db, path);
    if (!version.ok()) return version.status();
    if (*version > kSchemaVersion) return NewerThanBinary(path, *version);
    for (int64_t v = *version; v < kSchemaVersion; ++v) {
      if (absl::Status s = Exec(db, kMigrations[v]); !s.ok()) {
        return absl::Status(s.code(), absl::StrCat(path, ": migrating schema from version ", v,
                                                   " to ", v + 1, ": ", std::string(s.message())));
      }
    }
    if (*version == kSchemaVersion) return absl::OkStatus();
    return Exec(
        db, absl::StrCat("INSERT INTO meta(key, value) VALUES('schema_version', ", kSchemaVersion,
                         ") ON CONFLICT(key) DO UPDATE SET value = excluded.value"));
  }();
  if (status.ok()) status = Exec(db, "COMMIT");
  if (!status.ok() && sqlite3_get_autocommit(db) == 0) Exec(db, "ROLLBACK").IgnoreError();
  return status;
}

absl::Status CheckSchemaForReading(sqlite3* db, const std::string& path) {
  absl::StatusOr<int64_t> version = ReadSchemaVersion(db, path);
  if (!version.ok()) return version.status();
  if (*version == 0) {
    return absl::FailedPreconditionError(absl::StrCat(path, " is empty: it has no ledger to read"));
  }
  if (*version > kSchemaVersion) return NewerThanBinary(path, *version);
  if (*version < kSchemaVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": ledger schema version ", *version, " is older than this binary's version ",
        kSchemaVersion, "; open it read-write once (start tidegated) to migrate it"));
  }
  return absl::OkStatus();
}

}  // namespace tidegate::ledger
