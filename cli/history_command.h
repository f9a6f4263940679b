// `tidegate history [--db FILE] [--team T] [--kind KIND] [--principal NAME]
// [--job ID] [-o table|json]`: who changed what and when, read from the
// ledger's journal (read-only; a running broker may hold it), like
// `sacctmgr list transactions`. `tidegate audit` is the same command.
//
// One row per journalled change: seq, time (UTC), kind, the principal and
// peer that asked (empty for the broker's own commands), the team, and what
// it is about. Kinds are named for people: admit (journal kind submit),
// release (finish), checkpoint, adopt, ack_resize, vacate, config
// (apply_config: the row lists the changes field by field), quota
// (set_quota), capacity (set_capacity); --kind takes either name. A row about
// a job names the principal that admitted it when another principal asked
// (`owner`), so releases of someone else's job stand out.
//
// --team keeps the entries about that team's jobs, its quota, and config
// changes that name it.
//
// Exit: 0 listed (possibly nothing); 2 the file cannot be opened or is not a
// Tidegate ledger, a journal entry is damaged, or --kind names no kind.
#ifndef TIDEGATE_CLI_HISTORY_COMMAND_H_
#define TIDEGATE_CLI_HISTORY_COMMAND_H_

#include <string>

#include "cli/command.h"

namespace CLI {
class App;
}  // namespace CLI

namespace tidegate::cli {

void AddHistoryCommand(CLI::App& app, const Io& io, int* exit_code);

// The name people read for a journal kind ("finish" -> "release"); unknown
// kinds are returned unchanged.
std::string HistoryKindName(const std::string& journal_kind);

}  // namespace tidegate::cli

#endif  // TIDEGATE_CLI_HISTORY_COMMAND_H_
