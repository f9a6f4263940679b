// The PostgreSQL Store (store.h) on plain libpq, for brokers that share one
// database (docs/ha.md): several tidegated, one of them the leader, elected
// through the lease row (postgres_lease.h).
//
// What replaces the SQLite store's guards:
//   - the ledger lock (one writer per file) is the lease: a writer store
//     opened with `fence_epoch` checks, in the same transaction as every
//     commit, that the lease still carries that epoch and has not expired,
//     and holds a share lock on the lease row until the commit, so a takeover
//     (which updates that row) waits for it or fences it out: a deposed or
//     paused leader never commits. Its writer session sets
//     idle_in_transaction_session_timeout so a leader paused inside a
//     transaction cannot hold the row lock for longer than that;
//   - LEDGER.acked (a lost WAL) is the server's own durability: the writer
//     session sets synchronous_commit = on, so an acknowledged commit is on
//     the server's disk (and on every synchronous standby PostgreSQL is
//     configured with). A database that failed over to a replica that
//     missed commits is caught by the brokers' memory: each keeps a record
//     of the highest seq it saw committed (PostgresOptions::acked_record_path,
//     in a file of its own, so it survives a restart) and refuses to lead a
//     journal that ends before it (also broker/service/leader_tail.h).
//
// Journal rows also record the lease epoch of the broker that wrote them, so
// `tidegate ledger verify` can show that epochs never go back.
//
// Threading: one connection per Store, used by one thread at a time; readers
// open their own Store.
#ifndef TIDEGATE_LEDGER_POSTGRES_STORE_H_
#define TIDEGATE_LEDGER_POSTGRES_STORE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "ledger/store.h"

namespace tidegate::ledger {

inline constexpr int64_t kPostgresSchemaVersion = 2;

struct PostgresOptions {
  bool read_only = false;
  // Readers: every read sees one snapshot of the database, taken when the
  // store opens (one REPEATABLE READ transaction), so a check such as
  // `tidegate ledger verify` is consistent while a leader keeps writing.
  bool single_snapshot = false;
  // false: FAILED_PRECONDITION when the database holds no ledger tables,
  // rather than creating them (tidegated --init creates them).
  bool create = true;
  // Writers: the lease epoch every commit checks (postgres_lease.h); nullopt
  // commits unfenced (a single tool such as import-usage, or tests).
  std::optional<int64_t> fence_epoch;
  // idle_in_transaction_session_timeout of a fenced writer: a paused leader's
  // open transaction is ended by the server after this long.
  int64_t idle_transaction_timeout_ms = 2000;
  // Writers: this broker's record of the highest seq it saw committed
  // (acked_seq.h; tidegated --acked-file), kept on the broker's own disk so
  // that it outlives the process. The store refuses with DATA_LOSS a
  // journal that ends before it, and records each commit in it. Empty: none.
  std::string acked_record_path;
};

// Opens the ledger in the database `conninfo` names (a postgresql:// URI or
// key=value conninfo), running forward schema migrations under an advisory
// lock (writers). UNAVAILABLE when the server cannot be reached;
// FAILED_PRECONDITION when the schema is newer than this binary knows, or
// (read_only / !create) when there are no ledger tables. A fenced Commit
// whose epoch is no longer the lease's fails FAILED_PRECONDITION ("not the
// leader") and writes nothing.
absl::StatusOr<std::unique_ptr<Store>> OpenPostgresStore(const std::string& conninfo, const PostgresOptions& options);

// The epoch each journal entry was written under (0 = unfenced), in seq order:
// what the failover tests check never goes back.
absl::StatusOr<std::vector<std::pair<int64_t, int64_t>>> ReadJournalEpochs(const std::string& conninfo);

// Either store by its name: PostgreSQL when IsPostgresLedger(db), else the
// SQLite file (sqlite options apply; for PostgreSQL read_only and create do).
absl::StatusOr<std::unique_ptr<Store>> OpenLedgerStore(const std::string& db, const SqliteOptions& sqlite);

}  // namespace tidegate::ledger

#endif  // TIDEGATE_LEDGER_POSTGRES_STORE_H_
