// tidegated --config FILE --db FILE [--init] --listen ADDR [TLS and auth flags]: the broker
// (docs/design.md §8, docs/security.md).
#include <iostream>

#include "CLI/CLI.hpp"
#include "broker/http/http_server.h"
#include "broker/service/server.h"

int main(int argc, char** argv) {
  tidegate::service::ServerOptions options;
  CLI::App app{"tidegated: the Tidegate GPU quota broker.\n"
               "Exit codes: 0 clean shutdown (SIGTERM/SIGINT), 1 ledger or port unavailable, or the ledger\n"
               "lost acknowledged commits while serving (docs/operations.md), 2 bad flags or config."};
  app.add_option("--config", options.config_path, "broker config (YAML, tidegate.v1.Config)")->required();
  app.add_option("--db", options.db_path,
                 "SQLite ledger file (must exist unless --init), or a PostgreSQL ledger shared by several\n"
                 "brokers, one of them the leader: postgresql://... or 'host=... dbname=...' (docs/ha.md)")
      ->capture_default_str();
  app.add_option("--advertise", options.advertise,
                 "PostgreSQL ledger: the address standbys send clients to while this broker leads (default --listen)");
  app.add_option("--lease-ms", options.lease_ms,
                 "PostgreSQL ledger: the leader's lease; a standby takes over at most this long after the leader stopped")
      ->check(CLI::Range(int64_t{100}, int64_t{600000}))
      ->capture_default_str();
  app.add_option("--acked-file", options.acked_file,
                 "PostgreSQL ledger: this broker's record of the highest seq it saw committed, on storage that\n"
                 "outlives the process; taking the lease over a journal that ends before it is refused (exit 1)");
  app.add_flag("--init", options.init,
               "create the ledger if --db is missing or empty (without it, tidegated refuses to start\n"
               "rather than replace a lost ledger with a new one); an existing ledger opens as usual");
  app.add_option("--listen", options.listen, "gRPC address to serve")->capture_default_str();
  std::string sync = "full";
  app.add_option("--sync", sync, "SQLite synchronous mode: full (durable across power loss) or normal")
      ->check(CLI::IsMember({"full", "normal"}))
      ->capture_default_str();
  app.add_option("--snapshot-every", options.snapshot_every,
                 "journal entries between snapshots, at least (see --snapshot-journal-ratio)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--snapshot-journal-ratio", options.snapshot_journal_ratio,
                 "...and journal bytes since the last snapshot, as a multiple of its size (0 to 100; 0: entries\n"
                 "only): snapshots write at most 1/RATIO of the journal's bytes as the state grows, and a restart\n"
                 "after a crash replays up to about RATIO x the snapshot's size of journal")
      ->check(CLI::Validator(
          [](std::string& value) -> std::string {
            // Range() lets "nan" through; a ratio must be a plain number.
            double ratio = 0;
            if (!CLI::detail::lexical_cast(value, ratio) || !(ratio >= 0 && ratio <= 100)) {
              return "must be a number from 0 to 100, got " + value;
            }
            return std::string();
          },
          "NUMBER in [0 - 100]"))
      ->capture_default_str();
  // Limits against hostile or runaway clients (README "Limits", docs/limits.md).
  app.add_option("--max-queued-commands", options.max_queued_commands,
                 "commands waiting for the writer; past it callers get RESOURCE_EXHAUSTED")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-request-bytes", options.max_request_bytes,
                 "largest job command (Admit, Release, AckResize, ...) or stream request; past it INVALID_ARGUMENT")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-config-bytes", options.max_config_bytes,
                 "largest message of any kind (ApplyConfig, an agent's view); gRPC refuses larger ones")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-streams", options.max_streams,
                 "open WaitAdmission/WatchResizes/agent streams in total; past it RESOURCE_EXHAUSTED")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-streams-per-peer", options.max_streams_per_peer,
                 "open streams from one client host; past it RESOURCE_EXHAUSTED")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--tls-cert", options.tls_cert, "serve TLS with this certificate chain (PEM)");
  app.add_option("--tls-key", options.tls_key, "the private key of --tls-cert (PEM)");
  app.add_option("--client-ca", options.client_ca,
                 "verify client certificates against this CA (PEM); a verified certificate's SAN or CN\n"
                 "names its principal");
  app.add_option("--roles", options.roles_path,
                 "roles file (YAML, docs/security.md): turns authorization on; re-read on SIGHUP");
  app.add_option("--tokens", options.tokens_path,
                 "bearer tokens file: `PRINCIPAL SHA256HEX` lines (`tidegate auth hash-token`); re-read on SIGHUP");
  app.add_flag("--insecure", options.insecure,
               "allow a non-loopback --listen without TLS and --roles (anyone who reaches the port is trusted)");
  app.add_flag("--reflection", options.reflection, "serve gRPC server reflection (off by default)");
  app.add_option("--http-listen", options.http_listen,
                 "serve /metrics, /healthz, /readyz and the web view on this HTTP address (off by default);\n"
                 "a non-loopback address needs --tls-cert and --roles (or --insecure), as --listen does");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  options.sync_full = sync == "full";
  if (options.http_listen.empty()) return tidegate::service::RunServer(options);
  if (auto s = tidegate::http::CheckHttpListen(options); !s.ok()) {
    std::cerr << "tidegated: " << s.message() << "\n";
    return 2;
  }
  return tidegate::service::RunServer(options, tidegate::http::HttpSideServer(options),
                                      tidegate::http::HttpStandbySideServer(options));
}
