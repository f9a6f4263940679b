#include "tests/support/cli_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

namespace tidegate::testing {

CliProcess::CliProcess(const TempDir& dir, std::vector<std::string> args) {
  static int counter = 0;
  const std::string stem = dir.File("cli-" + std::to_string(++counter));
  out_path_ = stem + ".out";
  err_path_ = stem + ".err";
  const std::string bin = ServerProcess::BinDir() + "/tidegate";
  args.insert(args.begin(), bin);
  pid_ = fork();
  if (pid_ == 0) {
    const int out = open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    unsetenv("TIDEGATE_SERVER");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
}

CliProcess::~CliProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

Ran CliProcess::Wait(std::chrono::seconds limit) {
  Ran r;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (pid_ > 0) {
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  r.out = ReadFile(out_path_);
  r.err = ReadFile(err_path_);
  return r;
}

bool CliProcess::WaitForStderr(const std::string& text) {
  return Eventually([&] { return ReadFile(err_path_).find(text) != std::string::npos; }, std::chrono::seconds(30));
}

std::string CliProcess::Stderr() const { return ReadFile(err_path_); }

void CliProcess::Signal(int sig) { kill(pid_, sig); }

}  // namespace tidegate::testing
