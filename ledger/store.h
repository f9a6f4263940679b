// The ledger's storage: an append-only journal of the commands the core
// applied, snapshots of the core's state, and query tables (jobs, hourly
// usage, loans) that reads are served from. docs/design.md §1.
//
// Three implementations pass one conformance suite (ledger/store_conformance.h):
// SQLite (WAL, the default), PostgreSQL (several brokers on one ledger,
// postgres_store.h) and in-memory (tests, simulations).
//
// Threading: a Store is used by one writer thread; readers that need
// concurrency open their own Store on the same file (SQLite WAL allows it).
#ifndef TIDEGATE_LEDGER_STORE_H_
#define TIDEGATE_LEDGER_STORE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tidegate::ledger {

// One journalled command. `payload` is a serialized tidegate.internal.v1.Command;
// `checksum` is CRC-32 (zlib) of the payload, checked on every read.
struct JournalRecord {
  int64_t seq = 0;       // 1, 2, 3, ... without gaps.
  int64_t at_ms = 0;     // the time the core applied it.
  std::string kind;      // "submit", "finish", "tick", ... (for people and queries)
  std::string payload;
  uint32_t checksum = 0;
};

// The core's whole state (a serialized tidegate.internal.v1.CoreSnapshot) after the
// journal entry `seq` (0 = the initial state, before any command).
struct SnapshotRecord {
  int64_t seq = 0;
  int64_t at_ms = 0;
  std::string payload;
};

// One piece of a snapshot written over several commits, so that no single
// transaction carries the whole state (tens of MB at 100k jobs would hold
// SQLite's one writer for seconds). A snapshot in parts becomes readable only
// when its PartedSnapshot row is committed; parts no row names (a writer
// that stopped midway) are never read, and are deleted by the next commit of
// a snapshot row.
struct SnapshotPart {
  int64_t seq = 0;    // the snapshot's seq
  int64_t index = 0;  // 0, 1, 2, ... in payload order
  std::string bytes;
};

// The row that makes a snapshot written in parts readable: committed with or
// after the last of its parts. `checksum` is SnapshotChecksum of the whole
// (the parts concatenated in index order, seq, at_ms), checked on every read.
struct PartedSnapshot {
  int64_t seq = 0;
  int64_t at_ms = 0;
  int64_t parts = 0;
  uint32_t checksum = 0;
};

// Latest known state of one job (query table `jobs`).
struct JobRow {
  std::string job;
  std::string team;
  std::string cluster;
  std::string state;        // queued, admitted, draining, ended, rejected
  int64_t created_at_ms = 0;
  int64_t admitted_at_ms = 0;  // 0 = never
  int64_t ended_at_ms = 0;     // 0 = not ended
  std::string reason;
  std::string spec;         // serialized tidegate.v1.JobSpec
};

// Resource-seconds in one hour for one team (query table `usage_hourly`).
// Rows with the same key are added together.
struct UsageRow {
  std::string team;
  std::string resource;
  int64_t hour_start_ms = 0;
  double used = 0;
  double borrowed = 0;
  double lent = 0;
  double queued = 0;
};

// Resource-seconds borrower used of lender's idle guarantee on one UTC day
// (query table `loans`). Rows with the same key are added together.
struct LoanRow {
  std::string borrower;
  std::string lender;
  std::string resource;
  std::string day;  // YYYY-MM-DD
  double amount = 0;
};

// What one group commit writes, in one transaction: all or nothing.
struct Batch {
  std::vector<JournalRecord> journal;   // seqs continue LastSeq() without gaps.
  std::vector<JobRow> jobs;             // upserts by job id.
  std::vector<UsageRow> usage;          // added to existing rows.
  std::vector<LoanRow> loans;           // added to existing rows.
  std::optional<SnapshotRecord> snapshot;
  // A snapshot written over several batches: parts (upserts by seq, index),
  // then the row naming them. A batch holds at most one of the two rows.
  std::vector<SnapshotPart> snapshot_parts;
  std::optional<PartedSnapshot> parted_snapshot;
};

struct JobFilter {
  std::string team;   // empty = all
  std::string state;  // empty = all
};

class Store {
 public:
  virtual ~Store() = default;

  // Writes the batch atomically and durably (per the store's sync option).
  // FAILED_PRECONDITION if the journal seqs do not continue LastSeq(), or the
  // snapshot's seq is after the journal's new end; INVALID_ARGUMENT if a
  // checksum is not Checksum(payload), a key (job id, team, resource,
  // borrower, lender) is empty or a day is not YYYY-MM-DD. Either way nothing
  // is written (ledger/batch_rules.h). An empty batch is a no-op.
  // A parted snapshot is refused FAILED_PRECONDITION unless parts 0..parts-1
  // of its seq are stored (by this batch or earlier ones).
  // Snapshots kept: the earliest and the 3 latest; older ones are pruned.
  // Committing a snapshot row (either kind) deletes every part that no
  // parted snapshot row names.
  virtual absl::Status Commit(const Batch& batch) = 0;

