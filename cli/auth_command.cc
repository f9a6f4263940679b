#include "cli/auth_command.h"

#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/strip.h"
#include "api/tokens/token_file.h"
#include "cli/exit_codes.h"

namespace tidegate::cli {

void AddAuthCommand(CLI::App& app, const Io& io, std::istream* in, int* exit_code) {
  CLI::App* auth = app.add_subcommand("auth", "Helpers for the broker's authentication (docs/security.md)");
  auth->require_subcommand(1);
  CLI::App* hash = auth->add_subcommand(
      "hash-token", "Read a bearer token on stdin; print its line for tidegated's --tokens file");
  auto principal = std::make_shared<std::string>();
  hash->add_option("principal", *principal, "the principal the token stands for (roles file name)");
  hash->footer("Generate a token with e.g. `openssl rand -hex 32`; give the token to the client, the\n"
               "printed line to the broker's --tokens file, then `kill -HUP` the broker.\n"
               "Exit: 0 printed, 2 no token on stdin.");
  hash->callback([io, in, principal, exit_code] {
    std::string line;
    std::getline(*in, line);
    const std::string token(absl::StripAsciiWhitespace(line));
    if (token.empty()) {
      *io.err << "tidegate: auth hash-token: no token on stdin (its first line)\n";
      *exit_code = kExitBadInput;
      return;
    }
    const std::string hex = tokens::Sha256Hex(token);
    *io.out << (principal->empty() ? hex : *principal + " " + hex) << "\n";
    *exit_code = kExitOk;
  });
}

}  // namespace tidegate::cli
