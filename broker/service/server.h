// tidegated: the broker process. Loads the config, opens the ledger, recovers
// the core, serves gRPC until SIGTERM/SIGINT, then stops accepting, finishes
// what is in flight, writes a snapshot and exits 0 (1, writing nothing, when
// the ledger was found to have lost acknowledged commits).
#ifndef TIDEGATE_BROKER_SERVICE_SERVER_H_
#define TIDEGATE_BROKER_SERVICE_SERVER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace tidegate::service {

class AgentServiceImpl;
class CoreLoop;
class ForecastServiceImpl;
class StreamLimiter;
namespace auth {
class Authenticator;
}

struct ServerOptions {
  std::string config_path;              // --config (YAML, tidegate.v1.Config)
  std::string db_path = "tidegate.db";  // --db (SQLite ledger file, or a PostgreSQL conninfo)
  // --init: create the ledger when --db is missing or empty (0 bytes).
  // Without it such a path is refused: a ledger that vanished is never
  // silently replaced by a new, empty one. An existing ledger is opened as
  // usual either way.
  bool init = false;
  std::string listen = "127.0.0.1:50051";
  bool sync_full = true;                // --sync full|normal
  int64_t snapshot_every = 10000;       // journal entries between snapshots
  double snapshot_journal_ratio = 0.5;  // ...and journal bytes since / last snapshot's bytes
  // Limits against hostile or runaway clients (docs/limits.md).
  int64_t max_queued_commands = 10000;      // --max-queued-commands
  int64_t max_request_bytes = 64 * 1024;    // --max-request-bytes
  int64_t max_config_bytes = 4 << 20;       // --max-config-bytes
  int64_t max_streams = 8192;               // --max-streams
  int64_t max_streams_per_peer = 1024;      // --max-streams-per-peer
  // Who may connect and do what (docs/security.md). TLS when tls_cert and
  // tls_key are set; client certificates signed by client_ca are verified
  // and name their principal. roles_path (YAML) turns checks on; without it
  // every caller is admin, which is allowed on a loopback --listen only,
  // unless `insecure`. tokens_path: hashed bearer tokens. Both files are
  // re-read on SIGHUP.
  std::string tls_cert, tls_key, client_ca;
  std::string roles_path, tokens_path;
  bool insecure = false;    // --insecure: allow a non-loopback listen without TLS and roles.
  bool reflection = false;  // --reflection: serve gRPC server reflection.
  // Brokers sharing a PostgreSQL ledger (docs/ha.md): the address clients
  // are sent to while this broker leads (default --listen), and the lease.
  std::string advertise;    // --advertise
  int64_t lease_ms = 2000;  // --lease-ms
  // --acked-file: this broker's record of the highest seq it saw committed,
  // as leader or standby, on its own disk (ledger/acked_seq.h). It outlives
  // restarts, so a broker never takes the lease over a journal that lost
  // commits it saw (PostgreSQL only; a SQLite ledger keeps FILE.acked).
  std::string acked_file;
  // --http-listen: metrics, health and the web view (broker/http,
  // docs/observability.md); empty = off.
  std::string http_listen;
};

// What a side server (the HTTP endpoint of broker/http) reads from the
// broker. It is made before the core loop starts (so it may set the loop's
// batch observer) and destroyed after the gRPC server stopped.
struct BrokerParts {
  CoreLoop* loop = nullptr;
  const auth::Authenticator* authenticator = nullptr;
  ForecastServiceImpl* forecast = nullptr;
  StreamLimiter* streams = nullptr;
  AgentServiceImpl* agents = nullptr;
  // PostgreSQL: the epoch of the lease this broker leads under; 0 for SQLite
  // (the only writer, no election).
  int64_t lease_epoch = 0;
};
class SideServer {
 public:
  virtual ~SideServer() = default;
};
// An error ends RunServer with exit 1 (e.g. the port is taken).
using SideServerFactory = std::function<absl::StatusOr<std::unique_ptr<SideServer>>(const BrokerParts&)>;

// What a standby broker's side server reads (PostgreSQL ledger, leader.h).
// It runs while the broker is a standby and is destroyed before the
// leader's side server binds the same port.
class StandbyServer;
struct StandbyParts {
  const StandbyServer* standby = nullptr;
  const auth::Authenticator* authenticator = nullptr;
};
using StandbySideFactory = std::function<absl::StatusOr<std::unique_ptr<SideServer>>(const StandbyParts&)>;

// True when `listen` only accepts local connections: 127.0.0.0/8, ::1,
// localhost, or a unix: socket.
bool IsLoopbackListen(const std::string& listen);

// INVALID_ARGUMENT naming --listen and its value unless it is HOST:PORT
// with a port from 0 to 65535 (0: any free one), or a unix: socket. gRPC
// itself would read 99999 as 34463, and a bare host as a port it picks.
absl::Status CheckListenAddress(const std::string& listen);

// Exit codes: 0 after a clean shutdown, 2 bad config or flags, 1 when the
// ledger or the listening port cannot be opened (the ledger missing or empty
// without --init, locked by another broker, read-only, damaged) or when it
// was found, while serving, to have lost acknowledged commits.
// `side`, when set, is started as above; `standby_side` while a standby.
int RunServer(const ServerOptions& options, const SideServerFactory& side = nullptr,
              const StandbySideFactory& standby_side = nullptr);

}  // namespace tidegate::service

#endif  // TIDEGATE_BROKER_SERVICE_SERVER_H_