  virtual absl::StatusOr<int64_t> LastSeq() = 0;  // 0 when empty.
  // Snapshots are stored with a checksum of (seq, at_ms, payload) that every
  // read checks: a snapshot that does not match is DATA_LOSS naming its seq
  // (ledger/journal_damage.h: DamagedSnapshotSeq), so a reader can fall back
  // to an older one with SnapshotBefore.
  // A snapshot written in parts reads back whole; a missing part is DATA_LOSS
  // naming its seq, like a checksum mismatch.
  // The snapshot with the highest seq, or nullopt when there is none.
  virtual absl::StatusOr<std::optional<SnapshotRecord>> LatestSnapshot() = 0;
  // The snapshot with the lowest seq (the initial state), or nullopt.
  virtual absl::StatusOr<std::optional<SnapshotRecord>> EarliestSnapshot() = 0;
  // The snapshot with the highest seq below `seq`, or nullopt.
  virtual absl::StatusOr<std::optional<SnapshotRecord>> SnapshotBefore(int64_t seq) = 0;
  // Calls fn for every entry with seq > after_seq in order; stops at the
  // first error fn returns. DATA_LOSS when a checksum does not match or a seq
  // is missing; the damaged entry is not passed to fn, and the status carries
  // its seq (ledger/journal_damage.h: DamageOf). fn may call the store.
  virtual absl::Status ReadJournal(int64_t after_seq,
                                   const std::function<absl::Status(const JournalRecord&)>& fn) = 0;

  // Stored snapshot parts that no snapshot row names: those of a snapshot
  // being written, or of one whose writer stopped midway.
  virtual absl::StatusOr<int64_t> UnfinishedSnapshotParts() = 0;

  // Ordered by (created_at_ms, job).
  virtual absl::StatusOr<std::vector<JobRow>> Jobs(const JobFilter& filter) = 0;
  virtual absl::StatusOr<std::optional<JobRow>> Job(const std::string& id) = 0;
  // Usage rows of `team` (empty = all) with hour_start_ms >= since_ms,
  // ordered by (team, resource, hour_start_ms).
  virtual absl::StatusOr<std::vector<UsageRow>> Usage(const std::string& team, int64_t since_ms) = 0;
  // Loans where `team` (empty = all) is borrower or lender, day >= since_day,
  // ordered by (day, borrower, lender, resource).
  virtual absl::StatusOr<std::vector<LoanRow>> Loans(const std::string& team, const std::string& since_day) = 0;
};

std::unique_ptr<Store> NewMemoryStore();

struct SqliteOptions {
  // PRAGMA synchronous: FULL (default) makes every commit durable across a
  // power loss; NORMAL only across a process crash (WAL).
  bool synchronous_full = true;
  bool read_only = false;
  // false: NOT_FOUND when the file is missing, FAILED_PRECONDITION when it
  // holds no tables, rather than creating a new ledger.
  bool create = true;
  // The opener starts a new ledger (tidegated --init): a new file (missing
  // or 0 bytes) restarts LEDGER.acked at 0. Otherwise the record is kept and
  // checked, so a tool that merely creates a file where a ledger was (e.g.
  // `tidegate ledger import-usage --create`) cannot erase the evidence that
  // acknowledged commits are missing.
  bool init = false;
};
// Opens (creating if missing, unless !create) a SQLite ledger at `path`,
// running forward schema migrations. FAILED_PRECONDITION naming the versions when the file's
// schema is newer than this binary knows. read_only: NOT_FOUND when the file
// is missing; FAILED_PRECONDITION when it is not at this binary's schema
// version (a reader cannot migrate). A read-only store's Commit fails
// FAILED_PRECONDITION. A writer keeps LEDGER.acked (ledger/acked_seq.h) and
// refuses with DATA_LOSS a journal that ends before the seq recorded there.
absl::StatusOr<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path, const SqliteOptions& options);

// CRC-32 of a payload, as stored in JournalRecord::checksum.
uint32_t Checksum(const std::string& payload);
// CRC-32 of a snapshot's payload, then its seq and at_ms (so a snapshot
// moved to another seq does not match either).
uint32_t SnapshotChecksum(const SnapshotRecord& snapshot);
// The same for a payload held elsewhere (e.g. a snapshot read from a pipe).
uint32_t SnapshotChecksum(std::string_view payload, int64_t seq, int64_t at_ms);

}  // namespace tidegate::ledger

#endif  // TIDEGATE_LEDGER_STORE_H_
