#include "ledger/postgres_lease.h"

#include <utility>

#include "ledger/postgres_conn.h"
#include "ledger/postgres_schema.h"

namespace tidegate::ledger {
namespace {

// Statements are short and never wait long: a renewal waits behind at most
// one commit (the writer's share lock on the row).
constexpr char kSession[] = "SET synchronous_commit = on; SET lock_timeout = '5s'";

constexpr char kAcquire[] =
    "UPDATE leader_lease SET epoch = epoch + 1, holder = $1, address = $2, since = clock_timestamp(), "
    "expires_at = clock_timestamp() + $3 * interval '1 millisecond' "
    "WHERE id = 1 AND expires_at <= clock_timestamp() RETURNING epoch";
constexpr char kRenew[] =
    "UPDATE leader_lease SET expires_at = clock_timestamp() + $2 * interval '1 millisecond' "
    "WHERE id = 1 AND epoch = $1 AND expires_at > clock_timestamp()";
constexpr char kRelease[] =
    "UPDATE leader_lease SET expires_at = clock_timestamp() WHERE id = 1 AND epoch = $1 "
    "AND expires_at > clock_timestamp()";
constexpr char kRead[] =
    "SELECT holder, address, epoch, CASE WHEN since = '-infinity' THEN 0 "
    "ELSE (extract(epoch FROM since) * 1000)::bigint END, "
    "CASE WHEN expires_at = '-infinity' THEN -1 "
    "ELSE (extract(epoch FROM expires_at - clock_timestamp()) * 1000)::bigint END FROM leader_lease WHERE id = 1";

}  // namespace

PgLease::PgLease(std::unique_ptr<PgConnection> db) : db_(std::move(db)) {}
PgLease::~PgLease() = default;

absl::StatusOr<std::unique_ptr<PgLease>> PgLease::Open(const std::string& conninfo) {
  absl::StatusOr<std::unique_ptr<PgConnection>> db = PgConnection::Open(conninfo, kSession);
  if (!db.ok()) return db.status();
  if (absl::Status s = CheckPostgresSchemaForReading(**db); !s.ok()) return s;
  return std::unique_ptr<PgLease>(new PgLease(*std::move(db)));
}

absl::StatusOr<std::optional<int64_t>> PgLease::Acquire(const std::string& holder, const std::string& address,
                                                        int64_t ttl_ms) {
  absl::StatusOr<PgRows> rows = db_->Exec(kAcquire, PgParams().Text(holder).Text(address).Int(ttl_ms));
  if (!rows.ok()) return rows.status();
  if (rows->size() == 0) return std::nullopt;
  return rows->Int(0, 0);
}

absl::StatusOr<bool> PgLease::Renew(int64_t epoch, int64_t ttl_ms) {
  absl::StatusOr<PgRows> rows = db_->Exec(kRenew, PgParams().Int(epoch).Int(ttl_ms));
  if (!rows.ok()) return rows.status();
  return rows->affected() == 1;
}

absl::Status PgLease::Release(int64_t epoch) { return db_->Exec(kRelease, PgParams().Int(epoch)).status(); }

absl::StatusOr<LeaseInfo> PgLease::Read() {
  absl::StatusOr<PgRows> rows = db_->Exec(kRead);
  if (!rows.ok()) return rows.status();
  if (rows->size() == 0) return absl::FailedPreconditionError("the ledger has no leader_lease row");
  return LeaseInfo{rows->Text(0, 0), rows->Text(0, 1), rows->Int(0, 2), rows->Int(0, 3), rows->Int(0, 4)};
}

}  // namespace tidegate::ledger
