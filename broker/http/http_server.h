// tidegated's HTTP endpoint (--http-listen; docs/observability.md):
//   /metrics   Prometheus text format (broker_metrics.h)
//   /healthz   200 while the writer thread is alive, else 503 (health.h)
//   /readyz    200 while it is alive and the ledger accepts writes, else 503
//   /          the quota tree; /team?name=T one team (views.h)
//   /api/watch the live part of a page once it changes (for the script)
//   /team/forecast.svg  the forecast library's chart of a team's demand
// On cpp-httplib (Debian's libcpp-httplib), HTTPS with the broker's
// --tls-cert/--tls-key. With --roles the same identities and roles as gRPC
// apply: a bearer token (Authorization header, or the cookie /login sets);
// team pages need a role that reads the team, /metrics one that reads every
// team. /healthz and /readyz answer anyone: they say only ok or not, and
// probes (kubelet, systemd, load balancers) carry no tokens.
//
// Threading: requests run on the server's own thread pool; everything they
// read is the published model, the loop's health and their own ledger reader.
#ifndef TIDEGATE_BROKER_HTTP_HTTP_SERVER_H_
#define TIDEGATE_BROKER_HTTP_HTTP_SERVER_H_

#include "absl/status/status.h"
#include "broker/service/server.h"

namespace tidegate::http {

// INVALID_ARGUMENT naming the flag and value: an --http-listen that is not
// HOST:PORT, or one reachable from the network without TLS and --roles
// (unless --insecure), as for --listen.
absl::Status CheckHttpListen(const service::ServerOptions& options);

// What RunServer starts beside gRPC when --http-listen is set: it binds the
// port (an error if taken), logs `http: serving on HOST:PORT`, and sets the
// core loop's batch observer for the metrics.
service::SideServerFactory HttpSideServer(const service::ServerOptions& options);

// What a standby broker (PostgreSQL ledger) serves on --http-listen until it
// leads: /healthz, /readyz (ready while it reaches the database, naming the
// leader), /metrics (tidegate_leader 0) and 503 naming the leader elsewhere.
service::StandbySideFactory HttpStandbySideServer(const service::ServerOptions& options);

}  // namespace tidegate::http

#endif  // TIDEGATE_BROKER_HTTP_HTTP_SERVER_H_
