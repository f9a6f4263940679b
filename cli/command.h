// What every tidegate subcommand gets: where to write. Each subcommand lives
// in its own file and registers itself on the top-level CLI::App with an
// Add<Name>Command function (see app.cc); the subcommand's callback stores
// its exit code (exit_codes.h).
#ifndef TIDEGATE_CLI_COMMAND_H_
#define TIDEGATE_CLI_COMMAND_H_

#include <ostream>

namespace tidegate::cli {

struct Io {
  std::ostream* out;  // results: JSON lines, tables.
  std::ostream* err;  // errors, progress, check reports.
  bool err_is_tty = false;  // progress lines only when true (or asked for).
};

}  // namespace tidegate::cli

#endif  // TIDEGATE_CLI_COMMAND_H_
