// The PostgreSQL Store (postgres_store.h): one transaction per Commit on one
// libpq connection; the statements mirror the SQLite store's.
#include "ledger/postgres_store.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "ledger/acked_seq.h"
#include "ledger/batch_rules.h"
#include "ledger/journal_damage.h"
#include "ledger/postgres_conn.h"
#include "ledger/postgres_schema.h"
#include "ledger/sql_store.h"

namespace tidegate::ledger {
namespace {

// ReadJournal fetches this many entries per round trip, so a whole-journal
// read (verify, recovery) needs neither a cursor nor all of it in memory.
constexpr int kJournalPage = 2000;

constexpr char kLastSeq[] = "SELECT coalesce(max(seq), 0) FROM journal";
constexpr char kInsertJournal[] =
    "INSERT INTO journal(seq, at_ms, kind, payload, checksum, epoch) VALUES($1, $2, $3, $4, $5, $6)";
constexpr char kUpsertJob[] =
    "INSERT INTO jobs(job, team, cluster, state, created_at_ms, admitted_at_ms, ended_at_ms, reason, spec) "
    "VALUES($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT(job) DO UPDATE SET "
    "team = excluded.team, cluster = excluded.cluster, state = excluded.state, "
    "created_at_ms = excluded.created_at_ms, admitted_at_ms = excluded.admitted_at_ms, "
    "ended_at_ms = excluded.ended_at_ms, reason = excluded.reason, spec = excluded.spec";
constexpr char kAddUsage[] =
    "INSERT INTO usage_hourly AS u(team, resource, hour_start_ms, used, borrowed, lent, queued) "
    "VALUES($1, $2, $3, $4, $5, $6, $7) ON CONFLICT(team, resource, hour_start_ms) DO UPDATE SET "
    "used = u.used + excluded.used, borrowed = u.borrowed + excluded.borrowed, "
    "lent = u.lent + excluded.lent, queued = u.queued + excluded.queued";
constexpr char kAddLoan[] =
    "INSERT INTO loans AS l(borrower, lender, resource, day, amount) VALUES($1, $2, $3, $4, $5) "
    "ON CONFLICT(borrower, lender, resource, day) DO UPDATE SET amount = l.amount + excluded.amount";
constexpr char kPutSnapshot[] =
    "INSERT INTO snapshots(seq, at_ms, payload, checksum) VALUES($1, $2, $3, $4) ON CONFLICT(seq) DO UPDATE SET "
    "at_ms = excluded.at_ms, payload = excluded.payload, checksum = excluded.checksum, parts = NULL";
constexpr char kPutSnapshotPart[] =
    "INSERT INTO snapshot_parts(seq, part, bytes) VALUES($1, $2, $3) ON CONFLICT(seq, part) DO UPDATE SET "
    "bytes = excluded.bytes";
constexpr char kCountSnapshotParts[] = "SELECT count(*) FROM snapshot_parts WHERE seq = $1 AND part < $2";
constexpr char kPutPartedSnapshot[] =
    "INSERT INTO snapshots(seq, at_ms, payload, checksum, parts) VALUES($1, $2, ''::bytea, $3, $4) "
    "ON CONFLICT(seq) DO UPDATE SET at_ms = excluded.at_ms, payload = excluded.payload, "
    "checksum = excluded.checksum, parts = excluded.parts";
#define TIDEGATE_UNNAMED_PARTS                                                                     \
  "FROM snapshot_parts p WHERE NOT EXISTS (SELECT 1 FROM snapshots s WHERE s.seq = p.seq AND " \
  "p.part < coalesce(s.parts, 0))"
constexpr char kDeleteUnnamedParts[] = "DELETE " TIDEGATE_UNNAMED_PARTS;
constexpr char kCountUnnamedParts[] = "SELECT count(*) " TIDEGATE_UNNAMED_PARTS;
#undef TIDEGATE_UNNAMED_PARTS
constexpr char kPruneSnapshots[] =
    "DELETE FROM snapshots WHERE seq > (SELECT min(seq) FROM snapshots) "
    "AND seq NOT IN (SELECT seq FROM snapshots ORDER BY seq DESC LIMIT $1)";
// The fence: the last statement before COMMIT. The share lock on the lease
// row makes a takeover (an UPDATE of that row) wait until this commit ends,
// and a takeover that came first leaves no row to lock.
constexpr char kCheckFence[] =
    "SELECT 1 FROM leader_lease WHERE id = 1 AND epoch = $1 AND expires_at > clock_timestamp() FOR SHARE";
// A parted snapshot's row and its parts in one statement (one view of the
// database): how many of parts 0..parts-1 are stored, and their bytes in order.
#define TIDEGATE_SNAPSHOT_COLUMNS                                                                          \
  "SELECT seq, at_ms, payload, checksum, parts, "                                                          \
  "(SELECT count(*) FROM snapshot_parts p WHERE p.seq = s.seq AND p.part < coalesce(s.parts, 0)), "       \
  "(SELECT string_agg(p.bytes, ''::bytea ORDER BY p.part) FROM snapshot_parts p WHERE p.seq = s.seq AND " \
  "p.part < coalesce(s.parts, 0)) FROM snapshots s "
constexpr char kLatestSnapshot[] = TIDEGATE_SNAPSHOT_COLUMNS "ORDER BY seq DESC LIMIT 1";
constexpr char kEarliestSnapshot[] = TIDEGATE_SNAPSHOT_COLUMNS "ORDER BY seq ASC LIMIT 1";
constexpr char kSnapshotBefore[] = TIDEGATE_SNAPSHOT_COLUMNS "WHERE seq < $1 ORDER BY seq DESC LIMIT 1";
#undef TIDEGATE_SNAPSHOT_COLUMNS
constexpr char kReadJournal[] =
    "SELECT seq, at_ms, kind, payload, checksum FROM journal WHERE seq > $1 ORDER BY seq LIMIT $2";
#define TIDEGATE_JOB_COLUMNS \
  "SELECT job, team, cluster, state, created_at_ms, admitted_at_ms, ended_at_ms, reason, spec FROM jobs "
constexpr char kJobsAll[] = TIDEGATE_JOB_COLUMNS "WHERE ($1::text = '' OR team = $1) AND ($2::text = '' OR state = $2) "
                                                 "ORDER BY created_at_ms, job";
constexpr char kJobById[] = TIDEGATE_JOB_COLUMNS "WHERE job = $1";
#undef TIDEGATE_JOB_COLUMNS
constexpr char kUsage[] =
    "SELECT team, resource, hour_start_ms, used, borrowed, lent, queued FROM usage_hourly "
    "WHERE ($1::text = '' OR team = $1) AND hour_start_ms >= $2 ORDER BY team, resource, hour_start_ms";
constexpr char kLoans[] =
    "SELECT borrower, lender, resource, day, amount FROM loans WHERE ($1::text = '' OR borrower = $1 OR lender = $1) "
    "AND day >= $2 ORDER BY day, borrower, lender, resource";

absl::Status Run(PgConnection& db, const char* sql, const PgParams& params = PgParams()) {
  return db.Exec(sql, params).status();
}

class PostgresStore final : public SqlStore {
 public:
  PostgresStore(std::unique_ptr<PgConnection> db, const PostgresOptions& options)
      : SqlStore(options.read_only), db_(std::move(db)), options_(options) {}

