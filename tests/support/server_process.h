// Starts the real tidegated binary for end-to-end tests: a child process on
// 127.0.0.1 with a free port (or a given one) and a temporary ledger,
// stopped by PID; and the polling, free ports, files and source tree such
// tests need.
#ifndef TIDEGATE_TESTS_SUPPORT_SERVER_PROCESS_H_
#define TIDEGATE_TESTS_SUPPORT_SERVER_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "grpcpp/grpcpp.h"

namespace tidegate::testing {

// A fresh temporary directory, removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// The source tree ($TIDEGATE_SOURCE_DIR, set by CTest; else "."): where the
// tests find fixtures, example configs and scripts.
std::string SourceDir();

// A whole file as text; "" when it cannot be read.
std::string ReadFile(const std::string& path);

// Polls `done` every 20 ms until it holds or `limit` passes; its last answer.
bool Eventually(const std::function<bool()>& done,
                std::chrono::milliseconds limit = std::chrono::seconds(20));

// Loopback ports nobody listens on now (bound together, then released: good
// enough on loopback), for a server that must be told its port beforehand.
std::vector<int> FreePorts(int n);

class ServerProcess {
 public:
  // Starts `tidegated --config config_path --db db_path --init --listen
  // 127.0.0.1:0 extra...` and waits until it prints its address. --init
  // creates the ledger when it is missing and opens it as usual otherwise;
  // tests of a missing ledger turn it off with set_init(false). The binary is
  // found in $TIDEGATE_BIN_DIR (set by CTest) or ./build/bin.
  ServerProcess(std::string config_path, std::string db_path, std::vector<std::string> extra = {});
  void set_init(bool init) { init_ = init; }
  // --listen ADDRESS instead of 127.0.0.1:0 (a broker on a shared ledger
  // needs its port before it starts).
  void set_listen(std::string address) { listen_ = std::move(address); }
  // Where its stderr goes (default: beside the ledger file).
  void set_log(std::string path) { stderr_path_ = std::move(path); }
  ~ServerProcess();  // SIGKILLs it if still running.

  bool Start();              // false if it did not come up (see exit_code()).
  int exit_code() const { return exit_code_; }  // when Start() saw it exit; -1 otherwise
  int Terminate();           // SIGTERM, wait; returns the exit code.
  // Waits up to `limit` for it to exit by itself; its exit code, or -1 if it
  // still runs.
  int Wait(std::chrono::milliseconds limit = std::chrono::seconds(20));
  void Kill();               // SIGKILL, wait.
  void Signal(int sig);      // e.g. SIGSTOP, SIGCONT; no wait.
  const std::string& address() const { return address_; }
  pid_t pid() const { return pid_; }  // -1 when not running.
  std::shared_ptr<grpc::Channel> Channel() const;
  std::string Stderr() const;  // what it logged so far.
  // The port of its HTTP endpoint (--http-listen HOST:0), from the line it
  // logs once bound; -1 when it has logged none.
  int HttpPort() const;

  static std::string BinDir();

 private:
  // Forgets the reaped process; its exit code from waitpid's `status`.
  int Reaped(int status);
  std::string config_, db_;
  std::vector<std::string> extra_;
  bool init_ = true;
  std::string listen_ = "127.0.0.1:0";
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::string address_;
  std::string stderr_path_;
  int exit_code_ = -1;
};

}  // namespace tidegate::testing

#endif  // TIDEGATE_TESTS_SUPPORT_SERVER_PROCESS_H_
