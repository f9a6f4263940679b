#include "cli/auth_audit_command.h"

#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/time/time.h"
#include "cli/exit_codes.h"
#include "cli/text_table.h"
#include "ledger/store.h"
#include "nlohmann/json.hpp"
#include "tidegate/v1/config.pb.h"

namespace tidegate::cli {
namespace {

struct AuditOptions {
  std::string db, kind, principal, job, output = "table";
};

// The job or team an entry is about, for people.
std::string Subject(const v1::Command& c) {
  switch (c.kind_case()) {
    case v1::Command::kSubmit: return c.submit().job() + " (team " + c.submit().team() + ")";
    case v1::Command::kFinish: return c.finish();
    case v1::Command::kCheckpoint: return c.checkpoint();
    case v1::Command::kVacate: return c.vacate();
    case v1::Command::kAckResize: return c.ack_resize().job();
    case v1::Command::kApplyConfig: return "config";
    case v1::Command::kSetQuota: return "quota";
    case v1::Command::kSetCapacity: return "capacity";
    default: return "";
  }
}

std::string Job(const v1::Command& c) {
  switch (c.kind_case()) {
    case v1::Command::kSubmit: return c.submit().job();
    case v1::Command::kFinish: return c.finish();
    case v1::Command::kCheckpoint: return c.checkpoint();
    case v1::Command::kVacate: return c.vacate();
    case v1::Command::kAckResize: return c.ack_resize().job();
    default: return "";
  }
}

int Run(const AuditOptions& o, const Io& io) {
  ledger::SqliteOptions options;
  options.read_only = true;
  auto store = ledger::OpenSqliteStore(o.db, options);
  if (!store.ok()) {
    *io.err << "tidegate: audit: " << store.status().message() << "\n";
    return kExitBadInput;
  }
  TextTable table({"seq", "time", "kind", "principal", "peer", "about"});
  nlohmann::json rows = nlohmann::json::array();
  absl::Status read = (*store)->ReadJournal(0, [&](const ledger::JournalRecord& rec) {
    if (rec.kind == "tick") return absl::OkStatus();  // the broker's clock, never asked for
    if (!o.kind.empty() && rec.kind != o.kind) return absl::OkStatus();
    v1::Command command;
    if (!command.ParseFromString(rec.payload)) {
      return absl::DataLossError("journal entry " + std::to_string(rec.seq) + " does not parse");
    }
    const std::string& principal = command.origin().principal();
    if (!o.principal.empty() && principal != o.principal) return absl::OkStatus();
    if (!o.job.empty() && Job(command) != o.job) return absl::OkStatus();
    const std::string time = absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixMillis(rec.at_ms), absl::UTCTimeZone());
    if (o.output == "json") {
      rows.push_back({{"seq", rec.seq}, {"at_ms", rec.at_ms}, {"kind", rec.kind}, {"principal", principal},
                      {"peer", command.origin().peer()}, {"about", Subject(command)}});
    } else {
      table.AddRow({std::to_string(rec.seq), time, rec.kind, principal.empty() ? "-" : principal,
                    command.origin().peer().empty() ? "-" : command.origin().peer(), Subject(command)});
    }
    return absl::OkStatus();
  });
  if (!read.ok()) {
    *io.err << "tidegate: audit: " << read.message() << "\n";
    return kExitBadInput;
  }
  if (o.output == "json") {
    *io.out << rows.dump() << "\n";
  } else {
    table.Print(*io.out);
  }
  return kExitOk;
}

}  // namespace

void AddAuditCommand(CLI::App& app, const Io& io, int* exit_code) {
  auto o = std::make_shared<AuditOptions>();
  CLI::App* audit = app.add_subcommand("audit", "Who asked for each journalled change (read from the ledger)");
  audit->add_option("--db", o->db, "the ledger file (read-only; the broker may be running)")->required();
  audit->add_option("--kind", o->kind, "only entries of this kind: submit, finish, checkpoint, apply_config, ...");
  audit->add_option("--principal", o->principal, "only what this principal asked for");
  audit->add_option("--job", o->job, "only entries about this job");
  audit->add_option("-o,--output", o->output, "table: for people (default); json: for programs")
      ->check(CLI::IsMember({"table", "json"}));
  audit->footer("Exit: 0 listed, 2 the ledger cannot be read.");
  audit->callback([o, io, exit_code] { *exit_code = Run(*o, io); });
}

}  // namespace tidegate::cli
