#include "broker/ledger_ops/import_usage.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "forecast/csv_series.h"
#include "ledger/ledger_lock.h"
#include "ledger/postgres_conn.h"
#include "ledger/postgres_lease.h"
#include "ledger/postgres_store.h"

namespace tidegate::ledger_ops {
namespace {

// The codes ImportUsage gives a meaning of its own; an error opening the
// ledger that happens to carry one becomes INVALID_ARGUMENT (same message).
absl::Status CannotOpen(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kInternal: return absl::InvalidArgumentError(status.message());
    default: return status;
  }
}

// Releases the lease an import of a PostgreSQL ledger took.
struct ImportLease {
  std::unique_ptr<ledger::PgLease> lease;
  int64_t epoch = 0;
  ~ImportLease() {
    if (lease) lease->Release(epoch).IgnoreError();
  }
};

// Brokers sharing a PostgreSQL ledger: the import takes the leader lease for
// itself, so no broker leads (and writes) while it runs, and its one commit
// is fenced like a leader's (ledger/postgres_store.h).
absl::StatusOr<std::unique_ptr<ledger::Store>> OpenPostgresForImport(const ImportOptions& o, ImportLease& held) {
  ledger::PostgresOptions setup;
  setup.create = o.create;
  if (auto migrated = ledger::OpenPostgresStore(o.db, setup); !migrated.ok()) {
    std::string message(migrated.status().message());
    if (absl::IsFailedPrecondition(migrated.status())) message += " (pass --create to make the tables)";
    if (absl::IsUnavailable(migrated.status())) return absl::UnavailableError(message);
    return absl::InvalidArgumentError(message);
  }
  auto lease = ledger::PgLease::Open(o.db);
  absl::StatusOr<std::optional<int64_t>> epoch =
      lease.ok() ? (*lease)->Acquire("tidegate ledger import-usage", "", 60000) : lease.status();
  if (!epoch.ok()) return absl::UnavailableError(epoch.status().message());
  if (!epoch->has_value()) {
    auto info = (*lease)->Read();
    return absl::AbortedError(absl::StrCat("a broker leads ", ledger::RedactConninfo(o.db), " (",
                                           info.ok() ? info->holder : "unknown",
                                           "); stop the brokers, import, then start them again"));
  }
  held.lease = *std::move(lease);
  held.epoch = **epoch;
  ledger::PostgresOptions fenced;
  fenced.create = o.create;
  fenced.fence_epoch = **epoch;
  auto store = ledger::OpenPostgresStore(o.db, fenced);
  if (!store.ok()) return CannotOpen(store.status());
  return store;
}

}  // namespace

std::string HourText(int64_t ms) {
  return absl::FormatTime("%Y-%m-%d %H:%M", absl::FromUnixMillis(ms), absl::UTCTimeZone());
}

// About 105 lines: the header, then one row at a time, each cell checked in
// column order and every error naming the file, line and column.
absl::StatusOr<ParsedUsage> ParseUsageCsv(const std::string& text, const ImportOptions& o) {
  forecast::CsvLines lines(text);
  std::string_view line;
  std::vector<std::string> header;
  while (header.empty() && lines.Next(&line)) {
    if (!line.empty()) header = forecast::SplitCsvLine(line);
  }
  if (header.empty()) return absl::InvalidArgumentError(absl::StrCat(o.csv, ": no header row"));
  auto find = [&](const std::string& name) -> int {
    for (size_t i = 0; i < header.size(); ++i) {
      if (header[i] == name) return static_cast<int>(i);
    }
    return -1;
  };
  std::string columns;
  for (const std::string& h : header) absl::StrAppend(&columns, columns.empty() ? "" : ", ", h);
  auto missing = [&](const std::string& name) {
    return absl::InvalidArgumentError(
        absl::StrCat(o.csv, ":1: ", name, ": no such column (columns: ", columns, ")"));
  };
  const int value_col = find(o.column);
  if (value_col < 0) return missing(o.column);
  const int queued_col = o.queued_column.empty() ? -1 : find(o.queued_column);
  if (!o.queued_column.empty() && queued_col < 0) return missing(o.queued_column);
  const int team_col = find(o.team_column);
  if (team_col < 0 && o.team.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        o.csv, ":1: ", o.team_column, ": no such column; name the team with --team T"));
  }
  ParsedUsage out;
  const int wall_col = o.wallclock_column.empty() ? -1 : find(o.wallclock_column);
  out.from_wallclock = wall_col >= 0;
  const int time_col = find(o.time_column);
  if (!out.from_wallclock && time_col < 0) return missing(o.time_column);

  std::set<std::pair<std::string, int64_t>> seen;
  while (lines.Next(&line)) {
    const int line_no = lines.line_no();
    if (line.empty()) continue;
    const std::vector<std::string> cells = forecast::SplitCsvLine(line);
    if (cells.size() != header.size()) {
      return absl::InvalidArgumentError(absl::StrCat(o.csv, ":", line_no, ": expected ",
                                                     header.size(), " columns, got ", cells.size()));
    }
    const std::string team = team_col >= 0 ? cells[team_col] : o.team;
    if (!o.team.empty() && team != o.team) continue;
    if (team.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(o.csv, ":", line_no, ": ", o.team_column, ": empty team"));
    }
    int64_t hour_ms = 0;
    if (out.from_wallclock) {
      std::string t = cells[wall_col];
      for (char& c : t) {
        if (c == ' ') c = 'T';
      }
      absl::CivilMinute minute;
      if (!absl::ParseCivilTime(t, &minute) || minute.minute() != 0) {
        return absl::InvalidArgumentError(absl::StrCat(o.csv, ":", line_no, ": ", o.wallclock_column,
                                                       ": \"", cells[wall_col],
                                                       "\" is not an hour like 2020-05-01 13:00"));
      }
      hour_ms = absl::ToUnixMillis(absl::FromCivil(minute, absl::UTCTimeZone()));
    } else {
      int64_t seconds = 0;
      if (!absl::SimpleAtoi(cells[time_col], &seconds) || seconds % 3600 != 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            o.csv, ":", line_no, ": ", o.time_column, ": \"", cells[time_col],
            "\" is not the start of an hour in Unix seconds"));
      }
      hour_ms = seconds * 1000;
    }
    auto number = [&](int col, const std::string& name) -> absl::StatusOr<double> {
      double v = 0;
      if (!absl::SimpleAtod(cells[col], &v) || !std::isfinite(v)) {
        return absl::InvalidArgumentError(absl::StrCat(o.csv, ":", line_no, ": ", name, ": \"",
                                                       cells[col], "\" is not a number"));
      }
      if (v < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(o.csv, ":", line_no, ": ", name, ": ", cells[col], " is negative"));
      }
      return v;
    };
    absl::StatusOr<double> used = number(value_col, o.column);
    if (!used.ok()) return used.status();
    double queued = 0;
    if (queued_col >= 0) {
      absl::StatusOr<double> q = number(queued_col, o.queued_column);
      if (!q.ok()) return q.status();
      queued = *q;
    }
    if (!seen.insert({team, hour_ms}).second) {
      return absl::InvalidArgumentError(absl::StrCat(o.csv, ":", line_no, ": team ", team,
                                                     " has a second row for ", HourText(hour_ms)));
    }
    // The ledger keeps resource-seconds per hour: a mean of G GPUs is G × 3600.
    out.rows.push_back(ledger::UsageRow{team, o.resource, hour_ms, *used * 3600, 0, 0, queued * 3600});
  }
  if (out.rows.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        o.csv, ": no rows", o.team.empty() ? "" : absl::StrCat(" for team ", o.team)));
  }
  return out;
}

