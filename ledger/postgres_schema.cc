#include "ledger/postgres_schema.h"

#include <iterator>

#include "absl/strings/str_cat.h"
#include "ledger/postgres_store.h"

namespace tidegate::ledger {
namespace {

// kMigrations[i] takes version i to i+1. Append only. Tables carry a
// tidegate_ prefix only for the meta table, so the others read as in the
// SQLite ledger; a deployment that shares a database puts them in a schema
// of their own (search_path in the conninfo).
const char* const kMigrations[] = {
    // 0 -> 1: the SQLite ledger's tables at its version 3, the epoch each
    // journal entry was written under, and the leader lease (one row).
    R"sql(
CREATE TABLE tidegate_meta(key TEXT PRIMARY KEY, value BIGINT NOT NULL);
CREATE TABLE journal(
  seq BIGINT PRIMARY KEY,
  at_ms BIGINT NOT NULL,
  kind TEXT NOT NULL,
  payload BYTEA NOT NULL,
  checksum BIGINT NOT NULL,
  epoch BIGINT NOT NULL DEFAULT 0);
CREATE TABLE snapshots(
  seq BIGINT PRIMARY KEY,
  at_ms BIGINT NOT NULL,
  payload BYTEA NOT NULL,
  checksum BIGINT);
CREATE TABLE jobs(
  job TEXT PRIMARY KEY,
  team TEXT NOT NULL,
  cluster TEXT NOT NULL,
  state TEXT NOT NULL,
  created_at_ms BIGINT NOT NULL,
  admitted_at_ms BIGINT NOT NULL,
  ended_at_ms BIGINT NOT NULL,
  reason TEXT NOT NULL,
  spec BYTEA NOT NULL);
CREATE INDEX jobs_by_created ON jobs(created_at_ms, job);
CREATE INDEX jobs_by_team ON jobs(team, created_at_ms, job);
CREATE INDEX jobs_by_state ON jobs(state, created_at_ms, job);
CREATE TABLE usage_hourly(
  team TEXT NOT NULL,
  resource TEXT NOT NULL,
  hour_start_ms BIGINT NOT NULL,
  used DOUBLE PRECISION NOT NULL,
  borrowed DOUBLE PRECISION NOT NULL,
  lent DOUBLE PRECISION NOT NULL,
  queued DOUBLE PRECISION NOT NULL,
  PRIMARY KEY(team, resource, hour_start_ms));
CREATE TABLE loans(
  borrower TEXT NOT NULL,
  lender TEXT NOT NULL,
  resource TEXT NOT NULL,
  day TEXT NOT NULL,
  amount DOUBLE PRECISION NOT NULL,
  PRIMARY KEY(borrower, lender, resource, day));
CREATE INDEX loans_by_lender ON loans(lender, day);
CREATE TABLE leader_lease(
  id INT PRIMARY KEY CHECK (id = 1),
  holder TEXT NOT NULL,
  address TEXT NOT NULL,
  epoch BIGINT NOT NULL,
  since TIMESTAMPTZ NOT NULL,
  expires_at TIMESTAMPTZ NOT NULL);
INSERT INTO leader_lease VALUES(1, '', '', 0, '-infinity', '-infinity');
)sql",
    // 1 -> 2: snapshots written in parts over several commits (the SQLite
    // ledger's version 4): a row with `parts` set reads its parts in order.
    R"sql(
CREATE TABLE snapshot_parts(
  seq BIGINT NOT NULL,
  part BIGINT NOT NULL,
  bytes BYTEA NOT NULL,
  PRIMARY KEY(seq, part));
ALTER TABLE snapshots ADD COLUMN parts BIGINT;
)sql",
};
static_assert(std::size(kMigrations) == kPostgresSchemaVersion);

// Any 64-bit key: serializes migrations of one database. A session lock,
// taken before the transaction begins, so the transaction's catalog snapshot
// already shows the tables a broker that migrated first created.
constexpr char kMigrationLock[] = "SELECT pg_advisory_lock(7165646567617465)";
constexpr char kMigrationUnlock[] = "SELECT pg_advisory_unlock(7165646567617465)";

absl::Status NewerThanBinary(const std::string& name, int64_t version) {
  return absl::FailedPreconditionError(absl::StrCat(
      "PostgreSQL ledger ", name, ": schema version ", version, " is newer than this binary's version ",
      kPostgresSchemaVersion, "; run a tidegate that knows version ", version, " or later"));
}

}  // namespace

absl::StatusOr<int64_t> ReadPostgresSchemaVersion(PgConnection& db) {
  absl::StatusOr<PgRows> meta = db.Exec("SELECT to_regclass('tidegate_meta') IS NOT NULL");
  if (!meta.ok()) return meta.status();
  if (meta->Text(0, 0) != "t") return 0;
  absl::StatusOr<PgRows> version = db.Exec("SELECT value FROM tidegate_meta WHERE key = 'schema_version'");
  if (!version.ok()) return version.status();
  if (version->size() == 0 || version->Int(0, 0) < 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("PostgreSQL ledger ", db.name(), ": tidegate_meta has no valid schema_version"));
  }
  return version->Int(0, 0);
}

absl::Status MigratePostgresSchema(PgConnection& db) {
  if (absl::StatusOr<PgRows> lock = db.Exec(kMigrationLock); !lock.ok()) return lock.status();
  absl::Status migrated = db.InTransaction([&]() -> absl::Status {
    absl::StatusOr<int64_t> version = ReadPostgresSchemaVersion(db);
    if (!version.ok()) return version.status();
    if (*version > kPostgresSchemaVersion) return NewerThanBinary(db.name(), *version);
    for (int64_t v = *version; v < kPostgresSchemaVersion; ++v) {
      if (absl::Status step = db.ExecScript(kMigrations[v]); !step.ok()) {
        return absl::Status(step.code(),
                            absl::StrCat("migrating the PostgreSQL ledger schema from version ", v, " to ", v + 1,
                                         ": ", step.message()));
      }
    }
    if (*version == kPostgresSchemaVersion) return absl::OkStatus();
    return db
        .Exec("INSERT INTO tidegate_meta(key, value) VALUES('schema_version', $1) "
              "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
              PgParams().Int(kPostgresSchemaVersion))
        .status();
  });
  db.Exec(kMigrationUnlock).IgnoreError();  // a lost connection drops it anyway
  return migrated;
}

absl::Status CheckPostgresSchemaForReading(PgConnection& db) {
  absl::StatusOr<int64_t> version = ReadPostgresSchemaVersion(db);
  if (!version.ok()) return version.status();
  if (*version == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("PostgreSQL ledger ", db.name(), " has no ledger tables: nothing to read"));
  }
  if (*version > kPostgresSchemaVersion) return NewerThanBinary(db.name(), *version);
  if (*version < kPostgresSchemaVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        "PostgreSQL ledger ", db.name(), ": schema version ", *version, " is older than this binary's version ",
        kPostgresSchemaVersion, "; start a tidegated once to migrate it"));
  }
  return absl::OkStatus();
}

}  // namespace tidegate::ledger
