// `tidegate leader --db CONNINFO [-o json]`: who leads the brokers that share
// a PostgreSQL ledger, since when, under which lease epoch (docs/ha.md).
#ifndef TIDEGATE_CLI_LEADER_COMMAND_H_
#define TIDEGATE_CLI_LEADER_COMMAND_H_

#include "cli/command.h"

namespace CLI {
class App;
}  // namespace CLI

namespace tidegate::cli {

void AddLeaderCommand(CLI::App& app, const Io& io, int* exit_code);

}  // namespace tidegate::cli

#endif  // TIDEGATE_CLI_LEADER_COMMAND_H_
