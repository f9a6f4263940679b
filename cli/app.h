// The tidegate command line: `tidegate [--version] SUBCOMMAND ...`.
// A thin layer over CLI11: it builds the app, registers each subcommand (one
// file each), parses, and maps every outcome to an exit code (exit_codes.h).
#ifndef TIDEGATE_CLI_APP_H_
#define TIDEGATE_CLI_APP_H_

#include "cli/command.h"

namespace tidegate::cli {

// Runs the command line `argv` (argv[0] is the program name) and returns the
// exit code. Writes only to io.out and io.err.
int RunTidegate(int argc, const char* const* argv, const Io& io);

}  // namespace tidegate::cli

#endif  // TIDEGATE_CLI_APP_H_