  absl::Status CommitInTransaction(const Batch& batch) override {
    return db_->InTransaction([&] {
      TIDEGATE_RETURN_IF_ERROR(WriteBatch(batch));
      return CheckFence();
    });
  }

  absl::StatusOr<int64_t> LastSeq() override {
    absl::StatusOr<PgRows> rows = db_->Exec(kLastSeq);
    if (!rows.ok()) return rows.status();
    return rows->Int(0, 0);
  }

  absl::Status ReadJournal(int64_t after_seq,
                           const std::function<absl::Status(const JournalRecord&)>& fn) override {
    int64_t expected = std::max<int64_t>(after_seq, 0) + 1;
    for (;;) {
      absl::StatusOr<PgRows> rows = db_->Exec(kReadJournal, PgParams().Int(expected - 1).Int(kJournalPage));
      if (!rows.ok()) return rows.status();
      for (int i = 0; i < rows->size(); ++i, ++expected) {
        JournalRecord record{rows->Int(i, 0), rows->Int(i, 1), rows->Text(i, 2), rows->Bytes(i, 3),
                             static_cast<uint32_t>(rows->Int(i, 4))};
        TIDEGATE_RETURN_IF_ERROR(CheckStoredRecord(record, expected));
        TIDEGATE_RETURN_IF_ERROR(fn(record));
      }
      if (rows->size() < kJournalPage) return absl::OkStatus();
    }
  }

