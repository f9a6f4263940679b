// The leader lease of brokers that share one PostgreSQL ledger: one row
// (holder, address, epoch, since, expires_at), all times the database's own
// clock, so the brokers' clocks need not agree (docs/ha.md).
//
//   Acquire  takes the lease when it has expired (or was never held): the
//            epoch goes up by one. A fenced Commit (postgres_store.h) of any
//            older epoch fails from then on.
//   Renew    extends the lease of `epoch` if it has not expired yet; once it
//            expired it is lost for good (the holder must step down, even if
//            nobody took it over).
//   Release  ends the lease of `epoch` at once (a clean shutdown), so a
//            standby need not wait for it to expire.
//
// Threading: one thread at a time per PgLease.
#ifndef TIDEGATE_LEDGER_POSTGRES_LEASE_H_
#define TIDEGATE_LEDGER_POSTGRES_LEASE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace tidegate::ledger {

class PgConnection;

struct LeaseInfo {
  std::string holder;   // empty: never held
  std::string address;  // where the holder serves gRPC
  int64_t epoch = 0;
  int64_t since_ms = 0;        // Unix ms the holder took it (0 = never)
  int64_t expires_in_ms = 0;   // by the database's clock; <= 0 = expired
  bool held() const { return !holder.empty() && expires_in_ms > 0; }
};

class PgLease {
 public:
  // A connection of its own, so renewing never waits behind the writer's
  // transaction for longer than one commit.
  static absl::StatusOr<std::unique_ptr<PgLease>> Open(const std::string& conninfo);
  ~PgLease();

  // The new epoch, or nullopt when another holder's lease is still running.
  absl::StatusOr<std::optional<int64_t>> Acquire(const std::string& holder, const std::string& address,
                                                 int64_t ttl_ms);
  // true: extended by ttl_ms from now; false: lost (expired or taken over).
  absl::StatusOr<bool> Renew(int64_t epoch, int64_t ttl_ms);
  absl::Status Release(int64_t epoch);
  absl::StatusOr<LeaseInfo> Read();

 private:
  explicit PgLease(std::unique_ptr<PgConnection> db);
  std::unique_ptr<PgConnection> db_;
};

}  // namespace tidegate::ledger

#endif  // TIDEGATE_LEDGER_POSTGRES_LEASE_H_
