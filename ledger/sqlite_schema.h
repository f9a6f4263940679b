// The SQLite ledger's schema and its forward migrations.
//
// The version lives in meta(key = 'schema_version'). Migration step i takes a
// file from version i to i+1; steps are only ever appended, never edited,
// because files written by older binaries exist. All pending steps run in one
// transaction, so a crash mid-migration leaves the old version intact.
//
//   v1  meta, journal, snapshots, jobs, usage_hourly, loans
//   v2  indexes for the queries: jobs in creation order (all, by team, by state),
//       loans by lender
//   v3  snapshots.checksum (store.h SnapshotChecksum); NULL on older rows
//   v4  snapshot_parts and snapshots.parts (store.h SnapshotPart); NULL on
//       older rows, which hold their payload whole
#ifndef TIDEGATE_LEDGER_SQLITE_SCHEMA_H_
#define TIDEGATE_LEDGER_SQLITE_SCHEMA_H_

#include <sqlite3.h>

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tidegate::ledger {

// The version this binary writes.
inline constexpr int64_t kSchemaVersion = 4;

// The file's version: 0 for an empty file. FAILED_PRECONDITION when the file
// has tables but no meta table (some other program's database).
absl::StatusOr<int64_t> ReadSchemaVersion(sqlite3* db, const std::string& path);

// Brings a writable file to kSchemaVersion in one BEGIN IMMEDIATE
// transaction. FAILED_PRECONDITION naming both versions when the file is newer
// than this binary.
absl::Status MigrateSchema(sqlite3* db, const std::string& path);

// For a read-only connection: OK only when the file is at kSchemaVersion
// (a read-only connection cannot migrate), else FAILED_PRECONDITION saying why.
absl::Status CheckSchemaForReading(sqlite3* db, const std::string& path);

}  // namespace tidegate::ledger

#endif  // TIDEGATE_LEDGER_SQLITE_SCHEMA_H_
