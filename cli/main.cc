// tidegate: the command-line client (docs/design.md §8, §9).
#include <unistd.h>

#include <iostream>

#include "cli/app.h"

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  tidegate::cli::Io io{&std::cout, &std::cerr, isatty(STDERR_FILENO) == 1};
  const int code = tidegate::cli::RunTidegate(argc, argv, io);
  std::cout.flush();
  return code;
}
