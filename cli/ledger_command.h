// `tidegate ledger verify --db FILE [-o table|json]`: replays the ledger from
// its first entry and compares with the stored state (latest snapshot plus
// journal tail) and the jobs table.
//
// Exit: 0 consistent; 1 differences found (listed); 2 the file cannot be
// opened or is not a Tidegate ledger.
//
// `tidegate ledger import-usage --db FILE [--create] CSV --column NAME [--queued-column
// NAME] [--team-column team | --team T] [--wallclock-column wallclock]
// [--time-column hour_start_s] [--resource gpu]`: writes hourly
// usage rows (ledger/store.h UsageRow: GPUs × 3600 resource-seconds) from an
// accounting export into a ledger, in one transaction, so that ForecastService
// has history before the broker has run for weeks. A missing FILE is refused
// unless --create (never quietly replacing a lost ledger). Hours come from the
// wallclock column (UTC) when the file has one, else from the time column as
// Unix seconds. Offline: it takes the ledger lock like tidegated (ledger/ledger_lock.h) and refuses a
// ledger a broker holds; it refuses hours the ledger already has for a team
// (rows add up, so a second import would double them).
//
// Exit: 0 imported; 2 bad file ("FILE:LINE: COLUMN: reason"); 4 the ledger is
// in use by a broker, or already has some of the hours; 6 the write failed.
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
