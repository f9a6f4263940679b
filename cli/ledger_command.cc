#include "cli/ledger_command.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "broker/service/verify.h"
#include "cli/exit_codes.h"
#include "forecast/csv_series.h"
#include "ledger/acked_seq.h"
#include "ledger/ledger_lock.h"
#include "ledger/postgres_conn.h"
#include "ledger/postgres_lease.h"
#include "ledger/postgres_store.h"
#include "nlohmann/json.hpp"

namespace tidegate::cli {
namespace {

struct VerifyOptions {
  std::string db;
  std::string output = "table";
};

int RunVerify(const VerifyOptions& o, const Io& io) {
  const bool postgres = ledger::IsPostgresLedger(o.db);
  if (!postgres && !std::filesystem::exists(o.db)) {
    *io.err << "tidegate: ledger verify: --db " << o.db << ": no such file\n";
    return kExitBadInput;
  }
  ledger::SqliteOptions options;
  options.read_only = true;
  ledger::PostgresOptions snapshot;  // PostgreSQL: one consistent view while a leader writes
  snapshot.read_only = true;
  snapshot.single_snapshot = true;
  auto store = postgres ? ledger::OpenPostgresStore(o.db, snapshot) : ledger::OpenSqliteStore(o.db, options);
  if (!store.ok()) {
    *io.err << "tidegate: ledger verify: " << store.status().message() << "\n";
    return absl::IsUnavailable(store.status()) ? kExitUnavailable : kExitBadInput;
  }
  auto report = service::VerifyLedger(**store);
  if (!report.ok()) {
    *io.err << "tidegate: ledger verify: " << report.status().message() << "\n";
    return kExitBadInput;
  }
  // Brokers sharing a PostgreSQL ledger: a deposed leader's commit after
  // a newer leader's would show as an epoch going back (postgres_store.h).
  if (postgres) {
    auto epochs = ledger::ReadJournalEpochs(o.db);
    if (!epochs.ok()) {
      *io.err << "tidegate: ledger verify: " << epochs.status().message() << "\n";
      return kExitUnavailable;
    }
    for (size_t i = 1; i < epochs->size(); ++i) {
      if ((*epochs)[i].second < (*epochs)[i - 1].second) {
        report->problems.push_back(absl::StrCat("journal seq ", (*epochs)[i].first, " was written under lease epoch ",
                                                (*epochs)[i].second, ", after seq ", (*epochs)[i - 1].first,
                                                " under epoch ", (*epochs)[i - 1].second,
                                                ": a deposed leader committed"));
      }
    }
  }
  // Commits the journal lost with its WAL leave no trace inside the file.
  auto acked = postgres ? absl::StatusOr<std::optional<int64_t>>(std::nullopt) : ledger::ReadAckedSeq(o.db);
  auto last = (*store)->LastSeq();
  if (acked.ok() && acked->has_value() && last.ok() && **acked > *last) {
    report->problems.push_back(ledger::JournalBehindRecord(o.db, *last, **acked));
  }
  if (o.output == "json") {
    nlohmann::json j;
    j["db"] = ledger::RedactConninfo(o.db);
    j["entries"] = report->entries;
    j["jobs"] = report->jobs;
    j["ok"] = report->problems.empty();
    j["problems"] = report->problems;
    *io.out << j.dump() << "\n";
  } else {
    *io.out << "ledger " << ledger::RedactConninfo(o.db) << ": replayed " << report->entries << " journal entries, " << report->jobs
            << " live jobs\n";
    for (const auto& p : report->problems) *io.out << "  difference: " << p << "\n";
    *io.out << (report->problems.empty() ? "ok: the replay matches the stored state\n"
                                         : "FAILED: the replay does not match the stored state\n");
  }
  return report->problems.empty() ? kExitOk : kExitCheckFailed;
}

// ---------------------------------------------------------------- import-usage

struct ImportOptions {
  std::string db;
  std::string csv;
  std::string team_column = "team";
  std::string team;                         // every row's team, or a filter.
  std::string time_column = "hour_start_s";
  std::string wallclock_column = "wallclock";
  std::string column;                       // -> used
  std::string queued_column;                // -> queued
  std::string resource = "gpu";
  bool create = false;  // make a new ledger file when --db is missing
};

struct ParsedUsage {
  std::vector<ledger::UsageRow> rows;
  bool from_wallclock = false;
};

std::string HourText(int64_t ms) {
  return absl::FormatTime("%Y-%m-%d %H:%M", absl::FromUnixMillis(ms), absl::UTCTimeZone());
}

// Reads the CSV into usage rows (resource-seconds per hour). Errors read
// "FILE:LINE: FIELD: reason".
absl::StatusOr<ParsedUsage> ParseUsageCsv(const std::string& text, const ImportOptions& o) {
  std::istringstream in(text);
  std::string line;
  int line_no = 0;
  std::vector<std::string> header;
  while (header.empty() && std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
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
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
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

// Releases the lease an import of a PostgreSQL ledger took.
struct ImportLease {
  std::unique_ptr<ledger::PgLease> lease;
  int64_t epoch = 0;
  ~ImportLease() {
    if (lease) lease->Release(epoch).IgnoreError();
  }
};

int RunImportUsage(const ImportOptions& o, const Io& io) {
  std::ostream& err = *io.err;
  const std::string prefix = "tidegate: ledger import-usage: ";
  std::ifstream file(o.csv, std::ios::binary);
  if (!file) {
    err << prefix << o.csv << ": cannot open the file\n";
    return kExitBadInput;
  }
  std::stringstream text;
  text << file.rdbuf();
  absl::StatusOr<ParsedUsage> parsed = ParseUsageCsv(text.str(), o);
  if (!parsed.ok()) {
    err << prefix << parsed.status().message() << "\n";
    return kExitBadInput;
  }
  std::optional<ledger::LedgerLock> held_lock;
  ImportLease held_lease;
  absl::StatusOr<std::unique_ptr<ledger::Store>> store = absl::UnknownError("not opened");
  if (ledger::IsPostgresLedger(o.db)) {
    // Brokers sharing a PostgreSQL ledger: the import takes the leader lease
    // for itself, so no broker leads (and writes) while it runs, and its one
    // commit is fenced like a leader's (ledger/postgres_store.h).
    ledger::PostgresOptions setup;
    setup.create = o.create;
    if (auto migrated = ledger::OpenPostgresStore(o.db, setup); !migrated.ok()) {
      err << prefix << migrated.status().message();
      if (absl::IsFailedPrecondition(migrated.status())) err << " (pass --create to make the tables)";
      err << "\n";
      return absl::IsUnavailable(migrated.status()) ? kExitUnavailable : kExitBadInput;
    }
    auto lease = ledger::PgLease::Open(o.db);
    absl::StatusOr<std::optional<int64_t>> epoch =
        lease.ok() ? (*lease)->Acquire("tidegate ledger import-usage", "", 60000) : lease.status();
    if (!epoch.ok()) {
      err << prefix << epoch.status().message() << "\n";
      return kExitUnavailable;
    }
    if (!epoch->has_value()) {
      auto info = (*lease)->Read();
      err << prefix << "a broker leads " << ledger::RedactConninfo(o.db) << " ("
          << (info.ok() ? info->holder : "unknown") << "); stop the brokers, import, then start them again\n";
      return kExitConflict;
    }
    held_lease.lease = *std::move(lease);
    held_lease.epoch = **epoch;
    ledger::PostgresOptions fenced;
    fenced.create = o.create;
    fenced.fence_epoch = **epoch;
    store = ledger::OpenPostgresStore(o.db, fenced);
    if (!store.ok()) {
      err << prefix << store.status().message() << "\n";
      return kExitBadInput;
    }
  } else {
    // The broker's lock (ledger/ledger_lock.h), so an import and a broker never
    // write the same ledger. Declared before the store: released after it.
    auto lock = ledger::LedgerLock::Acquire(o.db, o.create);
    if (lock.ok()) held_lock.emplace(*std::move(lock));
    if (absl::IsUnavailable(lock.status())) {
      err << prefix << lock.status().message() << "; stop the broker, import, then start it again\n";
      return kExitConflict;
    }
    if (!lock.ok()) {
      err << prefix << lock.status().message();
      if (absl::IsNotFound(lock.status())) err << "; pass --create to make a new ledger file";
      err << "\n";
      return kExitBadInput;
    }
    // A missing ledger is an error unless asked for: quietly creating one
    // where a broker's ledger was lost would hide the loss.
    ledger::SqliteOptions sqlite;
    sqlite.create = o.create;
    store = ledger::OpenSqliteStore(o.db, sqlite);
    if (!store.ok()) {
      err << prefix << store.status().message() << "\n";
      return kExitBadInput;
    }
  }
  // Rows with the same key add up in the ledger: importing an hour twice
  // would double it, so hours the ledger already has are refused.
  std::map<std::string, std::set<int64_t>> by_team;
  for (const ledger::UsageRow& r : parsed->rows) by_team[r.team].insert(r.hour_start_ms);
  for (const auto& [team, hours] : by_team) {
    auto existing = (*store)->Usage(team, *hours.begin());
    if (!existing.ok()) {
      err << prefix << existing.status().message() << "\n";
      return kExitServerError;
    }
    for (const ledger::UsageRow& r : *existing) {
      if (r.resource == o.resource && hours.count(r.hour_start_ms)) {
        err << prefix << ledger::RedactConninfo(o.db) << " already has " << o.resource << " usage of team " << team
            << " at " << HourText(r.hour_start_ms)
            << " UTC; importing would add to it (import each hour once)\n";
        return kExitConflict;
      }
    }
  }
  ledger::Batch batch;
  batch.usage = parsed->rows;
  if (absl::Status st = (*store)->Commit(batch); !st.ok()) {
    err << prefix << st.message() << "\n";
    return kExitServerError;
  }
  int64_t first = parsed->rows.front().hour_start_ms, last = first;
  for (const ledger::UsageRow& r : parsed->rows) {
    first = std::min(first, r.hour_start_ms);
    last = std::max(last, r.hour_start_ms);
  }
  *io.out << "imported " << parsed->rows.size() << " hourly " << o.resource << " rows of "
          << by_team.size() << " team" << (by_team.size() == 1 ? "" : "s") << " into " << ledger::RedactConninfo(o.db)
          << ": " << HourText(first) << " to " << HourText(last) << " UTC (hours from "
          << (parsed->from_wallclock ? "the " + o.wallclock_column + " column"
                                     : o.time_column + " as Unix seconds")
          << ")\n";
  io.out->flush();
  return kExitOk;
}

}  // namespace

void AddLedgerCommand(CLI::App& app, const Io& io, int* exit_code) {
  CLI::App* ledger = app.add_subcommand("ledger", "inspect a broker's ledger file");
  ledger->require_subcommand(1);
  auto options = std::make_shared<VerifyOptions>();
  CLI::App* verify = ledger->add_subcommand(
      "verify", "replay the ledger from its first entry and compare with the stored state\n"
                "(exit 0 consistent, 1 differences listed, 2 cannot open)");
  verify->add_option("--db", options->db, "the ledger: a SQLite file or a PostgreSQL conninfo (postgresql://...)")->required();
  verify->add_option("-o,--output", options->output, "table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  verify->callback([options, &io, exit_code] { *exit_code = RunVerify(*options, io); });

  auto import = std::make_shared<ImportOptions>();
  CLI::App* imp = ledger->add_subcommand(
      "import-usage",
      "write hourly usage from a CSV (an accounting export) into a ledger no broker holds,\n"
      "so forecasts have history from the start (exit 0 imported, 2 bad file, 4 ledger in\n"
      "use by a broker or already has those hours)");
  imp->add_option("--db", import->db, "the ledger: a SQLite file or a PostgreSQL conninfo (postgresql://...)")->required();
  imp->add_flag("--create", import->create,
                "create --db if it is missing (then start the broker on it with tidegated --init)");
  imp->add_option("CSV", import->csv, "hourly usage, one row per team and hour, with a header")
      ->required();
  imp->add_option("--column", import->column,
                  "column of GPUs (resource units) used, averaged over the hour")
      ->required();
  imp->add_option("--queued-column", import->queued_column,
                  "column of GPUs wanted but waiting (optional); demand = used + queued");
  imp->add_option("--team-column", import->team_column, "column of team names")
      ->capture_default_str();
  imp->add_option("--team", import->team,
                  "the team of every row (a file without a team column), or only this team's rows");
  imp->add_option("--time-column", import->time_column,
                  "column of hour starts in Unix seconds, used when there is no wallclock column")
      ->capture_default_str();
  imp->add_option("--wallclock-column", import->wallclock_column,
                  "column of hours as \"YYYY-MM-DD HH:MM\" UTC, preferred when present "
                  "(\"\" to ignore it)")
      ->capture_default_str();
  imp->add_option("--resource", import->resource, "the resource the usage is of")
      ->capture_default_str();
  imp->callback([import, &io, exit_code] { *exit_code = RunImportUsage(*import, io); });
}

}  // namespace tidegate::cli
