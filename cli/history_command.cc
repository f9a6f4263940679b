#include "cli/history_command.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "api/text/config_diff.h"
#include "cli/exit_codes.h"
#include "cli/text_table.h"
#include "ledger/store.h"
#include "nlohmann/json.hpp"
#include "tidegate/internal/v1/journal.pb.h"
#include "tidegate/v1/config.pb.h"

namespace tidegate::cli {
namespace {

struct HistoryOptions {
  std::string db = "tidegate.db", team, kind, principal, job, output = "table";
};

// Journal kind -> the name people read. Kinds not listed keep their name.
constexpr std::pair<const char*, const char*> kKindNames[] = {
    {"submit", "admit"}, {"finish", "release"}, {"apply_config", "config"},
    {"set_quota", "quota"}, {"set_capacity", "capacity"},
};
constexpr const char* kKinds[] = {"submit", "finish", "checkpoint", "adopt", "ack_resize",
                                  "vacate", "apply_config", "set_quota", "set_capacity"};

// The job an entry is about, or "".
std::string JobOf(const internal::v1::Command& c) {
  switch (c.kind_case()) {
    case internal::v1::Command::kSubmit: return c.submit().job();
    case internal::v1::Command::kFinish: return c.finish();
    case internal::v1::Command::kCheckpoint: return c.checkpoint();
    case internal::v1::Command::kVacate: return c.vacate();
    case internal::v1::Command::kAckResize: return c.ack_resize().job();
    default: return "";
  }
}

// Whether a config change (its field-by-field lines) touches `team`.
bool NamesTeam(const std::vector<std::string>& changes, const std::string& team) {
  for (const auto& line : changes) {
    if (absl::StartsWith(line, team + " ") || line == "+ team " + team || line == "- team " + team ||
        absl::StartsWith(line, "+ team " + team + " ")) {
      return true;
    }
  }
  return false;
}

// What the history knows of a job from earlier entries.
struct JobFacts {
  std::string team;
  std::string owner;  // the principal that admitted it ("" if the broker or an agent did)
};

// About 120 lines: one read of the journal. Every entry is learnt from
// (each job's team and owner, the config in force) before the filters skip
// it, since later entries need what earlier ones said, so learning,
// filtering and printing share the reader's state.
int Run(const HistoryOptions& o, const Io& io) {
  std::string want_kind = o.kind;
  if (!want_kind.empty()) {
    for (const auto& [journal, name] : kKindNames) {
      if (want_kind == name) want_kind = journal;
    }
    bool known = false;
    for (const char* k : kKinds) known = known || want_kind == k;
    if (!known) {
      std::vector<std::string> names;
      for (const char* k : kKinds) names.push_back(HistoryKindName(k));
      *io.err << "tidegate: history: --kind '" << o.kind << "' is no kind; one of " << absl::StrJoin(names, ", ")
              << "\n";
      return kExitBadInput;
    }
  }
  ledger::SqliteOptions options;
  options.read_only = true;
  auto store = ledger::OpenSqliteStore(o.db, options);
  if (!store.ok()) {
    *io.err << "tidegate: history: " << store.status().message() << "\n";
    return kExitBadInput;
  }
  TextTable table({"seq", "time", "kind", "principal", "peer", "team", "about"});
  nlohmann::json rows = nlohmann::json::array();
  absl::flat_hash_map<std::string, JobFacts> jobs;
  std::unique_ptr<v1::Config> config;  // the config in force before the entry
  // The ledger's initial state holds the config it was created with; the
  // journal holds every change since.
  if (auto first = (*store)->EarliestSnapshot(); first.ok() && first->has_value() && (*first)->seq == 0) {
    internal::v1::CoreSnapshot snapshot;
    if (snapshot.ParseFromString((*first)->payload)) config = std::make_unique<v1::Config>(snapshot.config());
  }
  absl::Status read = (*store)->ReadJournal(0, [&](const ledger::JournalRecord& rec) {
    if (rec.kind == "tick") return absl::OkStatus();  // the broker's clock, never asked for
    internal::v1::Command command;
    if (!command.ParseFromString(rec.payload)) {
      return absl::DataLossError("journal entry " + std::to_string(rec.seq) + " does not parse");
    }
    const std::string& principal = command.origin().principal();
    // Learn before filtering: later entries need the team and owner.
    std::vector<std::string> changes;
    std::string team, job = JobOf(command), owner;
    switch (command.kind_case()) {
      case internal::v1::Command::kSubmit:
        if (!jobs.contains(job)) jobs[job] = {command.submit().team(), principal};
        break;
      case internal::v1::Command::kAdopt:
        for (const auto& spec : command.adopt().jobs()) jobs.try_emplace(spec.job(), JobFacts{spec.team(), ""});
        break;
      case internal::v1::Command::kApplyConfig:
        if (config) {
          changes = text::ConfigDiff(*config, command.apply_config());
        } else {
          changes.push_back(absl::StrCat("the first config: ", command.apply_config().teams_size(), " teams, ",
                                         command.apply_config().clusters_size(), " clusters"));
          for (const auto& t : command.apply_config().teams()) changes.push_back("+ team " + t.name());
        }
        config = std::make_unique<v1::Config>(command.apply_config());
        break;
      case internal::v1::Command::kSetQuota:
        team = command.set_quota().team();
        break;
      default:
        break;
    }
    if (!job.empty()) {
      auto it = jobs.find(job);
      if (it != jobs.end()) {
        team = it->second.team;
        owner = it->second.owner;
      }
    }
    if (!want_kind.empty() && rec.kind != want_kind) return absl::OkStatus();
    if (!o.principal.empty() && principal != o.principal) return absl::OkStatus();
    if (!o.job.empty() && job != o.job) return absl::OkStatus();
    if (!o.team.empty()) {
      const bool about_team = command.kind_case() == internal::v1::Command::kApplyConfig ? NamesTeam(changes, o.team)
                                                                                : team == o.team;
      if (!about_team) return absl::OkStatus();
    }
    std::string about = job;
    const bool others_job = !job.empty() && !owner.empty() && owner != principal;
    if (others_job) absl::StrAppend(&about, " (admitted by ", owner, ")");
    if (command.kind_case() == internal::v1::Command::kApplyConfig) {
      about = changes.empty() ? "no change" : absl::StrJoin(changes, "; ");
    } else if (command.kind_case() == internal::v1::Command::kSetQuota) {
      about = "quota of " + team;
    } else if (command.kind_case() == internal::v1::Command::kSetCapacity) {
      about = "capacity of " + command.set_capacity().cluster();
    } else if (command.kind_case() == internal::v1::Command::kAdopt) {
      std::vector<std::string> ids;
      for (const auto& spec : command.adopt().jobs()) ids.push_back(spec.job());
      about = "adopted " + absl::StrJoin(ids, ", ");
    }
    const std::string kind = HistoryKindName(rec.kind);
    if (o.output == "json") {
      nlohmann::json row = {{"seq", rec.seq}, {"at_ms", rec.at_ms}, {"kind", kind}, {"journal_kind", rec.kind},
                            {"principal", principal}, {"peer", command.origin().peer()}, {"team", team},
                            {"job", job}, {"owner", owner}, {"others_job", others_job}, {"about", about}};
      if (command.kind_case() == internal::v1::Command::kApplyConfig) row["changes"] = changes;
      rows.push_back(std::move(row));
    } else {
      const std::string time =
          absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixMillis(rec.at_ms), absl::UTCTimeZone());
      table.AddRow({std::to_string(rec.seq), time, kind, principal.empty() ? "-" : principal,
                    command.origin().peer().empty() ? "-" : command.origin().peer(), team.empty() ? "-" : team,
                    about});
    }
    return absl::OkStatus();
  });
  if (!read.ok()) {
    *io.err << "tidegate: history: " << read.message() << "\n";
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

std::string HistoryKindName(const std::string& journal_kind) {
  for (const auto& [journal, name] : kKindNames) {
    if (journal_kind == journal) return name;
  }
  return journal_kind;
}

void AddHistoryCommand(CLI::App& app, const Io& io, int* exit_code) {
  auto o = std::make_shared<HistoryOptions>();
  CLI::App* history = app.add_subcommand("history", "Who changed what and when, from the ledger's journal");
  history->alias("audit");
  history->add_option("--db", o->db, "the ledger file (read-only; the broker may be running)")->capture_default_str();
  history->add_option("--team", o->team, "only entries about this team: its jobs, its quota, config changes naming it");
  history->add_option("--kind", o->kind,
                      "only entries of this kind: admit, release, checkpoint, adopt, ack_resize, vacate, config, "
                      "quota, capacity");
  history->add_option("--principal", o->principal, "only what this principal asked for");
  history->add_option("--job", o->job, "only entries about this job");
  history->add_option("-o,--output", o->output, "table: for people (default); json: for programs")
      ->check(CLI::IsMember({"table", "json"}));
  history->footer("Exit: 0 listed, 2 the ledger cannot be read or --kind names no kind.");
  history->callback([o, io, exit_code] { *exit_code = Run(*o, io); });
}

}  // namespace tidegate::cli
