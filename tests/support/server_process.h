// Starts the real tidegated binary for end-to-end tests: a child process on
// 127.0.0.1 with a free port and a temporary ledger, stopped by PID.
#ifndef TIDEGATE_TESTS_SUPPORT_SERVER_PROCESS_H_
#define TIDEGATE_TESTS_SUPPORT_SERVER_PROCESS_H_

#include <sys/types.h>

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

class ServerProcess {
 public:
  // Starts `tidegated --config config_path --db db_path --init --listen
  // 127.0.0.1:0 extra...` and waits until it prints its address. --init
  // creates the ledger when it is missing and opens it as usual otherwise;
  // tests of a missing ledger turn it off with set_init(false). The binary is
  // found in $TIDEGATE_BIN_DIR (set by CTest) or ./build/bin.
  ServerProcess(std::string config_path, std::string db_path, std::vector<std::string> extra = {});
  void set_init(bool init) { init_ = init; }
  ~ServerProcess();  // SIGKILLs it if still running.

  bool Start();              // false if it did not come up (see exit_code()).
  int exit_code() const { return exit_code_; }  // when Start() saw it exit; -1 otherwise
  int Terminate();           // SIGTERM, wait; returns the exit code.
  void Kill();               // SIGKILL, wait.
  const std::string& address() const { return address_; }
  pid_t pid() const { return pid_; }  // -1 when not running.
  std::shared_ptr<grpc::Channel> Channel() const;
  std::string Stderr() const;  // what it logged so far.

  static std::string BinDir();

 private:
  std::string config_, db_;
  std::vector<std::string> extra_;
  bool init_ = true;
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::string address_;
  std::string stderr_path_;
  int exit_code_ = -1;
};

}  // namespace tidegate::testing

#endif  // TIDEGATE_TESTS_SUPPORT_SERVER_PROCESS_H_