  absl::StatusOr<int64_t> UnfinishedSnapshotParts() override {
    absl::StatusOr<PgRows> rows = db_->Exec(kCountUnnamedParts);
    if (!rows.ok()) return rows.status();
    return rows->Int(0, 0);
  }

  absl::StatusOr<std::vector<JobRow>> Jobs(const JobFilter& filter) override {
    absl::StatusOr<PgRows> rows = db_->Exec(kJobsAll, PgParams().Text(filter.team).Text(filter.state));
    if (!rows.ok()) return rows.status();
    std::vector<JobRow> out;
    for (int i = 0; i < rows->size(); ++i) out.push_back(ReadJob(*rows, i));
    return out;
  }

  absl::StatusOr<std::optional<JobRow>> Job(const std::string& id) override {
    absl::StatusOr<PgRows> rows = db_->Exec(kJobById, PgParams().Text(id));
    if (!rows.ok()) return rows.status();
    if (rows->size() == 0) return std::nullopt;
    return ReadJob(*rows, 0);
  }

  absl::StatusOr<std::vector<UsageRow>> Usage(const std::string& team, int64_t since_ms) override {
    absl::StatusOr<PgRows> rows = db_->Exec(kUsage, PgParams().Text(team).Int(since_ms));
    if (!rows.ok()) return rows.status();
    std::vector<UsageRow> out;
    for (int i = 0; i < rows->size(); ++i) {
      out.push_back(UsageRow{rows->Text(i, 0), rows->Text(i, 1), rows->Int(i, 2), rows->Real(i, 3),
                             rows->Real(i, 4), rows->Real(i, 5), rows->Real(i, 6)});
    }
    return out;
  }

  absl::StatusOr<std::vector<LoanRow>> Loans(const std::string& team, const std::string& since_day) override {
    absl::StatusOr<PgRows> rows = db_->Exec(kLoans, PgParams().Text(team).Text(since_day));
    if (!rows.ok()) return rows.status();
    std::vector<LoanRow> out;
    for (int i = 0; i < rows->size(); ++i) {
      out.push_back(LoanRow{rows->Text(i, 0), rows->Text(i, 1), rows->Text(i, 2), rows->Text(i, 3), rows->Real(i, 4)});
    }
    return out;
  }

 private:
  absl::Status InsertJournal(const JournalRecord& r) override {
    const int64_t epoch = options_.fence_epoch.value_or(0);
    return Run(*db_, kInsertJournal,
               PgParams().Int(r.seq).Int(r.at_ms).Text(r.kind).Bytes(r.payload).Int(r.checksum).Int(epoch));
  }

  absl::Status UpsertJob(const JobRow& j) override {
    return Run(*db_, kUpsertJob,
               PgParams()
                   .Text(j.job)
                   .Text(j.team)
                   .Text(j.cluster)
                   .Text(j.state)
                   .Int(j.created_at_ms)
                   .Int(j.admitted_at_ms)
                   .Int(j.ended_at_ms)
                   .Text(j.reason)
                   .Bytes(j.spec));
  }

  absl::Status AddUsage(const UsageRow& u) override {
    return Run(*db_, kAddUsage,
               PgParams()
                   .Text(u.team)
                   .Text(u.resource)
                   .Int(u.hour_start_ms)
                   .Real(u.used)
                   .Real(u.borrowed)
                   .Real(u.lent)
                   .Real(u.queued));
  }

