// The SQLite Store (OpenSqliteStore in store.h): WAL, one transaction per
// Commit, prepared statements cached per connection. Schema and migrations
// are in sqlite_schema.h.
//
// Threading: one connection per Store, used by one thread at a time. Readers
// that run beside the writer open their own Store with read_only = true; WAL
// gives them the last committed state without blocking the writer.
#include <sqlite3.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ledger/acked_seq.h"
#include "ledger/batch_rules.h"
#include "ledger/journal_damage.h"
#include "ledger/sqlite_schema.h"
#include "ledger/sql_store.h"
#include "ledger/sqlite_util.h"
#include "ledger/store.h"

namespace tidegate::ledger {
namespace {

// Per-connection settings. Sorts and temporary indexes stay in memory (on a
// slow disk a temp file made listing 30k jobs take 0.3 s); 16 MiB of page
// cache keeps the hot b-tree pages of a 100k-job ledger in memory. Debian
// builds SQLite to zero every page it frees, so pruning an old snapshot
// wrote its whole size again inside a writer's commit (33 ms at 446k jobs,
// growing with the state); FAST zeroes deleted content only in pages
// written anyway.
// What is deleted here is older state that newer snapshots and the journal
// still hold, so nothing is kept on disk that was not there already.
constexpr char kConnectionPragmas[] = "PRAGMA temp_store = MEMORY; PRAGMA cache_size = -16384; PRAGMA secure_delete = FAST";

// How long a statement waits for another connection's lock before failing
// with UNAVAILABLE. Only a checkpoint or a second writer ever holds one long.
constexpr int kBusyTimeoutMs = 5000;

constexpr char kEnded[] = "ended";

// Statements, named so StatementCache can key them by address.
constexpr char kBegin[] = "BEGIN IMMEDIATE";
constexpr char kCommit[] = "COMMIT";
constexpr char kRollback[] = "ROLLBACK";
constexpr char kLastSeq[] = "SELECT coalesce(max(seq), 0) FROM journal";
constexpr char kAddUsage[] =
    "INSERT INTO usage_hourly(team, resource, hour_start_ms, used, borrowed, lent, queued) "
    "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT(team, resource, hour_start_ms) DO UPDATE SET "
    "used = used + excluded.used, borrowed = borrowed + excluded.borrowed, "
    "lent = lent + excluded.lent, queued = queued + excluded.queued";
constexpr char kAddLoan[] =
    "INSERT INTO loans(borrower, lender, resource, day, amount) VALUES(?1, ?2, ?3, ?4, ?5) "
    "ON CONFLICT(borrower, lender, resource, day) DO UPDATE SET amount = amount + excluded.amount";
constexpr char kPutSnapshot[] =
    "INSERT OR REPLACE INTO snapshots(seq, at_ms, payload, checksum) VALUES(?1, ?2, ?3, ?4)";
// Keeps the earliest snapshot and the ?1 latest.
constexpr char kPruneSnapshots[] =
    "DELETE FROM snapshots WHERE seq > (SELECT min(seq) FROM snapshots) "
    "AND seq NOT IN (SELECT seq FROM snapshots ORDER BY seq DESC LIMIT ?1)";
constexpr char kPutSnapshotPart[] = "INSERT OR REPLACE INTO snapshot_parts(seq, part, bytes) VALUES(?1, ?2, ?3)";
constexpr char kCountSnapshotParts[] = "SELECT count(*) FROM snapshot_parts WHERE seq = ?1 AND part < ?2";
constexpr char kPutPartedSnapshot[] =
    "INSERT OR REPLACE INTO snapshots(seq, at_ms, payload, checksum, parts) VALUES(?1, ?2, X'', ?3, ?4)";
#define TIDEGATE_UNNAMED_PARTS                                                 \
  "FROM snapshot_parts WHERE NOT EXISTS (SELECT 1 FROM snapshots s WHERE s.seq = " \
  "snapshot_parts.seq AND snapshot_parts.part < coalesce(s.parts, 0))"
constexpr char kDeleteUnnamedParts[] = "DELETE " TIDEGATE_UNNAMED_PARTS;
constexpr char kCountUnnamedParts[] = "SELECT count(*) " TIDEGATE_UNNAMED_PARTS;
#undef TIDEGATE_UNNAMED_PARTS
constexpr char kSnapshotParts[] = "SELECT part, bytes FROM snapshot_parts WHERE seq = ?1 AND part < ?2 ORDER BY part";
constexpr char kBeginRead[] = "BEGIN";
constexpr char kLatestSnapshot[] =
    "SELECT seq, at_ms, payload, checksum, parts FROM snapshots ORDER BY seq DESC LIMIT 1";
constexpr char kEarliestSnapshot[] =
    "SELECT seq, at_ms, payload, checksum, parts FROM snapshots ORDER BY seq ASC LIMIT 1";
constexpr char kSnapshotBefore[] =
    "SELECT seq, at_ms, payload, checksum, parts FROM snapshots WHERE seq < ?1 ORDER BY seq DESC LIMIT 1";
constexpr char kReadJournal[] =
    "SELECT seq, at_ms, kind, payload, checksum FROM journal WHERE seq > ?1 ORDER BY seq";
constexpr char kUsageAll[] =
    "SELECT team, resource, hour_start_ms, used, borrowed, lent, queued FROM usage_hourly "
    "WHERE hour_start_ms >= ?2 ORDER BY team, resource, hour_start_ms";
constexpr char kUsageOfTeam[] =
    "SELECT team, resource, hour_start_ms, used, borrowed, lent, queued FROM usage_hourly "
    "WHERE team = ?1 AND hour_start_ms >= ?2 ORDER BY team, resource, hour_start_ms";
constexpr char kLoansAll[] =
    "SELECT borrower, lender, resource, day, amount FROM loans WHERE day >= ?2 "
    "ORDER BY day, borrower, lender, resource";
constexpr char kLoansOfTeam[] =
    "SELECT borrower, lender, resource, day, amount FROM loans "
    "WHERE (borrower = ?1 OR lender = ?1) AND day >= ?2 ORDER BY day, borrower, lender, resource";

#define TIDEGATE_ASSIGN_STMT(var, cache, sql)            \
  absl::StatusOr<Statement> var##_or = (cache).Get(sql); \
  if (!var##_or.ok()) return var##_or.status();          \
  Statement& var = *var##_or

using Connection = std::unique_ptr<sqlite3, int (*)(sqlite3*)>;

class SqliteStore final : public SqlStore {
 public:
  SqliteStore(Connection db, bool read_only) : SqlStore(read_only), connection_(std::move(db)), db_(connection_.get()), cache_(db_) {}

  absl::Status CommitInTransaction(const Batch& batch) override {
    TIDEGATE_RETURN_IF_ERROR(Run(kBegin));
    absl::Status status = WriteBatch(batch);
    if (status.ok()) status = Run(kCommit);
    // A failed statement or COMMIT (e.g. SQLITE_BUSY) can leave the
    // transaction open; roll it back so nothing of the batch stays.
    if (!status.ok() && sqlite3_get_autocommit(db_) == 0) Run(kRollback).IgnoreError();
    return status;
  }

  absl::StatusOr<int64_t> LastSeq() override {
    TIDEGATE_ASSIGN_STMT(stmt, cache_, kLastSeq);
    absl::StatusOr<bool> row = stmt.Step();
    if (!row.ok()) return row.status();
    return stmt.Int(0);
  }

  absl::Status ReadJournal(int64_t after_seq,
                           const std::function<absl::Status(const JournalRecord&)>& fn) override {
    const int64_t from = std::max<int64_t>(after_seq, 0);
    TIDEGATE_ASSIGN_STMT(stmt, cache_, kReadJournal);
    stmt.BindInt(1, from);
    for (int64_t expected = from + 1;; ++expected) {
      absl::StatusOr<bool> row = stmt.Step();
      if (!row.ok()) return row.status();
      if (!*row) return absl::OkStatus();
      JournalRecord record;
      record.seq = stmt.Int(0);
      record.at_ms = stmt.Int(1);
      record.kind = stmt.Text(2);
      record.payload = stmt.Blob(3);
      record.checksum = static_cast<uint32_t>(stmt.Int(4));
      TIDEGATE_RETURN_IF_ERROR(CheckStoredRecord(record, expected));
      TIDEGATE_RETURN_IF_ERROR(fn(record));
    }
  }

  absl::StatusOr<int64_t> UnfinishedSnapshotParts() override {
    TIDEGATE_ASSIGN_STMT(stmt, cache_, kCountUnnamedParts);
    absl::StatusOr<bool> row = stmt.Step();
    if (!row.ok()) return row.status();
    return stmt.Int(0);
  }

  absl::StatusOr<std::vector<JobRow>> Jobs(const JobFilter& filter) override {
    const JobListingSql& q = kJobListingSql;
    const char* sql = filter.team.empty() ? (filter.state.empty() ? q.all : q.by_state)
                                          : (filter.state.empty() ? q.by_team : q.by_team_state);
    TIDEGATE_ASSIGN_STMT(stmt, cache_, sql);
    if (!filter.team.empty()) stmt.BindText(1, filter.team);
    if (!filter.state.empty()) stmt.BindText(2, filter.state);
    std::vector<JobRow> out;
    for (;;) {
      absl::StatusOr<bool> row = stmt.Step();
      if (!row.ok()) return row.status();
      if (!*row) return out;
      out.push_back(ReadJob(stmt));
    }
  }

  absl::StatusOr<std::optional<JobRow>> Job(const std::string& id) override {
    TIDEGATE_ASSIGN_STMT(stmt, cache_, kJobListingSql.by_id);
    stmt.BindText(1, id);
    absl::StatusOr<bool> row = stmt.Step();
    if (!row.ok()) return row.status();
    if (!*row) return std::nullopt;
    return ReadJob(stmt);
  }

  absl::StatusOr<std::vector<UsageRow>> Usage(const std::string& team, int64_t since_ms) override {
    TIDEGATE_ASSIGN_STMT(stmt, cache_, team.empty() ? kUsageAll : kUsageOfTeam);
    if (!team.empty()) stmt.BindText(1, team);
    stmt.BindInt(2, since_ms);
    std::vector<UsageRow> out;
    for (;;) {
      absl::StatusOr<bool> row = stmt.Step();
      if (!row.ok()) return row.status();
      if (!*row) return out;
      out.push_back(UsageRow{stmt.Text(0), stmt.Text(1), stmt.Int(2), stmt.Real(3), stmt.Real(4),
                             stmt.Real(5), stmt.Real(6)});
    }
  }

  absl::StatusOr<std::vector<LoanRow>> Loans(const std::string& team,
                                             const std::string& since_day) override {
    TIDEGATE_ASSIGN_STMT(stmt, cache_, team.empty() ? kLoansAll : kLoansOfTeam);
    if (!team.empty()) stmt.BindText(1, team);
    stmt.BindText(2, since_day);
    std::vector<LoanRow> out;
    for (;;) {
      absl::StatusOr<bool> row = stmt.Step();
      if (!row.ok()) return row.status();
      if (!*row) return out;
      out.push_back(LoanRow{stmt.Text(0), stmt.Text(1), stmt.Text(2), stmt.Text(3), stmt.Real(4)});
    }
  }

 private:
  absl::Status Run(const char* sql) {
    TIDEGATE_ASSIGN_STMT(stmt, cache_, sql);
    return stmt.Run();
  }

  // Up to kJournalRowsPerInsert records a statement: the statement's own
  // work (cursor, halt) is paid once for them.
  absl::Status InsertJournalRecords(const std::vector<JournalRecord>& records) override {
    for (size_t first = 0; first < records.size(); first += kJournalRowsPerInsert) {
      TIDEGATE_RETURN_IF_ERROR(
          InsertJournalRows(records.data() + first, std::min(records.size() - first, kJournalRowsPerInsert)));
    }
    return absl::OkStatus();
  }

  absl::Status InsertJournal(const JournalRecord& record) override { return InsertJournalRows(&record, 1); }

  absl::Status InsertJournalRows(const JournalRecord* records, size_t n) {
    TIDEGATE_ASSIGN_STMT(stmt, cache_, InsertJournalRowsSql(n));
    for (size_t i = 0; i < n; ++i) {
      const int at = static_cast<int>(i) * 5;
      stmt.BindInt(at + 1, records[i].seq);
      stmt.BindInt(at + 2, records[i].at_ms);
      stmt.BindText(at + 3, records[i].kind);
      stmt.BindBlob(at + 4, records[i].payload);
      stmt.BindInt(at + 5, records[i].checksum);
    }
    return stmt.Run();
  }

  absl::Status UpsertJob(const JobRow& job) override {
    if (job.state == kEnded) {
      TIDEGATE_RETURN_IF_ERROR(RunJobStatement(kJobWriteSql.update_ended, job));
      if (sqlite3_changes(db_) > 0) return absl::OkStatus();
    }
    TIDEGATE_RETURN_IF_ERROR(RunJobStatement(kJobWriteSql.upsert, job));
    // Inserted or updated: one row changed. None: the id's team or creation
    // time changed (the upsert's WHERE).
    if (sqlite3_changes(db_) > 0) return absl::OkStatus();
    return RunJobStatement(kJobWriteSql.rewrite, job);
  }

  absl::Status RunJobStatement(const char* sql, const JobRow& job) {
    TIDEGATE_ASSIGN_STMT(stmt, cache_, sql);
    stmt.BindText(1, job.job);
    stmt.BindText(2, job.team);
    stmt.BindText(3, job.cluster);
    stmt.BindText(4, job.state);
    stmt.BindInt(5, job.created_at_ms);
    stmt.BindInt(6, job.admitted_at_ms);
    stmt.BindInt(7, job.ended_at_ms);
    stmt.BindText(8, job.reason);
    stmt.BindBlob(9, job.spec);
    return stmt.Run();
  }

  absl::Status AddUsage(const UsageRow& row) override {
    TIDEGATE_ASSIGN_STMT(stmt, cache_, kAddUsage);
    stmt.BindText(1, row.team);
    stmt.BindText(2, row.resource);
    stmt.BindInt(3, row.hour_start_ms);
    stmt.BindReal(4, row.used);
    stmt.BindReal(5, row.borrowed);
    stmt.BindReal(6, row.lent);
    stmt.BindReal(7, row.queued);
    return stmt.Run();
  }

  absl::Status AddLoan(const LoanRow& row) override {
    TIDEGATE_ASSIGN_STMT(stmt, cache_, kAddLoan);
    stmt.BindText(1, row.borrower);
    stmt.BindText(2, row.lender);
    stmt.BindText(3, row.resource);
    stmt.BindText(4, row.day);
    stmt.BindReal(5, row.amount);
    return stmt.Run();
  }

  absl::Status PutSnapshot(const SnapshotRecord& snapshot, uint32_t checksum) override {
    TIDEGATE_ASSIGN_STMT(stmt, cache_, kPutSnapshot);
    stmt.BindInt(1, snapshot.seq);
    stmt.BindInt(2, snapshot.at_ms);
    stmt.BindBlob(3, snapshot.payload);
    stmt.BindInt(4, checksum);
    return stmt.Run();
  }

  absl::Status PruneSnapshots(int kept) override {
    TIDEGATE_ASSIGN_STMT(prune, cache_, kPruneSnapshots);
    prune.BindInt(1, kept);
    return prune.Run();
  }

  absl::Status PutSnapshotPart(const SnapshotPart& part) override {
    TIDEGATE_ASSIGN_STMT(stmt, cache_, kPutSnapshotPart);
    stmt.BindInt(1, part.seq);
    stmt.BindInt(2, part.index);
    stmt.BindBlob(3, part.bytes);
    return stmt.Run();
  }

  absl::StatusOr<int64_t> CountSnapshotParts(int64_t seq, int64_t parts) override {
    TIDEGATE_ASSIGN_STMT(stmt, cache_, kCountSnapshotParts);
    stmt.BindInt(1, seq);
    stmt.BindInt(2, parts);
    absl::StatusOr<bool> row = stmt.Step();
    if (!row.ok()) return row.status();
    return stmt.Int(0);
  }

  absl::Status PutPartedSnapshot(const PartedSnapshot& snapshot) override {
    TIDEGATE_ASSIGN_STMT(stmt, cache_, kPutPartedSnapshot);
    stmt.BindInt(1, snapshot.seq);
    stmt.BindInt(2, snapshot.at_ms);
    stmt.BindInt(3, snapshot.checksum);
    stmt.BindInt(4, snapshot.parts);
    return stmt.Run();
  }

  absl::Status DeleteUnnamedSnapshotParts() override { return Run(kDeleteUnnamedParts); }

  absl::StatusOr<std::optional<SnapshotRecord>> ReadSnapshot(SnapshotQuery which,
                                                             std::optional<int64_t> bound) override {
    // The row and its parts from one read transaction, so a writer in
    // another process pruning the snapshot in between cannot tear it.
    const bool own_transaction = sqlite3_get_autocommit(db_) != 0;
    if (own_transaction) TIDEGATE_RETURN_IF_ERROR(Run(kBeginRead));
    absl::StatusOr<std::optional<SnapshotRecord>> read = ReadSnapshotRows(which, bound);
    if (own_transaction && sqlite3_get_autocommit(db_) == 0) {
      absl::Status ended = Run(kCommit);
      if (!ended.ok()) Run(kRollback).IgnoreError();
      if (read.ok() && !ended.ok()) return ended;
    }
    return read;
  }

  absl::StatusOr<std::optional<SnapshotRecord>> ReadSnapshotRows(SnapshotQuery which, std::optional<int64_t> bound) {
    const char* sql = which == SnapshotQuery::kLatest     ? kLatestSnapshot
                      : which == SnapshotQuery::kEarliest ? kEarliestSnapshot
                                                          : kSnapshotBefore;
    SnapshotRecord record;
    std::optional<uint32_t> checksum;
    int64_t parts = 0;
    {
      TIDEGATE_ASSIGN_STMT(stmt, cache_, sql);
      if (bound.has_value()) stmt.BindInt(1, *bound);
      absl::StatusOr<bool> row = stmt.Step();
      if (!row.ok()) return row.status();
      if (!*row) return std::nullopt;
      record = SnapshotRecord{stmt.Int(0), stmt.Int(1), stmt.Blob(2)};
      if (!stmt.IsNull(3)) checksum = static_cast<uint32_t>(stmt.Int(3));
      if (!stmt.IsNull(4)) parts = stmt.Int(4);
    }
    if (parts <= 0) return CheckedSnapshot(std::move(record), checksum);
    TIDEGATE_ASSIGN_STMT(stmt, cache_, kSnapshotParts);
    stmt.BindInt(1, record.seq);
    stmt.BindInt(2, parts);
    std::vector<std::pair<int64_t, std::string>> read;
    for (;;) {
      absl::StatusOr<bool> row = stmt.Step();
      if (!row.ok()) return row.status();
      if (!*row) break;
      read.emplace_back(stmt.Int(0), stmt.Blob(1));
    }
    return AssembledSnapshot(std::move(record), parts, checksum.value_or(0), read);
  }

  static JobRow ReadJob(const Statement& stmt) {
    return JobRow{stmt.Text(0), stmt.Text(1), stmt.Text(2), stmt.Text(3), stmt.Int(4),
                  stmt.Int(5),  stmt.Int(6),  stmt.Text(7), stmt.Blob(8)};
  }

  // Declared before cache_ so the statements are finalized before the close.
  Connection connection_;
  sqlite3* const db_;
  StatementCache cache_;
};

// PRAGMA journal_mode answers with the mode it ended up in; anything but
// "wal" (a :memory: path, a filesystem without shared memory) would silently
// change the durability and concurrency the service relies on.
absl::Status EnableWal(sqlite3* db, const std::string& path) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db, "PRAGMA journal_mode = WAL", -1, &stmt, nullptr);
  if (rc != SQLITE_OK) return SqliteStatus(db, rc, "PRAGMA journal_mode");
  rc = sqlite3_step(stmt);
  std::string mode;
  if (rc == SQLITE_ROW) mode = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
  sqlite3_finalize(stmt);
  if (rc != SQLITE_ROW) return SqliteStatus(db, rc, "PRAGMA journal_mode");
  if (mode != "wal") {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": cannot use WAL journal mode (got \"", mode, "\")"));
  }
  return absl::OkStatus();
}

