#include "ledger/postgres_conn.h"

#include <libpq-fe.h>

#include <cstdlib>
#include <cstring>
#include <regex>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tidegate::ledger {
namespace {

std::string Trimmed(const char* message) {
  std::string out = message == nullptr ? "" : message;
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

}  // namespace

bool IsPostgresLedger(const std::string& db) {
  if (absl::StartsWith(db, "postgresql://") || absl::StartsWith(db, "postgres://")) return true;
  static const std::regex kKeyValue(R"(^\s*[A-Za-z_]+\s*=)");
  return std::regex_search(db, kKeyValue);
}

std::string RedactConninfo(const std::string& db) {
  static const std::regex kUriPassword(R"(://([^:/@]*):[^@]*@)");
  static const std::regex kKeyPassword(R"(password\s*=\s*('[^']*'|\S+))");
  std::string out = std::regex_replace(db, kUriPassword, "://$1:***@");
  return std::regex_replace(out, kKeyPassword, "password=***");
}

PgRows::PgRows(pg_result* result) : result_(result, &PQclear) {}
int PgRows::size() const { return PQntuples(result_.get()); }
bool PgRows::IsNull(int row, int col) const { return PQgetisnull(result_.get(), row, col) != 0; }
std::string PgRows::Text(int row, int col) const {
  return std::string(PQgetvalue(result_.get(), row, col), PQgetlength(result_.get(), row, col));
}
int64_t PgRows::Int(int row, int col) const {
  int64_t v = 0;
  if (!absl::SimpleAtoi(Text(row, col), &v)) return 0;
  return v;
}
double PgRows::Real(int row, int col) const { return std::strtod(PQgetvalue(result_.get(), row, col), nullptr); }
std::string PgRows::Bytes(int row, int col) const {
  size_t n = 0;
  unsigned char* raw =
      PQunescapeBytea(reinterpret_cast<const unsigned char*>(PQgetvalue(result_.get(), row, col)), &n);
  if (raw == nullptr) return "";
  std::string out(reinterpret_cast<const char*>(raw), n);
  PQfreemem(raw);
  return out;
}
int64_t PgRows::affected() const {
  int64_t n = 0;
  if (!absl::SimpleAtoi(PQcmdTuples(result_.get()), &n)) return 0;
  return n;
}

PgParams& PgParams::Text(std::string value) {
  values_.push_back(std::move(value));
  formats_.push_back(0);
  return *this;
}
PgParams& PgParams::Int(int64_t value) { return Text(absl::StrCat(value)); }
// %.17g round-trips every double exactly.
PgParams& PgParams::Real(double value) { return Text(absl::StrFormat("%.17g", value)); }
PgParams& PgParams::Bytes(std::string value) {
  values_.push_back(std::move(value));
  formats_.push_back(1);
  return *this;
}

absl::StatusOr<std::unique_ptr<PgConnection>> PgConnection::Open(const std::string& conninfo,
                                                                 std::string session_sql) {
  pg_conn* conn = PQconnectdb(conninfo.c_str());
  const std::string name = RedactConninfo(conninfo);
  if (conn == nullptr) return absl::ResourceExhaustedError("libpq: out of memory");
  if (PQstatus(conn) != CONNECTION_OK) {
    const std::string message = Trimmed(PQerrorMessage(conn));
    PQfinish(conn);
    return absl::UnavailableError(absl::StrCat("PostgreSQL ledger ", name, ": cannot connect: ", message));
  }
  auto out = std::unique_ptr<PgConnection>(new PgConnection(conn, name, std::move(session_sql)));
  if (!out->session_sql_.empty()) {
    if (absl::Status set = out->ExecScript(out->session_sql_); !set.ok()) return set;
  }
  return out;
}

PgConnection::~PgConnection() { PQfinish(conn_); }

absl::Status PgConnection::EnsureConnected() {
  if (PQstatus(conn_) == CONNECTION_OK) return absl::OkStatus();
  PQreset(conn_);
  if (PQstatus(conn_) != CONNECTION_OK) {
    return absl::UnavailableError(
        absl::StrCat("PostgreSQL ledger ", name_, ": cannot reconnect: ", Trimmed(PQerrorMessage(conn_))));
  }
  if (session_sql_.empty()) return absl::OkStatus();
  pg_result* set = PQexec(conn_, session_sql_.c_str());
  absl::Status status = StatusOf(set, session_sql_);
  PQclear(set);
  return status;
}

absl::Status PgConnection::StatusOf(pg_result* result, const std::string& sql) const {
  const ExecStatusType type = result == nullptr ? PGRES_FATAL_ERROR : PQresultStatus(result);
  if (type == PGRES_COMMAND_OK || type == PGRES_TUPLES_OK) return absl::OkStatus();
  const char* state = result == nullptr ? nullptr : PQresultErrorField(result, PG_DIAG_SQLSTATE);
  const std::string sqlstate = state == nullptr ? "" : state;
  std::string message = Trimmed(result != nullptr ? PQresultErrorMessage(result) : PQerrorMessage(conn_));
  if (message.empty()) message = Trimmed(PQerrorMessage(conn_));
  const std::string text = absl::StrCat("PostgreSQL ledger ", name_, ": ", message,
                                        sqlstate.empty() ? "" : absl::StrCat(" (SQLSTATE ", sqlstate, ")"));
  // Class 08 (connection), 57P (shutdown, crash), or a connection libpq
  // already knows is gone.
  if (PQstatus(conn_) != CONNECTION_OK || absl::StartsWith(sqlstate, "08") || absl::StartsWith(sqlstate, "57P") ||
      sqlstate.empty()) {
    return absl::UnavailableError(text);
  }
  if (sqlstate == "53100" || sqlstate == "53300") return absl::ResourceExhaustedError(text);
  if (sqlstate == "25006") return absl::FailedPreconditionError(text);
  (void)sql;
  return absl::InternalError(text);
}

absl::StatusOr<PgRows> PgConnection::Exec(const std::string& sql, const PgParams& params) {
  if (absl::Status s = EnsureConnected(); !s.ok()) return s;
  std::vector<const char*> values;
  std::vector<int> lengths;
  for (const std::string& v : params.values_) {
    values.push_back(v.data());
    lengths.push_back(static_cast<int>(v.size()));
  }
  pg_result* result = PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(),
                                   lengths.data(), params.formats_.data(), /*resultFormat=*/0);
  PgRows rows(result);
  if (absl::Status s = StatusOf(result, sql); !s.ok()) return s;
  return rows;
}

absl::Status PgConnection::ExecScript(const std::string& sql) {
  if (absl::Status s = EnsureConnected(); !s.ok()) return s;
  pg_result* result = PQexec(conn_, sql.c_str());
  absl::Status status = StatusOf(result, sql);
  PQclear(result);
  return status;
}

absl::Status PgConnection::InTransaction(const std::function<absl::Status()>& fn) {
  absl::StatusOr<PgRows> begin = Exec("BEGIN");
  if (!begin.ok()) return begin.status();
  absl::Status status = fn();
  if (status.ok()) {
    absl::StatusOr<PgRows> commit = Exec("COMMIT");
    status = commit.status();
  }
  if (!status.ok() && PQstatus(conn_) == CONNECTION_OK && PQtransactionStatus(conn_) != PQTRANS_IDLE) {
    pg_result* rollback = PQexec(conn_, "ROLLBACK");
    PQclear(rollback);
  }
  return status;
}

}  // namespace tidegate::ledger
