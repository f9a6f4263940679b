// What every subcommand that talks to the broker shares (docs/design.md §7, §8):
// where the broker is, how long to wait for it, how a gRPC status becomes an
// exit code and a message, and how Ctrl-C stops a long wait.
//
// The broker's address comes from `--server ADDR`, then the TIDEGATE_SERVER
// environment variable, then 127.0.0.1:50051. ADDR is any gRPC target
// ("host:port", "dns:///host:port", "unix:/path"). `--server` and `--timeout`
// are options of the top-level app; broker subcommands fall through to it, so
// `tidegate --server X jobs` and `tidegate jobs --server X` are the same.
//
// Errors print one line on stderr, `tidegate: CODE: message`, and map to the
// exit codes of exit_codes.h (ExitCodeFor).
#ifndef TIDEGATE_CLI_CLIENT_H_
#define TIDEGATE_CLI_CLIENT_H_

#include <chrono>
#include <memory>
#include <ostream>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "cli/auth_channel.h"
#include "cli/command.h"
#include "cli/exit_codes.h"
#include "grpcpp/grpcpp.h"
#include "tidegate/v1/service.grpc.pb.h"

namespace CLI {
class App;
}  // namespace CLI

namespace tidegate::cli {

inline constexpr char kDefaultServer[] = "127.0.0.1:50051";
inline constexpr char kServerEnv[] = "TIDEGATE_SERVER";

// The top-level options of broker subcommands.
struct ClientOptions {
  std::string server;           // --server; empty = TIDEGATE_SERVER, then kDefaultServer.
  std::string timeout = "10s";  // --timeout: the deadline of each request (not of a --wait).
  ChannelSecurity security;     // --tls, --ca, --cert, --key, --token-file (cli/auth_channel.h).
};

// Adds --server and --timeout to the top-level app, bound to *options (which
// must outlive the parse and the callbacks).
void AddClientOptions(CLI::App& app, ClientOptions* options);

// Adds `-o,--output table|json` to a broker subcommand, bound to *output
// (default "table"), and lets the subcommand's unknown options fall through to
// the top-level app (for --server and --timeout after the subcommand).
void AddOutputOption(CLI::App& sub, std::string* output);

// The address to dial: `flag` when non-empty, else `env` when non-null and
// non-empty, else kDefaultServer.
std::string ResolveServer(const std::string& flag, const char* env);

// The exit code for a failed RPC (exit_codes.h): INVALID_ARGUMENT and
// OUT_OF_RANGE -> 2, NOT_FOUND -> 3, ALREADY_EXISTS, FAILED_PRECONDITION and
// ABORTED -> 4, UNAVAILABLE and DEADLINE_EXCEEDED -> 5, anything else -> 6.
// OK -> 0.
int ExitCodeFor(grpc::StatusCode code);

// "NOT_FOUND", "UNAVAILABLE", ...: the canonical name of a status code.
std::string StatusCodeName(grpc::StatusCode code);

// The line printed for a failed RPC, without the newline:
// "tidegate: NOT_FOUND: job slurm:9 does not exist". When the broker could not
// be reached (UNAVAILABLE, DEADLINE_EXCEEDED) it names the address and how to
// choose another one.
std::string DescribeRpcError(const grpc::Status& status, const std::string& server);

// A channel to the broker and the stubs of its services, for one command.
// Not thread-safe beyond what the gRPC stubs are (they are thread-safe).
class Client {
 public:
  // Resolves the address (ResolveServer with the process environment) and
  // parses --timeout; INVALID_ARGUMENT naming --timeout and its value if it is
  // not a duration, or naming a TLS/token file that cannot be read. Does not connect: the first call does.
  static absl::StatusOr<std::unique_ptr<Client>> Create(const ClientOptions& options);

  const std::string& server() const { return server_; }
  v1::AdmissionService::Stub& admission() { return *admission_; }
  v1::QuotaService::Stub& quota() { return *quota_; }
  v1::ElasticService::Stub& elastic() { return *elastic_; }

  // Sets the per-request deadline (--timeout) on a unary call's context.
  void SetDeadline(grpc::ClientContext* context) const;

  // Writes DescribeRpcError on `err` and returns ExitCodeFor(status).
  int Fail(const grpc::Status& status, std::ostream& err) const;

 private:
  Client(std::string server, std::chrono::seconds timeout, std::shared_ptr<grpc::Channel> channel);

  std::string server_;
  std::chrono::seconds timeout_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::AdmissionService::Stub> admission_;
  std::unique_ptr<v1::QuotaService::Stub> quota_;
  std::unique_ptr<v1::ElasticService::Stub> elastic_;
};

// The footer of every broker subcommand's --help: the global options and the
// exit codes.
std::string BrokerCommandFooter();

// The shape of most broker subcommands: make the client (a bad --timeout is
// exit 2), make one unary call with the --timeout deadline, and on success
// print the response; on failure print the error. Returns the exit code.
// `call(Client&, grpc::ClientContext*, Response*)` returns the grpc::Status;
// `print(const Response&)` writes on io.out.
template <typename Response, typename Call, typename Print>
int CallBroker(const ClientOptions& options, const Io& io, Call call, Print print) {
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(options);
  if (!client.ok()) {
    *io.err << "tidegate: " << client.status().message() << "\n";
    return kExitBadInput;
  }
  Response response;
  grpc::ClientContext context;
  (*client)->SetDeadline(&context);
  const grpc::Status status = call(**client, &context, &response);
  if (!status.ok()) return (*client)->Fail(status, *io.err);
  print(response);
  io.out->flush();
  return kExitOk;
}

// While alive, SIGINT and SIGTERM do not kill the process: they cancel the
// context given to Watch (if any), wake SleepFor, and set interrupted(). The
// previous handlers come back on destruction. One at a time per process.
//
// Thread-safe. A signal handler only writes a byte to a pipe; a thread of this
// class reads it and cancels, since TryCancel is not async-signal-safe.
class InterruptWatcher {
 public:
  InterruptWatcher();
  ~InterruptWatcher();
  InterruptWatcher(const InterruptWatcher&) = delete;
  InterruptWatcher& operator=(const InterruptWatcher&) = delete;

  // Cancels `context` on the next (or an already received) interrupt;
  // nullptr stops watching. The context must stay alive until replaced.
  void Watch(grpc::ClientContext* context);

  // Sleeps for `duration` or until interrupted; returns interrupted().
  bool SleepFor(std::chrono::milliseconds duration);

  bool interrupted() const;

 private:
  void Run();

  int read_fd_ = -1;
  int write_fd_ = -1;
  mutable absl::Mutex mu_;
  bool interrupted_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;
  struct SavedHandlers;
  std::unique_ptr<SavedHandlers> saved_;
  std::thread thread_;
};

}  // namespace tidegate::cli

#endif  // TIDEGATE_CLI_CLIENT_H_
