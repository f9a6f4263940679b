#include "cli/ledger_command.h"

#include <filesystem>
#include <memory>

#include "CLI/CLI.hpp"
#include "broker/service/verify.h"
#include "cli/exit_codes.h"
#include "nlohmann/json.hpp"

namespace tidegate::cli {
namespace {

struct VerifyOptions {
  std::string db;
  std::string output = "table";
};

int RunVerify(const VerifyOptions& o, const Io& io) {
  if (!std::filesystem::exists(o.db)) {
    *io.err << "tidegate: ledger verify: --db " << o.db << ": no such file\n";
    return kExitBadInput;
  }
  ledger::SqliteOptions options;
  options.read_only = true;
  auto store = ledger::OpenSqliteStore(o.db, options);
  if (!store.ok()) {
    *io.err << "tidegate: ledger verify: " << store.status().message() << "\n";
    return kExitBadInput;
  }
  auto report = service::VerifyLedger(**store);
  if (!report.ok()) {
    *io.err << "tidegate: ledger verify: " << report.status().message() << "\n";
    return kExitBadInput;
  }
  if (o.output == "json") {
    nlohmann::json j;
    j["db"] = o.db;
    j["entries"] = report->entries;
    j["jobs"] = report->jobs;
    j["ok"] = report->problems.empty();
    j["problems"] = report->problems;
    *io.out << j.dump() << "\n";
  } else {
    *io.out << "ledger " << o.db << ": replayed " << report->entries << " journal entries, " << report->jobs
            << " live jobs\n";
    for (const auto& p : report->problems) *io.out << "  difference: " << p << "\n";
    *io.out << (report->problems.empty() ? "ok: the replay matches the stored state\n"
                                         : "FAILED: the replay does not match the stored state\n");
  }
  return report->problems.empty() ? kExitOk : kExitCheckFailed;
}

}  // namespace

void AddLedgerCommand(CLI::App& app, const Io& io, int* exit_code) {
  CLI::App* ledger = app.add_subcommand("ledger", "inspect a broker's ledger file");
  ledger->require_subcommand(1);
  auto options = std::make_shared<VerifyOptions>();
  CLI::App* verify = ledger->add_subcommand(
      "verify", "replay the ledger from its first entry and compare with the stored state\n"
                "(exit 0 consistent, 1 differences listed, 2 cannot open)");
  verify->add_option("--db", options->db, "the SQLite ledger file")->required();
  verify->add_option("-o,--output", options->output, "table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  verify->callback([options, &io, exit_code] { *exit_code = RunVerify(*options, io); });
}

}  // namespace tidegate::cli