  absl::Status AddLoan(const LoanRow& l) override {
    return Run(*db_, kAddLoan, PgParams().Text(l.borrower).Text(l.lender).Text(l.resource).Text(l.day).Real(l.amount));
  }

  absl::Status PutSnapshot(const SnapshotRecord& s, uint32_t checksum) override {
    return Run(*db_, kPutSnapshot, PgParams().Int(s.seq).Int(s.at_ms).Bytes(s.payload).Int(checksum));
  }

  absl::Status PruneSnapshots(int kept) override { return Run(*db_, kPruneSnapshots, PgParams().Int(kept)); }

  absl::Status PutSnapshotPart(const SnapshotPart& part) override {
    return Run(*db_, kPutSnapshotPart, PgParams().Int(part.seq).Int(part.index).Bytes(part.bytes));
  }

  absl::StatusOr<int64_t> CountSnapshotParts(int64_t seq, int64_t parts) override {
    absl::StatusOr<PgRows> rows = db_->Exec(kCountSnapshotParts, PgParams().Int(seq).Int(parts));
    if (!rows.ok()) return rows.status();
    return rows->Int(0, 0);
  }

  absl::Status PutPartedSnapshot(const PartedSnapshot& s) override {
    return Run(*db_, kPutPartedSnapshot, PgParams().Int(s.seq).Int(s.at_ms).Int(s.checksum).Int(s.parts));
  }

  absl::Status DeleteUnnamedSnapshotParts() override { return Run(*db_, kDeleteUnnamedParts); }

  // A leader's commit lands only while its lease is still the current one.
  absl::Status CheckFence() {
    if (!options_.fence_epoch.has_value()) return absl::OkStatus();
    absl::StatusOr<PgRows> fence = db_->Exec(kCheckFence, PgParams().Int(*options_.fence_epoch));
    if (!fence.ok()) return fence.status();
    if (fence->size() == 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "not the leader: the lease of epoch ", *options_.fence_epoch,
          " expired or another broker took it over; nothing was committed"));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::optional<SnapshotRecord>> ReadSnapshot(SnapshotQuery which,
                                                             std::optional<int64_t> bound) override {
    const char* sql = which == SnapshotQuery::kLatest     ? kLatestSnapshot
                      : which == SnapshotQuery::kEarliest ? kEarliestSnapshot
                                                          : kSnapshotBefore;
    PgParams params;
    if (bound.has_value()) params.Int(*bound);
    absl::StatusOr<PgRows> rows = db_->Exec(sql, params);
    if (!rows.ok()) return rows.status();
    if (rows->size() == 0) return std::nullopt;
    SnapshotRecord record{rows->Int(0, 0), rows->Int(0, 1), rows->Bytes(0, 2)};
    const std::optional<uint32_t> checksum =
        rows->IsNull(0, 3) ? std::nullopt : std::optional<uint32_t>(static_cast<uint32_t>(rows->Int(0, 3)));
    const int64_t parts = rows->IsNull(0, 4) ? 0 : rows->Int(0, 4);
    if (parts <= 0) return CheckedSnapshot(std::move(record), checksum);
    if (rows->Int(0, 5) != parts) return MissingSnapshotParts(record.seq, parts, rows->Int(0, 5));
    record.payload = rows->Bytes(0, 6);
    return CheckedSnapshot(std::move(record), checksum.value_or(0));
  }

  static JobRow ReadJob(const PgRows& rows, int i) {
    return JobRow{rows.Text(i, 0), rows.Text(i, 1), rows.Text(i, 2), rows.Text(i, 3), rows.Int(i, 4),
                  rows.Int(i, 5),  rows.Int(i, 6),  rows.Text(i, 7), rows.Bytes(i, 8)};
  }

