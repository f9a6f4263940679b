// The PostgreSQL ledger's tables and their forward migrations (the same
// tables as the SQLite ledger, sqlite_schema.h, plus the leader lease).
#ifndef TIDEGATE_LEDGER_POSTGRES_SCHEMA_H_
#define TIDEGATE_LEDGER_POSTGRES_SCHEMA_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "ledger/postgres_conn.h"

namespace tidegate::ledger {

// 0 when the database has no ledger tables; FAILED_PRECONDITION when it has
// a tidegate_meta table without a version.
absl::StatusOr<int64_t> ReadPostgresSchemaVersion(PgConnection& db);

// Brings the database to kPostgresSchemaVersion in one transaction, under a
// session advisory lock so brokers starting together migrate once.
// FAILED_PRECONDITION naming both versions when the database is newer.
absl::Status MigratePostgresSchema(PgConnection& db);

// For readers: OK only at kPostgresSchemaVersion.
absl::Status CheckPostgresSchemaForReading(PgConnection& db);

}  // namespace tidegate::ledger

#endif  // TIDEGATE_LEDGER_POSTGRES_SCHEMA_H_
