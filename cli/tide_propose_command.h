// `tidegate tide propose [TEAM] --input FILE.csv --column NAME [--team T]
//  [--where COL=VALUE] [--max-windows 4] [--quantile 0.9] [--timezone UTC]
//  [--resource gpu] [--start TIME]` (docs/design.md §5-6): proposes tide
// rules for a team from its hour-of-week demand profile (forecast/tide.h) and
// prints them on stdout as config YAML, ready to paste under the team.
//
// The team's rows: --where, or, when the file has a `team` column, the rows
// of the team named by --team / TEAM. Hours are placed in the week from
// --start, else the file's `wallclock` column, else the time column read as
// Unix seconds; they are taken to be in --timezone (default UTC).
//
// `tidegate tide propose TEAM` (no --input) proposes them from the team's
// usage in the broker's ledger through ForecastService; the ledger's hours are
// UTC and are placed in the week in --timezone.
//
// Exit: 0 ok; 2 bad input (as `tidegate forecast`, plus fewer than two weeks
// of data, no way to place hours in the week, no team name). Online also 3
// no such team, 4 fewer than two weeks in the ledger, 5 broker unavailable.
#ifndef TIDEGATE_CLI_TIDE_PROPOSE_COMMAND_H_
#define TIDEGATE_CLI_TIDE_PROPOSE_COMMAND_H_

#include <string>

#include "cli/command.h"
#include "cli/forecast_command.h"

namespace CLI {
class App;
}  // namespace CLI

namespace tidegate::cli {

struct TideProposeOptions {
  SeriesInput series;
  ClientOptions client;           // online: --server, --timeout.
  std::string team_flag;          // --team T (the same as the positional TEAM).
  int max_windows = 4;
  double quantile = 0.9;
  std::string timezone = "UTC";
  std::string resource = "gpu";
};

int RunTidePropose(const TideProposeOptions& options, const Io& io);

// Registers `tide propose` on `app` (creating `tide` if nobody has); its exit
// code lands in *exit_code.
void AddTideProposeCommand(CLI::App& app, const Io& io, int* exit_code);

}  // namespace tidegate::cli

#endif  // TIDEGATE_CLI_TIDE_PROPOSE_COMMAND_H_