  std::unique_ptr<PgConnection> db_;
  const PostgresOptions options_;
};

std::string SessionSql(const PostgresOptions& options) {
  if (options.read_only) return "SET default_transaction_read_only = on";
  // An acknowledged commit is durable on the server (and its synchronous
  // standbys), whatever the server's default.
  std::string sql = "SET synchronous_commit = on";
  if (options.fence_epoch.has_value()) {
    absl::StrAppend(&sql, "; SET idle_in_transaction_session_timeout = ", options.idle_transaction_timeout_ms);
  }
  return sql;
}

// A journal that ends before the seq this broker recorded lost
// acknowledged commits: refuse it rather than serve the older state.
absl::Status CheckAgainstRecord(Store& store, const std::string& name, const std::string& record_path) {
  absl::StatusOr<std::optional<int64_t>> recorded = ReadAckedSeqAt(record_path);
  if (!recorded.ok()) return recorded.status();
  if (!recorded->has_value()) return absl::OkStatus();
  absl::StatusOr<int64_t> last = store.LastSeq();
  if (!last.ok()) return last.status();
  if (*last >= **recorded) return absl::OkStatus();
  return absl::DataLossError(absl::StrCat(
      "PostgreSQL ledger ", name, ": the journal ends at seq ", *last, " but this broker saw seq ", **recorded,
      " committed (", record_path, "): acknowledged commits are missing (did the database fail over to a replica "
      "that missed them, or was it restored from a backup?). Restore them; to accept the loss, remove ", record_path,
      " on every broker that has one (tidegated --acked-file)"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> OpenPostgresStore(const std::string& conninfo, const PostgresOptions& options) {
  absl::StatusOr<std::unique_ptr<PgConnection>> db = PgConnection::Open(conninfo, SessionSql(options));
  if (!db.ok()) return db.status();
  if (options.read_only) {
    if (options.single_snapshot) {
      TIDEGATE_RETURN_IF_ERROR((*db)->ExecScript("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"));
    }
    TIDEGATE_RETURN_IF_ERROR(CheckPostgresSchemaForReading(**db));
  } else {
    absl::StatusOr<int64_t> version = ReadPostgresSchemaVersion(**db);
    if (!version.ok()) return version.status();
    if (*version == 0 && !options.create) {
      return absl::FailedPreconditionError(absl::StrCat(
          "PostgreSQL ledger ", (*db)->name(),
          " has no ledger tables; a new ledger is only created when asked (tidegated --init)"));
    }
    TIDEGATE_RETURN_IF_ERROR(MigratePostgresSchema(**db));
  }
  const std::string name = (*db)->name();
  auto store = std::make_unique<PostgresStore>(*std::move(db), options);
  if (!options.read_only && !options.acked_record_path.empty()) {
    TIDEGATE_RETURN_IF_ERROR(CheckAgainstRecord(*store, name, options.acked_record_path));
    absl::StatusOr<AckedSeqFile> record = AckedSeqFile::OpenAt(options.acked_record_path, /*sync=*/true, /*reset=*/false);
    if (!record.ok()) return record.status();
    store->RecordAckedSeqIn(*std::move(record));
  }
  return std::unique_ptr<Store>(std::move(store));
}

absl::StatusOr<std::vector<std::pair<int64_t, int64_t>>> ReadJournalEpochs(const std::string& conninfo) {
  absl::StatusOr<std::unique_ptr<PgConnection>> db = PgConnection::Open(conninfo, "");
  if (!db.ok()) return db.status();
  absl::StatusOr<PgRows> rows = (*db)->Exec("SELECT seq, epoch FROM journal ORDER BY seq");
  if (!rows.ok()) return rows.status();
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int i = 0; i < rows->size(); ++i) out.emplace_back(rows->Int(i, 0), rows->Int(i, 1));
  return out;
}

absl::StatusOr<std::unique_ptr<Store>> OpenLedgerStore(const std::string& db, const SqliteOptions& sqlite) {
  if (!IsPostgresLedger(db)) return OpenSqliteStore(db, sqlite);
  PostgresOptions options;
  options.read_only = sqlite.read_only;
  options.create = sqlite.create;
  return OpenPostgresStore(db, options);
}

}  // namespace tidegate::ledger
