// `tidegate audit --db FILE [--kind KIND] [--principal NAME] [--job ID]
// [-o table|json]`: who asked for each journalled change, read from the
// ledger (read-only; a running broker may hold it). One row per entry: seq,
// time (UTC), kind (submit, finish, checkpoint, apply_config, ...), the
// principal and peer that asked (empty for the broker's own commands and an
// agent stream's), and the job or team it is about.
//
// Exit: 0 listed (possibly nothing); 2 the file cannot be opened or is not a
// Tidegate ledger, or a journal entry is damaged.
#ifndef TIDEGATE_CLI_AUTH_AUDIT_COMMAND_H_
#define TIDEGATE_CLI_AUTH_AUDIT_COMMAND_H_

#include "cli/command.h"

namespace CLI {
class App;
}  // namespace CLI

namespace tidegate::cli {

void AddAuditCommand(CLI::App& app, const Io& io, int* exit_code);

}  // namespace tidegate::cli

#endif  // TIDEGATE_CLI_AUTH_AUDIT_COMMAND_H_
