#include "cli/leader_command.h"

#include <memory>

#include "CLI/CLI.hpp"
#include "absl/time/time.h"
#include "cli/exit_codes.h"
#include "ledger/postgres_conn.h"
#include "ledger/postgres_lease.h"
#include "nlohmann/json.hpp"

namespace tidegate::cli {
namespace {

struct LeaderOptions {
  std::string db;
  std::string output = "table";
};

int RunLeader(const LeaderOptions& o, const Io& io) {
  if (!ledger::IsPostgresLedger(o.db)) {
    *io.err << "tidegate: leader: --db " << o.db
            << ": not a PostgreSQL ledger (postgresql://... or 'host=... dbname=...'); a SQLite ledger has one "
               "broker and no election\n";
    return kExitBadInput;
  }
  auto lease = ledger::PgLease::Open(o.db);
  if (!lease.ok()) {
    *io.err << "tidegate: leader: " << lease.status().message() << "\n";
    return absl::IsUnavailable(lease.status()) ? kExitUnavailable : kExitBadInput;
  }
  auto info = (*lease)->Read();
  if (!info.ok()) {
    *io.err << "tidegate: leader: " << info.status().message() << "\n";
    return kExitUnavailable;
  }
  const std::string since =
      info->since_ms == 0 ? "" : absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::FromUnixMillis(info->since_ms),
                                                  absl::UTCTimeZone());
  if (o.output == "json") {
    nlohmann::json j;
    j["held"] = info->held();
    j["holder"] = info->holder;
    j["address"] = info->address;
    j["epoch"] = info->epoch;
    j["since"] = since;
    j["since_ms"] = info->since_ms;
    j["expires_in_ms"] = info->expires_in_ms;
    *io.out << j.dump() << "\n";
  } else if (info->holder.empty()) {
    *io.out << "no broker has led this ledger yet\n";
  } else {
    *io.out << "holder     " << info->holder << (info->held() ? "" : "  (lease EXPIRED: no leader now)") << "\n"
            << "address    " << info->address << "\n"
            << "epoch      " << info->epoch << "\n"
            << "since      " << since << "\n"
            << "expires in " << info->expires_in_ms << " ms\n";
  }
  io.out->flush();
  return info->held() ? kExitOk : kExitUnavailable;
}

}  // namespace

void AddLeaderCommand(CLI::App& app, const Io& io, int* exit_code) {
  auto options = std::make_shared<LeaderOptions>();
  CLI::App* leader = app.add_subcommand(
      "leader", "show which broker leads a PostgreSQL ledger: holder, address, since, lease epoch\n"
                "(exit 0 a leader holds the lease, 5 none does now, 2 bad --db)");
  leader->add_option("--db", options->db, "the PostgreSQL ledger: postgresql://... or 'host=... dbname=...'")
      ->required();
  leader->add_option("-o,--output", options->output, "table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  leader->callback([options, &io, exit_code] { *exit_code = RunLeader(*options, io); });
}

}  // namespace tidegate::cli
