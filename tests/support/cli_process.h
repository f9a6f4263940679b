// Runs the real `tidegate` binary for end-to-end tests: one child process with
// stdout and stderr in files, waited for with a bound, so a test reads what a
// script or a person would see and the exit code they would get.
#ifndef TIDEGATE_TESTS_SUPPORT_CLI_PROCESS_H_
#define TIDEGATE_TESTS_SUPPORT_CLI_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/support/server_process.h"

namespace tidegate::testing {

// What one run printed and how it ended.
struct Ran {
  int code = -1;  // the exit code; 128 + signal when killed; -1 when the wait gave up
  std::string out;
  std::string err;
};

// One `tidegate args...` process (found beside tidegated: ServerProcess::BinDir)
// with stdout and stderr in files of `dir`. $TIDEGATE_SERVER is cleared, so
// the broker is the one the args name. Destroying it SIGKILLs a process
// still running.
class CliProcess {
 public:
  CliProcess(const TempDir& dir, std::vector<std::string> args);
  ~CliProcess();
  CliProcess(const CliProcess&) = delete;
  CliProcess& operator=(const CliProcess&) = delete;

  // Waits for the exit; past `limit` SIGKILLs it and returns code -1.
  Ran Wait(std::chrono::seconds limit = std::chrono::seconds(60));
  // Waits (bounded: 30 s) until stderr contains `text`.
  bool WaitForStderr(const std::string& text);
  std::string Stderr() const;  // what it wrote to stderr so far
  void Signal(int sig);

 private:
  pid_t pid_ = -1;
  std::string out_path_, err_path_;
};

}  // namespace tidegate::testing

#endif  // TIDEGATE_TESTS_SUPPORT_CLI_PROCESS_H_
