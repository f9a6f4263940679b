#include "tests/support/server_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

namespace tidegate::testing {

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "tidegate-test-XXXXXX").string();
  path_ = mkdtemp(tmpl.data());
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string SourceDir() {
  const char* dir = std::getenv("TIDEGATE_SOURCE_DIR");
  return dir ? dir : ".";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool Eventually(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

std::vector<int> FreePorts(int n) {
  std::vector<int> fds, ports;
  for (int i = 0; i < n; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    socklen_t len = sizeof addr;
    getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    ports.push_back(ntohs(addr.sin_port));
    fds.push_back(fd);
  }
  for (int fd : fds) close(fd);
  return ports;
}

std::string ServerProcess::BinDir() {
  if (const char* dir = std::getenv("TIDEGATE_BIN_DIR")) return dir;
  return "build/bin";
}

ServerProcess::ServerProcess(std::string config_path, std::string db_path, std::vector<std::string> extra)
    : config_(std::move(config_path)), db_(std::move(db_path)), extra_(std::move(extra)) {
  stderr_path_ = db_ + ".stderr.log";
}

ServerProcess::~ServerProcess() { Kill(); }

bool ServerProcess::Start() {
  int out[2];
  if (pipe(out) != 0) return false;
  const std::string bin = BinDir() + "/tidegated";
  std::vector<std::string> args = {bin, "--config", config_, "--db", db_, "--listen", listen_};
  if (init_) args.push_back("--init");
  args.insert(args.end(), extra_.begin(), extra_.end());
  // The log goes next to the ledger, or to a temporary file when the
  // ledger's directory cannot be written (a read-only file system test).
  int err = open(stderr_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (err < 0) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "tidegated-stderr-XXXXXX").string();
    err = mkostemp(tmpl.data(), O_APPEND | O_CLOEXEC);
    stderr_path_ = tmpl;
  }
  pid_ = fork();
  if (pid_ == 0) {
    dup2(out[1], STDOUT_FILENO);
    if (err >= 0) dup2(err, STDERR_FILENO);
    close(out[0]);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  close(out[1]);
  if (err >= 0) close(err);
  stdout_fd_ = out[0];
  // It exited before printing its address: keep the exit code.
  auto exited = [this] {
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return false;
  };
  // Wait (bounded) for "tidegated listening on ADDR".
  std::string seen;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{stdout_fd_, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) {
      int status;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return false;
      }
      continue;
    }
    char buf[256];
    const ssize_t n = read(stdout_fd_, buf, sizeof buf);
    if (n <= 0) return exited();
    seen.append(buf, n);
    const std::string marker = "tidegated listening on ";
    if (auto at = seen.find(marker); at != std::string::npos) {
      auto end = seen.find('\n', at);
      if (end == std::string::npos) continue;
      address_ = seen.substr(at + marker.size(), end - at - marker.size());
      address_ = address_.substr(0, address_.find(' '));  // a standby adds " (standby)"
      return true;
    }
  }
  return false;
}

int ServerProcess::Terminate() {
  if (pid_ < 0) return -1;
  kill(pid_, SIGTERM);
  int status = 0;
  waitpid(pid_, &status, 0);
  return Reaped(status);
}

int ServerProcess::Wait(std::chrono::milliseconds limit) {
  if (pid_ < 0) return -1;
  int status = 0;
  if (!Eventually([&] { return waitpid(pid_, &status, WNOHANG) == pid_; }, limit)) return -1;
  return Reaped(status);
}

int ServerProcess::Reaped(int status) {
  pid_ = -1;
  if (stdout_fd_ >= 0) close(stdout_fd_);
  stdout_fd_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void ServerProcess::Kill() {
  if (pid_ < 0) return;
  kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  if (stdout_fd_ >= 0) close(stdout_fd_);
  stdout_fd_ = -1;
}

void ServerProcess::Signal(int sig) {
  if (pid_ > 0) kill(pid_, sig);
}

std::shared_ptr<grpc::Channel> ServerProcess::Channel() const {
  return grpc::CreateChannel(address_, grpc::InsecureChannelCredentials());
}

std::string ServerProcess::Stderr() const {
  std::ifstream in(stderr_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int ServerProcess::HttpPort() const {
  const std::string log = Stderr();
  static const std::regex serving("http: serving on (\\[[^\\]]*\\]|[^ :]*):([0-9]+)");
  int port = -1;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), serving); it != std::sregex_iterator(); ++it) {
    port = std::stoi((*it)[2]);
  }
  return port;
}

}  // namespace tidegate::testing
