// `tidegate ledger import-usage`: hourly usage from a CSV (an accounting
// export) written into a ledger no broker holds, so forecasts have history
// from the start. The ledger is taken as a writer takes it: the SQLite
// file's lock (ledger/ledger_lock.h) or, for PostgreSQL, the leader lease,
// so an import and a broker never write the same ledger.
#ifndef TIDEGATE_BROKER_LEDGER_OPS_IMPORT_USAGE_H_
#define TIDEGATE_BROKER_LEDGER_OPS_IMPORT_USAGE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ledger/store.h"

namespace tidegate::ledger_ops {

struct ImportOptions {
  std::string db;
  std::string csv;                          // the file's name, for errors
  std::string team_column = "team";
  std::string team;                         // every row's team, or a filter.
  std::string time_column = "hour_start_s";
  std::string wallclock_column = "wallclock";
  std::string column;                       // -> used
  std::string queued_column;                // -> queued
  std::string resource = "gpu";
  bool create = false;  // make a new ledger when --db is missing
};

struct ParsedUsage {
  std::vector<ledger::UsageRow> rows;  // resource-seconds per hour
  bool from_wallclock = false;         // hours came from the wallclock column
};

// "2020-05-01 13:00" (UTC).
std::string HourText(int64_t ms);

// Reads the CSV text into usage rows. INVALID_ARGUMENT reading
// "FILE:LINE: FIELD: reason".
absl::StatusOr<ParsedUsage> ParseUsageCsv(const std::string& text, const ImportOptions& options);

struct ImportSummary {
  int64_t rows = 0;
  int64_t teams = 0;
  int64_t first_hour_ms = 0;
  int64_t last_hour_ms = 0;
};

// Commits `usage` to options.db in one batch. Errors, each message whole:
//   ABORTED           a broker holds the ledger (its lock or the lease);
//   ALREADY_EXISTS    the ledger has usage of one of these team-hours already
//                     (rows with the same key add up: importing twice doubles);
//   UNAVAILABLE       PostgreSQL cannot be reached or its lease not taken;
//   INTERNAL          reading or committing to the open ledger failed;
//   any other code    the ledger cannot be opened (missing, not a ledger).
absl::StatusOr<ImportSummary> ImportUsage(const ImportOptions& options, const ParsedUsage& usage);

}  // namespace tidegate::ledger_ops

#endif  // TIDEGATE_BROKER_LEDGER_OPS_IMPORT_USAGE_H_
