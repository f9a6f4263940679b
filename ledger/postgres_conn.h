// One libpq connection to a PostgreSQL ledger, with the error mapping every
// PostgreSQL piece of the ledger shares (the Store, the lease):
//   UNAVAILABLE          the server cannot be reached or went away (a
//                        restart, a failover): retry later;
//   RESOURCE_EXHAUSTED   disk full (SQLSTATE 53100), too many connections;
//   FAILED_PRECONDITION  the database is read-only (a hot standby);
//   INTERNAL             anything else, with the server's message.
// A broken connection is re-established (PQreset) before the next statement,
// and the session settings are applied again.
//
// Threading: one thread at a time.
#ifndef TIDEGATE_LEDGER_POSTGRES_CONN_H_
#define TIDEGATE_LEDGER_POSTGRES_CONN_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

struct pg_conn;
struct pg_result;

namespace tidegate::ledger {

// A finished statement's rows, as text (bytea decoded with Bytes()).
class PgRows {
 public:
  explicit PgRows(pg_result* result);
  int size() const;
  bool IsNull(int row, int col) const;
  std::string Text(int row, int col) const;
  int64_t Int(int row, int col) const;
  double Real(int row, int col) const;
  std::string Bytes(int row, int col) const;  // a bytea column
  int64_t affected() const;                   // rows an UPDATE/INSERT/DELETE touched

 private:
  std::shared_ptr<pg_result> result_;
};

// Statement parameters: text, or binary for bytea (no escaping needed).
class PgParams {
 public:
  PgParams& Text(std::string value);
  PgParams& Int(int64_t value);
  PgParams& Real(double value);
  PgParams& Bytes(std::string value);

 private:
  friend class PgConnection;
  std::vector<std::string> values_;
  std::vector<int> formats_;
};

class PgConnection {
 public:
  // Connects; `session_sql` runs after every (re)connect (SET ...).
  static absl::StatusOr<std::unique_ptr<PgConnection>> Open(const std::string& conninfo, std::string session_sql);
  ~PgConnection();

  absl::StatusOr<PgRows> Exec(const std::string& sql, const PgParams& params = PgParams());
  // Several statements without parameters (schema migrations).
  absl::Status ExecScript(const std::string& sql);
  // BEGIN; fn; COMMIT — ROLLBACK when fn or the COMMIT fails.
  absl::Status InTransaction(const std::function<absl::Status()>& fn);
  // The conninfo without a password, for messages.
  const std::string& name() const { return name_; }

 private:
  PgConnection(pg_conn* conn, std::string name, std::string session_sql)
      : conn_(conn), name_(std::move(name)), session_sql_(std::move(session_sql)) {}
  absl::Status EnsureConnected();
  absl::Status StatusOf(pg_result* result, const std::string& sql) const;
  pg_conn* conn_;
  std::string name_;
  std::string session_sql_;
};

// True when `db` names a PostgreSQL database rather than a SQLite file: a
// postgresql:// or postgres:// URI, or a key=value conninfo ("host=... dbname=...").
bool IsPostgresLedger(const std::string& db);

// `db` with any password replaced by "***", for logs and messages.
std::string RedactConninfo(const std::string& db);

}  // namespace tidegate::ledger

#endif  // TIDEGATE_LEDGER_POSTGRES_CONN_H_
