// Opening the ledger for writing, and leadership among brokers that share a
// PostgreSQL ledger (docs/ha.md).
//
// SQLite: the broker takes the file's lock (ledger/ledger_lock.h) and is the
// only writer; there is no election.
//
// PostgreSQL: every broker starts as a standby. It serves StandbyServer on
// --listen (UNAVAILABLE naming the leader), keeps a core warm from the
// journal (leader_tail.h) and tries to take the lease (ledger/postgres_lease.h)
// every quarter lease. Once it holds the lease it opens a writer store fenced
// with the lease's epoch and goes on like a SQLite broker. A LeaseKeeper
// renews the lease every quarter lease; when a renewal has not succeeded
// within one lease (a paused process, the database unreachable, another
// broker took over) the broker steps down: it re-executes itself and starts
// again as a standby. Its commits were fenced before that: none can land
// after the lease expired.
//
// With --acked-file, what the broker saw committed is kept in that file
// across these re-executions and restarts: the standby records each poll's
// seq, the writer store each commit's, and the writer store refuses to open
// (DATA_LOSS, exit 1) over a journal that ends before it.
#ifndef TIDEGATE_BROKER_SERVICE_LEADER_H_
#define TIDEGATE_BROKER_SERVICE_LEADER_H_

#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "broker/ledger_ops/recovery.h"
#include "broker/service/server.h"
#include "grpcpp/grpcpp.h"
#include "ledger/ledger_lock.h"
#include "ledger/postgres_lease.h"
#include "ledger/store.h"

namespace tidegate::service {

class LeaseKeeper {
 public:
  using Clock = std::chrono::steady_clock;
  // `valid_until`: when the lease taken at the latest expires by this
  // process's clock (measured from before the statement that took it).
  LeaseKeeper(std::unique_ptr<ledger::PgLease> lease, int64_t epoch, int64_t ttl_ms, Clock::time_point valid_until);
  ~LeaseKeeper();  // stops renewing and releases the lease, so a standby need not wait for it to expire

  void Start();
  int64_t epoch() const { return epoch_; }

 private:
  void Run();
  // Ends this process's leadership: re-executes the broker, which starts as
  // a standby. Does not return.
  [[noreturn]] void StepDown(const std::string& why);

  std::unique_ptr<ledger::PgLease> lease_;
  const int64_t epoch_;
  const int64_t ttl_ms_;
  Clock::time_point valid_until_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

struct LedgerWriter {
  std::optional<ledger::LedgerLock> lock;       // SQLite: held until the broker exits
  std::unique_ptr<ledger::Store> store;
  std::optional<ledger_ops::RecoveredCore> warm;             // PostgreSQL: the standby's core, caught up
  std::unique_ptr<LeaseKeeper> leadership;       // PostgreSQL: renews while the broker leads
};

// The writer store for options.db_path; for PostgreSQL, after serving as a
// standby until this broker took the lease (`credentials` for the standby's
// port). nullopt with *exit_code set when the broker must exit instead:
// 0 after SIGTERM/SIGINT while standby, 1 when the ledger cannot be opened,
// 2 for flags a shared ledger cannot work with (a --listen port of 0).
// `standby_side`, when set, runs while the broker is a standby (its HTTP
// endpoint); an error starting it exits 1.
std::optional<LedgerWriter> OpenLedgerWriter(const ServerOptions& options,
                                             std::shared_ptr<grpc::ServerCredentials> credentials,
                                             const sigset_t& signals, int* exit_code,
                                             const StandbySideFactory& standby_side = nullptr,
                                             const auth::Authenticator* authenticator = nullptr);

}  // namespace tidegate::service

#endif  // TIDEGATE_BROKER_SERVICE_LEADER_H_
