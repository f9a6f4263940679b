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
//   v5  jobs_by_state replaced by jobs_live_by_state, which leaves out ended
//       jobs (fewer pages written per commit)
//   v6  jobs_by_team and jobs_live_by_state dropped: no reader on the
//       broker's path, two b-trees written by every commit
#ifndef TIDEGATE_LEDGER_SQLITE_SCHEMA_H_
#define TIDEGATE_LEDGER_SQLITE_SCHEMA_H_

#include <sqlite3.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tidegate::ledger {

// The version this binary writes.
inline constexpr int64_t kSchemaVersion = 6;

// The statements that read the jobs table (sqlite_store.cc), kept beside the
// indexes they need; the test checks each plan reads an index in its order.
// ?1 is the team, ?2 the state; by_id binds the job as ?1.
struct JobListingSql {
  const char* all;
  const char* by_team;
  const char* by_state;
  const char* by_team_state;
  const char* by_id;
};
extern const JobListingSql kJobListingSql;

// The statements that write a job's row (sqlite_store.cc), beside the
// indexes whose entries they take care not to rewrite. Each binds ?1..?9 to
// job, team, cluster, state, created_at_ms, admitted_at_ms, ended_at_ms,
// reason, spec.
struct JobWriteSql {
  const char* upsert;        // a new row, or a later row of the same job
  const char* update_ended;  // a job's ended row, in place (changes nothing when it has no row)
  const char* rewrite;       // every column, for an id reused by another job
};
extern const JobWriteSql kJobWriteSql;

// "INSERT INTO journal(...) VALUES(?1, ..., ?5), (?6, ...)" for `rows` records,
// 1 <= rows <= kJournalRowsPerInsert, record i binding ?5i+1..?5i+5 (seq,
// at_ms, kind, payload, checksum). Built once: the address is stable, as
// StatementCache's key needs.
inline constexpr size_t kJournalRowsPerInsert = 16;
const char* InsertJournalRowsSql(size_t rows);

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
