#include "cli/client.h"
#include "cli/leader_channel.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "cli/exit_codes.h"
#include "cli/value_format.h"

namespace tidegate::cli {
namespace {
// Listing 100,000 jobs is a message of tens of MB: lift gRPC's 4 MB default.
grpc::ChannelArguments ChannelArgs() {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  return args;
}
}  // namespace

void AddClientOptions(CLI::App& app, ClientOptions* options) {
  app.add_option("--server", options->server,
                 absl::StrCat("The broker's gRPC address (default: $", kServerEnv, ", then ",
                              kDefaultServer, ")"))
      ->type_name("ADDR");
  app.add_option("--timeout", options->timeout,
                 "How long to wait for each answer from the broker (default 10s; not for "
                 "admit --wait)")
      ->type_name("DURATION");
  AddChannelSecurityOptions(app, &options->security);
}

void AddOutputOption(CLI::App& sub, std::string* output) {
  sub.add_option("-o,--output", *output, "table: for people (default); json: for programs")
      ->check(CLI::IsMember({"table", "json"}));
  sub.fallthrough();
}

std::string ResolveServer(const std::string& flag, const char* env) {
  if (!flag.empty()) return flag;
  if (env != nullptr && env[0] != '\0') return env;
  return kDefaultServer;
}

int ExitCodeFor(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return kExitOk;
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::OUT_OF_RANGE:
      return kExitBadInput;
    case grpc::StatusCode::NOT_FOUND:
      return kExitNotFound;
    case grpc::StatusCode::ALREADY_EXISTS:
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::ABORTED:
      return kExitConflict;
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return kExitUnavailable;
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::PERMISSION_DENIED:
      return kExitNotAllowed;
    default:
      return kExitServerError;
  }
}

std::string StatusCodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK: return "OK";
    case grpc::StatusCode::CANCELLED: return "CANCELLED";
    case grpc::StatusCode::UNKNOWN: return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS: return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED: return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE: return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED: return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL: return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS: return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    default: return absl::StrCat("CODE_", static_cast<int>(code));
  }
}

std::string DescribeRpcError(const grpc::Status& status, const std::string& server) {
  std::string line = absl::StrCat("tidegate: ", StatusCodeName(status.error_code()), ": ",
                                  status.error_message());
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      absl::StrAppend(&line, " (broker at ", server, "; set --server or $", kServerEnv, ")");
      break;
    case grpc::StatusCode::UNIMPLEMENTED:
      absl::StrAppend(&line, " (the broker at ", server, " does not serve this call)");
      break;
    default:
      break;
  }
  return line;
}

std::string BrokerCommandFooter() {
  return absl::StrCat(
      "Global options, before or after the subcommand: --server ADDR (default $", kServerEnv,
      ", then ", kDefaultServer, "), --timeout DURATION (default 10s),\n"
      "--tls, --ca FILE, --cert FILE, --key FILE, --token-file FILE (or $TIDEGATE_CA, $TIDEGATE_CERT,\n"
      "$TIDEGATE_KEY, $TIDEGATE_TOKEN_FILE, $TIDEGATE_TOKEN).\n\n", kExitCodesHelp);
}

// ---------------------------------------------------------------- Client

Client::Client(std::string server, std::chrono::seconds timeout, std::shared_ptr<grpc::Channel> channel)
    : server_(std::move(server)),
      timeout_(timeout),
      channel_(std::move(channel)),
      admission_(v1::AdmissionService::NewStub(channel_)),
      quota_(v1::QuotaService::NewStub(channel_)),
      elastic_(v1::ElasticService::NewStub(channel_)) {}

absl::StatusOr<std::unique_ptr<Client>> Client::Create(const ClientOptions& options) {
  absl::StatusOr<int64_t> timeout_s = ParseDurationSeconds("--timeout", options.timeout);
  if (!timeout_s.ok()) return timeout_s.status();
  std::string server = ResolveServer(options.server, std::getenv(kServerEnv));
  for (const std::string& address : SplitServers(server)) {
    if (absl::Status bad = CheckBrokerTarget(address); !bad.ok()) return bad;
  }
  ChannelSecurity security = options.security;
  ApplySecurityEnvironment(&security);
  // Several brokers (a,b,c): the one that leads (cli/leader_channel.h).
  server = FindLeader(server, security, std::chrono::seconds(*timeout_s));
  auto channel = MakeBrokerChannel(server, security, ChannelArgs());
  if (!channel.ok()) return channel.status();
  return std::unique_ptr<Client>(new Client(std::move(server), std::chrono::seconds(*timeout_s), *std::move(channel)));
}

void Client::SetDeadline(grpc::ClientContext* context) const {
  context->set_deadline(std::chrono::system_clock::now() + timeout_);
}

int Client::Fail(const grpc::Status& status, std::ostream& err) const {
  err << DescribeRpcError(status, server_) << "\n";
  return ExitCodeFor(status.error_code());
}

// ---------------------------------------------------------------- InterruptWatcher

namespace {

// The pipe the signal handler writes to; -1 when no watcher is alive.
volatile sig_atomic_t g_interrupt_fd = -1;

constexpr char kInterruptByte = 1;
constexpr char kStopByte = 0;

extern "C" void OnInterrupt(int) {
  const int saved_errno = errno;
  const int fd = g_interrupt_fd;
  if (fd >= 0) {
    const char byte = kInterruptByte;
    [[maybe_unused]] const ssize_t n = write(fd, &byte, 1);
  }
  errno = saved_errno;
}

}  // namespace

struct InterruptWatcher::SavedHandlers {
  struct sigaction int_action;
  struct sigaction term_action;
};

InterruptWatcher::InterruptWatcher() : saved_(std::make_unique<SavedHandlers>()) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return;  // No watcher: signals keep their default action.
  read_fd_ = fds[0];
  write_fd_ = fds[1];
  g_interrupt_fd = write_fd_;
  struct sigaction action = {};
  action.sa_handler = OnInterrupt;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, &saved_->int_action);
  sigaction(SIGTERM, &action, &saved_->term_action);
  thread_ = std::thread([this] { Run(); });
}

InterruptWatcher::~InterruptWatcher() {
  if (read_fd_ < 0) return;
  sigaction(SIGINT, &saved_->int_action, nullptr);
  sigaction(SIGTERM, &saved_->term_action, nullptr);
  g_interrupt_fd = -1;
  const char byte = kStopByte;
  [[maybe_unused]] const ssize_t n = write(write_fd_, &byte, 1);
  thread_.join();
  close(read_fd_);
  close(write_fd_);
}

void InterruptWatcher::Run() {
  for (;;) {
    char byte = kStopByte;
    const ssize_t n = read(read_fd_, &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || byte == kStopByte) return;
    absl::MutexLock lock(&mu_);
    if (interrupted_) {
      // A second Ctrl-C while the first is being handled: stop now.
      std::_Exit(kExitInterrupted);
    }
    interrupted_ = true;
    if (context_ != nullptr) context_->TryCancel();
  }
}

void InterruptWatcher::Watch(grpc::ClientContext* context) {
  absl::MutexLock lock(&mu_);
  context_ = context;
  if (interrupted_ && context_ != nullptr) context_->TryCancel();
}

bool InterruptWatcher::SleepFor(std::chrono::milliseconds duration) {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(&interrupted_), absl::FromChrono(duration));
  return interrupted_;
}

bool InterruptWatcher::interrupted() const {
  absl::MutexLock lock(&mu_);
  return interrupted_;
}

}  // namespace tidegate::cli
