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
  // Starts `tidegated --config config_path --db db_path --listen 127.0.0.1:0
  // extra...` and waits until it prints its address. The binary is found in
  // $TIDEGATE_BIN_DIR (set by CTest) or ./build/bin.
  ServerProcess(std::string config_path, std::string db_path, std::vector<std::string> extra = {});
  ~ServerProcess();  // SIGKILLs it if still running.

  bool Start();              // false if it did not come up.
  int Terminate();           // SIGTERM, wait; returns the exit code.
  void Kill();               // SIGKILL, wait.
  const std::string& address() const { return address_; }
  std::shared_ptr<grpc::Channel> Channel() const;
  std::string Stderr() const;  // what it logged so far.

  static std::string BinDir();

 private:
  std::string config_, db_;
  std::vector<std::string> extra_;
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::string address_;
  std::string stderr_path_;
};

}  // namespace tidegate::testing

#endif  // TIDEGATE_TESTS_SUPPORT_SERVER_PROCESS_H_
