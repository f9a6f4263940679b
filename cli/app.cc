#include "cli/app.h"

#include <iostream>
#include <string>

#include "CLI/CLI.hpp"
#include "cli/history_command.h"
#include "cli/auth_command.h"
#include "cli/client.h"
#include "cli/config_command.h"
#include "cli/elastic_command.h"
#include "cli/exit_codes.h"
#include "cli/forecast_command.h"
#include "cli/jobs_command.h"
#include "cli/leader_command.h"
#include "cli/ledger_command.h"
#include "cli/quota_command.h"
#include "cli/reserve_command.h"
#include "cli/simulate_command.h"
#include "cli/tide_propose_command.h"

#ifndef TIDEGATE_VERSION
#define TIDEGATE_VERSION "unknown"
#endif

namespace tidegate::cli {

int RunTidegate(int argc, const char* const* argv, const Io& io) {
  CLI::App app{"tidegate: GPU quota, fair-share and elastic-capacity broker client", "tidegate"};
  app.set_version_flag("--version", std::string("tidegate ") + TIDEGATE_VERSION);
  app.footer(kExitCodesHelp);
  app.require_subcommand(1);

  int exit_code = kExitOk;
  AddSimulateCommand(app, io, &exit_code);
  // The broker's clients (docs/design.md §7): --server and --timeout are global.
  ClientOptions client;
  AddClientOptions(app, &client);
  AddJobsCommands(app, io, client, &exit_code);
  AddQuotaCommands(app, io, client, &exit_code);
  AddConfigCommand(app, io, client, &exit_code);
  AddElasticCommands(app, io, client, &exit_code);
  AddLedgerCommand(app, io, &exit_code);
  AddLeaderCommand(app, io, &exit_code);
  // Offline forecasts from CSV files (docs/forecast.md).
  AddForecastCommand(app, io, &exit_code);
  AddReserveCommand(app, io, &exit_code);
  AddTideProposeCommand(app, io, &exit_code);
  AddAuthCommand(app, io, &std::cin, &exit_code);
  AddHistoryCommand(app, io, &exit_code);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // A word that is no command is left over; CLI11 would only say that a
    // subcommand is required.
    if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr && app.get_subcommands().empty() &&
        !app.remaining().empty()) {
      *io.err << "tidegate: '" << app.remaining().front() << "' is not a command (tidegate --help lists them)\n";
      return kExitBadInput;
    }
    // --help and --version are "errors" with exit code 0.
    const int cli_code = app.exit(e, *io.out, *io.err);
    return cli_code == 0 ? kExitOk : kExitBadInput;
  }
  return exit_code;
}

}  // namespace tidegate::cli
