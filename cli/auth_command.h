// `tidegate auth hash-token [PRINCIPAL]`: reads a bearer token from stdin (its
// first line) and prints the line for tidegated's --tokens file,
// `PRINCIPAL SHA256HEX` (only the hex without PRINCIPAL). The broker keeps
// only the hash, so a copied tokens file grants nothing.
//
// Exit: 0 printed; 2 no token on stdin.
#ifndef TIDEGATE_CLI_AUTH_COMMAND_H_
#define TIDEGATE_CLI_AUTH_COMMAND_H_

#include <istream>

#include "cli/command.h"

namespace CLI {
class App;
}  // namespace CLI

namespace tidegate::cli {

// `in` is where the token is read from (std::cin in the tool).
void AddAuthCommand(CLI::App& app, const Io& io, std::istream* in, int* exit_code);

}  // namespace tidegate::cli

#endif  // TIDEGATE_CLI_AUTH_COMMAND_H_
