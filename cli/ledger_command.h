// `tidegate ledger verify --db FILE [-o table|json]`: replays the ledger from
// its first entry and compares with the stored state (latest snapshot plus
// journal tail) and the jobs table.
//
// Exit: 0 consistent; 1 differences found (listed); 2 the file cannot be
// opened or is not a Tidegate ledger.
#ifndef TIDEGATE_CLI_LEDGER_COMMAND_H_
#define TIDEGATE_CLI_LEDGER_COMMAND_H_

#include "cli/command.h"

namespace CLI {
class App;
}  // namespace CLI

namespace tidegate::cli {

void AddLedgerCommand(CLI::App& app, const Io& io, int* exit_code);

}  // namespace tidegate::cli

#endif  // TIDEGATE_CLI_LEDGER_COMMAND_H_