// SQLite's memory statistics take a global mutex around every allocation
// (about a tenth of the instructions of a commit) and nothing here reads
// them. sqlite3_config only works before SQLite initializes, i.e. before the
// process's first connection; when another one came first it stays on.
void TurnOffMemoryStatistics() {
  static const int once = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  (void)once;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path,
                                                       const SqliteOptions& options) {
  if (options.read_only && !std::filesystem::exists(path)) {
    return absl::NotFoundError(absl::StrCat("ledger ", path, " does not exist"));
  }
  std::error_code size_error;
  const auto size = std::filesystem::file_size(path, size_error);
  // A new ledger is a file created now (or 0 bytes), not one that merely
  // has no tables: a young ledger whose WAL was lost has none either.
  const bool new_file = size_error || size == 0;
  if (!options.create && !std::filesystem::exists(path)) {
    return absl::NotFoundError(absl::StrCat("ledger ", path, " does not exist"));
  }
  const int flags = (options.read_only ? SQLITE_OPEN_READONLY
                                       : SQLITE_OPEN_READWRITE | (options.create ? SQLITE_OPEN_CREATE : 0)) |
                    SQLITE_OPEN_NOMUTEX;
  TurnOffMemoryStatistics();
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  // Close on every early return; ownership passes to the store at the end.
  Connection db(raw, &sqlite3_close_v2);
  if (rc != SQLITE_OK) return SqliteStatus(raw, rc, absl::StrCat("open ", path));
  sqlite3_extended_result_codes(db.get(), 1);
  sqlite3_busy_timeout(db.get(), kBusyTimeoutMs);
  TIDEGATE_RETURN_IF_ERROR(Exec(db.get(), kConnectionPragmas));

  if (options.read_only) {
    // The WAL mode is a property of the file, set by the writer.
    TIDEGATE_RETURN_IF_ERROR(CheckSchemaForReading(db.get(), path));
    return std::unique_ptr<Store>(std::make_unique<SqliteStore>(std::move(db), options.read_only));
  }
  TIDEGATE_RETURN_IF_ERROR(EnableWal(db.get(), path));
  TIDEGATE_RETURN_IF_ERROR(Exec(db.get(), options.synchronous_full ? "PRAGMA synchronous = FULL"
                                                                   : "PRAGMA synchronous = NORMAL"));
  absl::StatusOr<int64_t> version = ReadSchemaVersion(db.get(), path);
  if (!version.ok()) return version.status();
  if (*version == 0 && !options.create) {
    return absl::FailedPreconditionError(absl::StrCat(
        "ledger ", path, " holds no tables: it is empty or lost its WAL (", path,
        "-wal); a new ledger is only created when asked (tidegated --init)"));
  }
  const bool new_ledger = new_file && options.init;
  TIDEGATE_RETURN_IF_ERROR(MigrateSchema(db.get(), path));
  auto store = std::make_unique<SqliteStore>(std::move(db), options.read_only);
  // A journal that ends before the last acknowledged seq lost commits (a
  // deleted or damaged WAL): refuse it rather than serve the older state.
  if (!new_ledger) {
    absl::StatusOr<int64_t> last = store->LastSeq();
    if (!last.ok()) return last.status();
    absl::StatusOr<std::optional<int64_t>> acked = ReadAckedSeq(path);
    if (!acked.ok()) return acked.status();
    if (acked->has_value() && **acked > *last) {
      return absl::DataLossError(JournalBehindRecord(path, *last, **acked));
    }
  }
  absl::StatusOr<AckedSeqFile> record = AckedSeqFile::Open(path, options.synchronous_full, new_ledger);
  if (!record.ok()) return record.status();
  store->RecordAckedSeqIn(*std::move(record));
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace tidegate::ledger
