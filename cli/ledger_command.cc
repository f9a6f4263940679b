#include "cli/ledger_command.h"

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "broker/ledger_ops/import_usage.h"
#include "broker/ledger_ops/verify_ledger.h"
#include "cli/exit_codes.h"
#include "ledger/postgres_conn.h"
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
  auto report = ledger_ops::VerifyLedger(**store);
  if (!report.ok()) {
    *io.err << "tidegate: ledger verify: " << report.status().message() << "\n";
    return kExitBadInput;
  }
  if (absl::Status history = ledger_ops::CheckAcknowledgedHistory(o.db, **store, *report); !history.ok()) {
    *io.err << "tidegate: ledger verify: " << history.message() << "\n";
    return kExitUnavailable;
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

int RunImportUsage(const ledger_ops::ImportOptions& o, const Io& io) {
  std::ostream& err = *io.err;
  const std::string prefix = "tidegate: ledger import-usage: ";
  std::ifstream file(o.csv, std::ios::binary);
  if (!file) {
    err << prefix << o.csv << ": cannot open the file\n";
    return kExitBadInput;
  }
  std::stringstream text;
  text << file.rdbuf();
  absl::StatusOr<ledger_ops::ParsedUsage> parsed = ledger_ops::ParseUsageCsv(text.str(), o);
  if (!parsed.ok()) {
    err << prefix << parsed.status().message() << "\n";
    return kExitBadInput;
  }
  absl::StatusOr<ledger_ops::ImportSummary> imported = ledger_ops::ImportUsage(o, *parsed);
  if (!imported.ok()) {
    err << prefix << imported.status().message() << "\n";
    switch (imported.status().code()) {
      case absl::StatusCode::kAborted:
      case absl::StatusCode::kAlreadyExists: return kExitConflict;
      case absl::StatusCode::kUnavailable: return kExitUnavailable;
      case absl::StatusCode::kInternal: return kExitServerError;
      default: return kExitBadInput;
    }
  }
  *io.out << "imported " << imported->rows << " hourly " << o.resource << " rows of " << imported->teams << " team"
          << (imported->teams == 1 ? "" : "s") << " into " << ledger::RedactConninfo(o.db) << ": "
          << ledger_ops::HourText(imported->first_hour_ms) << " to " << ledger_ops::HourText(imported->last_hour_ms)
          << " UTC (hours from "
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

  auto import = std::make_shared<ledger_ops::ImportOptions>();
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