absl::StatusOr<ImportSummary> ImportUsage(const ImportOptions& o, const ParsedUsage& usage) {
  if (usage.rows.empty()) return absl::InvalidArgumentError("no usage rows to import");
  std::optional<ledger::LockedSqliteLedger> sqlite_ledger;
  ImportLease held_lease;
  std::unique_ptr<ledger::Store> postgres_store;
  if (ledger::IsPostgresLedger(o.db)) {
    auto store = OpenPostgresForImport(o, held_lease);
    if (!store.ok()) return store.status();
    postgres_store = *std::move(store);
  } else {
    // A missing ledger is an error unless asked for: quietly creating one
    // where a broker's ledger was lost would hide the loss.
    ledger::SqliteOptions options;
    options.create = o.create;
    auto opened = ledger::OpenLockedSqliteLedger(o.db, options, "--create");
    if (absl::IsUnavailable(opened.status())) {
      return absl::AbortedError(
          absl::StrCat(opened.status().message(), "; stop the broker, import, then start it again"));
    }
    if (!opened.ok()) return CannotOpen(opened.status());
    sqlite_ledger.emplace(*std::move(opened));
  }
  ledger::Store& store = postgres_store ? *postgres_store : *sqlite_ledger->store;
  // Rows with the same key add up in the ledger: importing an hour twice
  // would double it, so hours the ledger already has are refused.
  std::map<std::string, std::set<int64_t>> by_team;
  for (const ledger::UsageRow& r : usage.rows) by_team[r.team].insert(r.hour_start_ms);
  for (const auto& [team, hours] : by_team) {
    auto existing = store.Usage(team, *hours.begin());
    if (!existing.ok()) return absl::InternalError(existing.status().message());
    for (const ledger::UsageRow& r : *existing) {
      if (r.resource == o.resource && hours.count(r.hour_start_ms)) {
        return absl::AlreadyExistsError(absl::StrCat(
            ledger::RedactConninfo(o.db), " already has ", o.resource, " usage of team ", team, " at ",
            HourText(r.hour_start_ms), " UTC; importing would add to it (import each hour once)"));
      }
    }
  }
  ledger::Batch batch;
  batch.usage = usage.rows;
  if (absl::Status st = store.Commit(batch); !st.ok()) return absl::InternalError(st.message());
  ImportSummary summary;
  summary.rows = static_cast<int64_t>(usage.rows.size());
  summary.teams = static_cast<int64_t>(by_team.size());
  summary.first_hour_ms = summary.last_hour_ms = usage.rows.front().hour_start_ms;
  for (const ledger::UsageRow& r : usage.rows) {
    summary.first_hour_ms = std::min(summary.first_hour_ms, r.hour_start_ms);
    summary.last_hour_ms = std::max(summary.last_hour_ms, r.hour_start_ms);
  }
  return summary;
}

}  // namespace tidegate::ledger_ops
