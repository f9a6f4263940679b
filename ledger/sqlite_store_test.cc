// The SQLite Store: the conformance suite, plus what only a file can show —
// reopening, read-only readers, schema migration and refusal.
// Faults come from a second, raw SQLite connection to the same file.
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ledger/acked_seq.h"
#include "ledger/bytes_written.h"
#include "ledger/sqlite_schema.h"
#include "ledger/sqlite_test_support.h"
#include "ledger/store_conformance.h"

namespace tidegate::ledger {
namespace {

using ::testing::_;
using ::testing::ElementsAre;
using ::testing::FieldsAre;
using ::testing::HasSubstr;
using ::testing::Optional;

class SqliteHarness final : public StoreHarness {
 public:
  SqliteHarness() : path_(dir_.File("ledger.db")), store_(OpenSqliteStore(path_, {}).value()) {}
  Store& store() override { return *store_; }
  absl::Status CorruptJournalPayload(int64_t seq) override {
    return RawDb(path_).Exec(
        absl::StrCat("UPDATE journal SET payload = payload || X'21' WHERE seq = ", seq));
  }
  absl::Status DropJournalEntry(int64_t seq) override {
    return RawDb(path_).Exec(absl::StrCat("DELETE FROM journal WHERE seq = ", seq));
  }
  absl::Status CorruptSnapshotPayload(int64_t seq) override {
    // A snapshot written in parts is damaged in its first part.
    return RawDb(path_).Exec(
        absl::StrCat("UPDATE snapshots SET payload = payload || X'21' WHERE seq = ", seq,
                     "; UPDATE snapshot_parts SET bytes = bytes || X'21' WHERE part = 0 AND seq = ", seq));
  }
  absl::Status FailWritesOfLoansBorrowedBy(const std::string& borrower) override {
    // The loans are the last rows Commit writes before the snapshot.
    return RawDb(path_).Exec(
        absl::StrCat("CREATE TRIGGER injected_fault BEFORE INSERT ON loans WHEN NEW.borrower = '",
                     borrower, "' BEGIN SELECT RAISE(ABORT, 'injected fault'); END"));
  }

 private:
  TempDir dir_;
  std::string path_;
  std::unique_ptr<Store> store_;
};

std::unique_ptr<StoreHarness> NewSqliteHarness() { return std::make_unique<SqliteHarness>(); }

INSTANTIATE_TEST_SUITE_P(Sqlite, StoreConformanceTest, testing::Values(&NewSqliteHarness));

TEST_F(SqliteStoreTest, ReopeningKeepsEverything) {
  {
    auto store = OpenSqliteStore(path_, {}).value();
    ASSERT_TRUE(store->Commit(FullBatch(1)).ok());
    ASSERT_TRUE(store->Commit(FullBatch(2)).ok());
  }
  auto store = OpenSqliteStore(path_, SqliteOptions{false, false}).value();
  EXPECT_EQ(store->LastSeq().value(), 2);
  EXPECT_THAT(store->LatestSnapshot().value().value(), FieldsAre(2, 2000, "state after 2"));
  EXPECT_THAT(store->EarliestSnapshot().value().value(), FieldsAre(1, 1000, "state after 1"));
  EXPECT_THAT(store->Job("j1").value().value(),
              FieldsAre("j1", "alpha", "c1", "admitted", 5, 6, 0, "", "spec"));
  EXPECT_THAT(store->Usage("alpha", 0).value(),
              ElementsAre(FieldsAre("alpha", "gpu", 0, 20, 2, 0, 4)));
  EXPECT_THAT(store->Loans("", "").value(),
              ElementsAre(FieldsAre("alpha", "beta", "gpu", "2024-01-01", 8)));
  EXPECT_TRUE(store->Commit(FullBatch(3)).ok());  // and the journal continues
}

TEST_F(SqliteStoreTest, UsesWriteAheadLogging) {
  auto store = OpenSqliteStore(path_, {}).value();
  EXPECT_EQ(RawDb(path_).Query("PRAGMA journal_mode"), "wal");
}

TEST_F(SqliteStoreTest, ReadOnlyStoreSeesCommitsAndRefusesWrites) {
  auto writer = OpenSqliteStore(path_, {}).value();
  auto reader = OpenSqliteStore(path_, ReadOnly()).value();
  ASSERT_TRUE(writer->Commit(FullBatch(1)).ok());
  EXPECT_EQ(reader->LastSeq().value(), 1);
  EXPECT_EQ(reader->Jobs({}).value().size(), 1u);
  EXPECT_EQ(reader->Commit(FullBatch(2)).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(writer->Commit(FullBatch(2)).ok());  // a reader does not block the writer
  EXPECT_EQ(reader->LastSeq().value(), 2);
}

TEST_F(SqliteStoreTest, ReadOnlyOpensAFileNoWriterHasOpen) {
  { ASSERT_TRUE(OpenSqliteStore(path_, {}).value()->Commit(FullBatch(1)).ok()); }
  auto reader = OpenSqliteStore(path_, ReadOnly());
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->LastSeq().value(), 1);
}

TEST_F(SqliteStoreTest, ReadOnlyOfAMissingFileIsNotFound) {
  EXPECT_EQ(OpenSqliteStore(path_, ReadOnly()).status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(std::filesystem::exists(path_));
}

TEST_F(SqliteStoreTest, PrunesOldSnapshotsButKeepsTheEarliest) {
  auto store = OpenSqliteStore(path_, {}).value();
  for (int64_t seq = 1; seq <= 10; ++seq) ASSERT_TRUE(store->Commit(FullBatch(seq)).ok());
  EXPECT_EQ(
      RawDb(path_).Query("SELECT group_concat(seq) FROM (SELECT seq FROM snapshots ORDER BY seq)"),
      "1,8,9,10");
}

// What version 1 of the schema was, written by hand as an old binary did.
constexpr char kVersion1[] = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value);
CREATE TABLE journal(seq INTEGER PRIMARY KEY, at_ms INTEGER NOT NULL, kind TEXT NOT NULL,
  payload BLOB NOT NULL, checksum INTEGER NOT NULL);
CREATE TABLE snapshots(seq INTEGER PRIMARY KEY, at_ms INTEGER NOT NULL, payload BLOB NOT NULL);
CREATE TABLE jobs(job TEXT PRIMARY KEY, team TEXT NOT NULL, cluster TEXT NOT NULL,
  state TEXT NOT NULL, created_at_ms INTEGER NOT NULL, admitted_at_ms INTEGER NOT NULL,
  ended_at_ms INTEGER NOT NULL, reason TEXT NOT NULL, spec BLOB NOT NULL);
CREATE TABLE usage_hourly(team TEXT NOT NULL, resource TEXT NOT NULL,
  hour_start_ms INTEGER NOT NULL, used REAL NOT NULL, borrowed REAL NOT NULL, lent REAL NOT NULL,
  queued REAL NOT NULL, PRIMARY KEY(team, resource, hour_start_ms));
CREATE TABLE loans(borrower TEXT NOT NULL, lender TEXT NOT NULL, resource TEXT NOT NULL,
  day TEXT NOT NULL, amount REAL NOT NULL, PRIMARY KEY(borrower, lender, resource, day));
INSERT INTO meta VALUES('schema_version', 1);
-- crc32("command 1") = 537441232
INSERT INTO journal VALUES(1, 1000, 'submit', CAST('command 1' AS BLOB), 537441232);
INSERT INTO jobs VALUES('j1', 'alpha', 'c1', 'queued', 5, 0, 0, 'waits', X'');
INSERT INTO loans VALUES('alpha', 'beta', 'gpu', '2024-01-01', 4.0);
)sql";

TEST_F(SqliteStoreTest, MigratesAVersion1File) {
  ASSERT_EQ(Checksum("command 1"), 537441232u);
  ASSERT_TRUE(RawDb(path_).Exec(kVersion1).ok());

  auto store = OpenSqliteStore(path_, {});
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ(RawDb(path_).Query("SELECT value FROM meta WHERE key = 'schema_version'"),
            absl::StrCat(kSchemaVersion));
  EXPECT_EQ(RawDb(path_).Query("SELECT group_concat(name) FROM (SELECT name FROM sqlite_master "
                               "WHERE type = 'index' AND name NOT LIKE 'sqlite_%' ORDER BY name)"),
            "jobs_by_created,loans_by_lender");
  // The old rows read back through the new schema, and writing continues.
  EXPECT_THAT((*store)->Jobs(JobFilter{"alpha", ""}).value(),
              ElementsAre(FieldsAre("j1", "alpha", "c1", "queued", 5, 0, 0, "waits", "")));
  EXPECT_EQ((*store)->Loans("beta", "").value().size(), 1u);
  EXPECT_TRUE((*store)->Commit(FullBatch(2)).ok());
  EXPECT_EQ((*store)->LastSeq().value(), 2);
}

// Version 4 as the binaries that wrote it left it: every job in
// jobs_by_state, ended ones included.
constexpr char kVersion4[] = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value);
CREATE TABLE journal(seq INTEGER PRIMARY KEY, at_ms INTEGER NOT NULL, kind TEXT NOT NULL,
  payload BLOB NOT NULL, checksum INTEGER NOT NULL);
CREATE TABLE snapshots(seq INTEGER PRIMARY KEY, at_ms INTEGER NOT NULL, payload BLOB NOT NULL,
  checksum INTEGER, parts INTEGER);
CREATE TABLE jobs(job TEXT PRIMARY KEY, team TEXT NOT NULL, cluster TEXT NOT NULL,
  state TEXT NOT NULL, created_at_ms INTEGER NOT NULL, admitted_at_ms INTEGER NOT NULL,
  ended_at_ms INTEGER NOT NULL, reason TEXT NOT NULL, spec BLOB NOT NULL);
CREATE TABLE usage_hourly(team TEXT NOT NULL, resource TEXT NOT NULL,
  hour_start_ms INTEGER NOT NULL, used REAL NOT NULL, borrowed REAL NOT NULL, lent REAL NOT NULL,
  queued REAL NOT NULL, PRIMARY KEY(team, resource, hour_start_ms));
CREATE TABLE loans(borrower TEXT NOT NULL, lender TEXT NOT NULL, resource TEXT NOT NULL,
  day TEXT NOT NULL, amount REAL NOT NULL, PRIMARY KEY(borrower, lender, resource, day));
CREATE TABLE snapshot_parts(seq INTEGER NOT NULL, part INTEGER NOT NULL, bytes BLOB NOT NULL,
  PRIMARY KEY(seq, part));
CREATE INDEX jobs_by_created ON jobs(created_at_ms, job);
CREATE INDEX jobs_by_team ON jobs(team, created_at_ms, job);
CREATE INDEX jobs_by_state ON jobs(state, created_at_ms, job);
CREATE INDEX loans_by_lender ON loans(lender, day);
INSERT INTO meta VALUES('schema_version', 4);
INSERT INTO journal VALUES(1, 1000, 'submit', CAST('command 1' AS BLOB), 537441232);
INSERT INTO jobs VALUES('e2', 'beta', 'c1', 'ended', 2, 3, 9, 'finished', X'02');
INSERT INTO jobs VALUES('q4', 'alpha', 'c1', 'queued', 4, 0, 0, 'waits', X'04');
INSERT INTO jobs VALUES('a1', 'alpha', 'c2', 'admitted', 1, 2, 0, 'fits', X'01');
INSERT INTO jobs VALUES('e3', 'alpha', 'c2', 'ended', 3, 3, 8, 'released', X'03');
INSERT INTO jobs VALUES('d5', 'beta', 'c1', 'draining', 5, 6, 0, 'preempted', X'05');
)sql";

// Version 5 as the binaries that wrote it left it: the live jobs in
// jobs_live_by_state, every job in jobs_by_team.
constexpr char kVersion5Indexes[] = R"sql(
CREATE INDEX jobs_by_created ON jobs(created_at_ms, job);
CREATE INDEX jobs_by_team ON jobs(team, created_at_ms, job);
CREATE INDEX jobs_live_by_state ON jobs(state, created_at_ms, job) WHERE state <> 'ended';
CREATE INDEX loans_by_lender ON loans(lender, day);
UPDATE meta SET value = 5 WHERE key = 'schema_version';
)sql";

// What an old ledger's migration must leave: the indexes of this version,
// every job read back in each listing, and writing going on.
void ExpectMigratedJobsReadBackAndWritingGoesOn(const std::string& path) {
  auto store = OpenSqliteStore(path, {});
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ(RawDb(path).Query("SELECT value FROM meta WHERE key = 'schema_version'"), absl::StrCat(kSchemaVersion));
  EXPECT_EQ(RawDb(path).Query("SELECT group_concat(name) FROM (SELECT name FROM sqlite_master "
                              "WHERE type = 'index' AND name NOT LIKE 'sqlite_%' ORDER BY name)"),
            "jobs_by_created,loans_by_lender");
  EXPECT_THAT((*store)->Jobs({}).value(),
              ElementsAre(FieldsAre("a1", "alpha", "c2", "admitted", 1, 2, 0, "fits", "\x01"),
                          FieldsAre("e2", "beta", "c1", "ended", 2, 3, 9, "finished", "\x02"),
                          FieldsAre("e3", "alpha", "c2", "ended", 3, 3, 8, "released", "\x03"),
                          FieldsAre("q4", "alpha", "c1", "queued", 4, 0, 0, "waits", "\x04"),
                          FieldsAre("d5", "beta", "c1", "draining", 5, 6, 0, "preempted", "\x05")));
  auto ids = [&](const std::string& team, const std::string& state) {
    std::vector<std::string> out;
    const std::vector<JobRow> rows = (*store)->Jobs(JobFilter{team, state}).value();
    for (const JobRow& row : rows) out.push_back(row.job);
    return out;
  };
  EXPECT_THAT(ids("", "ended"), ElementsAre("e2", "e3"));
  EXPECT_THAT(ids("", "draining"), ElementsAre("d5"));
  EXPECT_THAT(ids("alpha", "ended"), ElementsAre("e3"));
  EXPECT_THAT(ids("alpha", ""), ElementsAre("a1", "e3", "q4"));
  EXPECT_THAT((*store)->Job("q4").value(), Optional(FieldsAre("q4", _, _, "queued", _, _, _, _, _)));
  // Writing goes on: the admitted job ends, the queued one is admitted.
  Batch batch;
  batch.journal = {Entry(2)};
  batch.jobs = {JobRow{"a1", "alpha", "c2", "ended", 1, 2, 10, "released", "\x01"},
                JobRow{"q4", "alpha", "c1", "admitted", 4, 10, 0, "fits", "\x04"}};
  ASSERT_TRUE((*store)->Commit(batch).ok());
  EXPECT_THAT(ids("", "ended"), ElementsAre("a1", "e2", "e3"));
  EXPECT_THAT(ids("", "admitted"), ElementsAre("q4"));
  EXPECT_THAT(ids("alpha", "admitted"), ElementsAre("q4"));
}

TEST_F(SqliteStoreTest, MigratesAVersion4LedgerAndReadsBackEveryJob) {
  ASSERT_TRUE(RawDb(path_).Exec(kVersion4).ok());
  ExpectMigratedJobsReadBackAndWritingGoesOn(path_);
}

TEST_F(SqliteStoreTest, MigratesAVersion5LedgerAndReadsBackEveryJob) {
  ASSERT_TRUE(RawDb(path_).Exec(kVersion4).ok());
  ASSERT_TRUE(RawDb(path_).Exec("DROP INDEX jobs_by_created; DROP INDEX jobs_by_team; DROP INDEX jobs_by_state; "
                                "DROP INDEX loans_by_lender")
                  .ok());
  ASSERT_TRUE(RawDb(path_).Exec(kVersion5Indexes).ok());
  ASSERT_EQ(RawDb(path_).Query("SELECT count(*) FROM jobs INDEXED BY jobs_live_by_state WHERE state <> 'ended'"), "3");
  ExpectMigratedJobsReadBackAndWritingGoesOn(path_);
}

// Every listing of jobs reads an index in its order: no sort of the rows
// afterwards.
TEST_F(SqliteStoreTest, EveryJobQueryReadsAnIndexInItsOrder) {
  ASSERT_TRUE(OpenSqliteStore(path_, {}).ok());
  RawDb raw(path_);
  auto plan = [&](const char* sql) { return raw.Column(absl::StrCat("EXPLAIN QUERY PLAN ", sql), 3); };
  const JobListingSql& q = kJobListingSql;
  for (const char* listing : {q.all, q.by_team, q.by_state, q.by_team_state}) {
    EXPECT_THAT(plan(listing), ElementsAre("SCAN jobs USING INDEX jobs_by_created")) << listing;
  }
  EXPECT_THAT(plan(q.by_id), ElementsAre("SEARCH jobs USING INDEX sqlite_autoindex_jobs_1 (job=?)"));
}

// SQLite rewrites an index's entry whenever an UPDATE names one of its
// columns, even to the value it had; a trigger on UPDATE OF fires exactly
// then. A job's later rows (admitted, ended) keep its team and creation time,
// so they must not name them: only a reused id with new ones does.
TEST_F(SqliteStoreTest, AJobsLaterRowsRewriteNeitherItsTeamNorItsCreationTime) {
  auto store = OpenSqliteStore(path_, {});
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE(RawDb(path_)
                  .Exec("CREATE TABLE rewrites(job TEXT); CREATE TRIGGER count_rewrites AFTER UPDATE OF team, "
                        "created_at_ms ON jobs BEGIN INSERT INTO rewrites VALUES(NEW.job); END")
                  .ok());
  auto commit = [&](int64_t seq, JobRow row) {
    Batch batch;
    batch.journal = {Entry(seq)};
    batch.jobs = {std::move(row)};
    ASSERT_TRUE((*store)->Commit(batch).ok());
  };
  commit(1, JobRow{"j1", "alpha", "c1", "queued", 5, 0, 0, "waits", "spec"});
  commit(2, JobRow{"j1", "alpha", "c1", "admitted", 5, 6, 0, "fits", "spec"});
  commit(3, JobRow{"j1", "alpha", "c1", "ended", 5, 6, 7, "released", "spec"});
  EXPECT_EQ(RawDb(path_).Query("SELECT count(*) FROM rewrites"), "0");
  EXPECT_THAT((*store)->Job("j1").value().value(), FieldsAre("j1", "alpha", "c1", "ended", 5, 6, 7, "released", "spec"));
  // The id again, for a job of another team created later.
  commit(4, JobRow{"j1", "beta", "c2", "queued", 9, 0, 0, "waits", "spec2"});
  EXPECT_EQ(RawDb(path_).Query("SELECT count(*) FROM rewrites"), "1");
  EXPECT_THAT((*store)->Job("j1").value().value(), FieldsAre("j1", "beta", "c2", "queued", 9, 0, 0, "waits", "spec2"));
  EXPECT_THAT((*store)->Jobs(JobFilter{"beta", ""}).value(), ElementsAre(FieldsAre("j1", _, _, _, _, _, _, _, _)));
}

// A BEFORE INSERT trigger fires for every row an INSERT tries, an upsert's
// that turns into an update too. A job's ended row updates the row in place,
// without first building a row to insert; an ended row whose job has no row,
// or whose id was reused, still lands whole.
TEST_F(SqliteStoreTest, AnEndedRowUpdatesItsJobWithoutTryingAnInsert) {
  auto store = OpenSqliteStore(path_, {});
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE(RawDb(path_)
                  .Exec("CREATE TABLE inserts(job TEXT); CREATE TRIGGER count_inserts BEFORE INSERT ON jobs "
                        "BEGIN INSERT INTO inserts VALUES(NEW.job); END")
                  .ok());
  Batch batch;
  batch.journal = {Entry(1)};
  batch.jobs = {JobRow{"j1", "alpha", "c1", "admitted", 5, 5, 0, "fits", "spec"},
                JobRow{"j2", "alpha", "c1", "admitted", 6, 6, 0, "fits", "spec"}};
  ASSERT_TRUE((*store)->Commit(batch).ok());
  EXPECT_EQ(RawDb(path_).Query("SELECT group_concat(job) FROM inserts"), "j1,j2");
  batch.journal = {Entry(2)};
  batch.jobs = {JobRow{"j1", "alpha", "c1", "ended", 5, 5, 7, "released", "spec"},
                JobRow{"j3", "beta", "c2", "ended", 4, 4, 7, "released", "spec3"},
                JobRow{"j2", "beta", "c2", "ended", 8, 8, 9, "released", "spec2"}};
  ASSERT_TRUE((*store)->Commit(batch).ok());
  EXPECT_EQ(RawDb(path_).Query("SELECT group_concat(job) FROM inserts"), "j1,j2,j3,j2");
  EXPECT_THAT((*store)->Jobs({}).value(),
              ElementsAre(FieldsAre("j3", "beta", "c2", "ended", 4, 4, 7, "released", "spec3"),
                          FieldsAre("j1", "alpha", "c1", "ended", 5, 5, 7, "released", "spec"),
                          FieldsAre("j2", "beta", "c2", "ended", 8, 8, 9, "released", "spec2")));
}

// A batch's journal goes in by statements of several rows each: every
// count, one over a statement's rows included, reads back whole and in order,
// and a batch whose second statement fails leaves nothing of the first.
TEST_F(SqliteStoreTest, JournalBatchesOfEverySizeReadBackInOrder) {
  auto store = OpenSqliteStore(path_, {});
  ASSERT_TRUE(store.ok()) << store.status();
  int64_t seq = 0;
  for (int count : {1, 15, 16, 17, 33}) {
    Batch batch;
    for (int i = 0; i < count; ++i) batch.journal.push_back(Entry(++seq));
    ASSERT_TRUE((*store)->Commit(batch).ok()) << count;
  }
  std::vector<int64_t> read;
  ASSERT_TRUE((*store)->ReadJournal(0, [&](const JournalRecord& r) {
                        const JournalRecord expected = Entry(r.seq);
                        EXPECT_EQ(r.at_ms, expected.at_ms);
                        EXPECT_EQ(r.kind, expected.kind);
                        EXPECT_EQ(r.payload, expected.payload);
                        read.push_back(r.seq);
                        return absl::OkStatus();
                      }).ok());
  std::vector<int64_t> all(82);
  for (int64_t i = 0; i < 82; ++i) all[i] = i + 1;
  EXPECT_EQ(read, all);
  // A trigger refuses seq 100, so of records 83..102 the first statement
  // (83..98) goes in and the second fails: the commit leaves nothing.
  ASSERT_TRUE(RawDb(path_)
                  .Exec("CREATE TRIGGER refuse_100 BEFORE INSERT ON journal WHEN NEW.seq = 100 "
                        "BEGIN SELECT RAISE(ABORT, 'refused'); END")
                  .ok());
  Batch refused;
  for (int64_t s = 83; s <= 102; ++s) refused.journal.push_back(Entry(s));
  EXPECT_FALSE((*store)->Commit(refused).ok());
  EXPECT_EQ((*store)->LastSeq().value(), 82);
}

TEST_F(SqliteStoreTest, ReadOnlyRefusesAFileThatNeedsMigration) {
  ASSERT_TRUE(RawDb(path_).Exec(kVersion1).ok());
  absl::Status status = OpenSqliteStore(path_, ReadOnly()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr(absl::StrCat("version 1 is older than this binary's version ", kSchemaVersion)));
}

TEST_F(SqliteStoreTest, RefusesAFileFromANewerBinary) {
  { OpenSqliteStore(path_, {}).value()->Commit(FullBatch(1)).IgnoreError(); }
  ASSERT_TRUE(RawDb(path_).Exec("UPDATE meta SET value = 7 WHERE key = 'schema_version'").ok());
  for (bool read_only : {false, true}) {
    absl::Status status = OpenSqliteStore(path_, SqliteOptions{true, read_only}).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(status.message(),
                HasSubstr(absl::StrCat("schema version 7 is newer than this binary's version ", kSchemaVersion)));
  }
  EXPECT_EQ(RawDb(path_).Query("SELECT value FROM meta WHERE key = 'schema_version'"), "7");
}

TEST_F(SqliteStoreTest, RefusesADatabaseThatIsNotALedger) {
  ASSERT_TRUE(RawDb(path_).Exec("CREATE TABLE accounts(id INTEGER)").ok());
  absl::Status status = OpenSqliteStore(path_, {}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("not a tidegate ledger"));
}

TEST_F(SqliteStoreTest, RefusesAFileThatIsNotSqlite) {
  {
    std::FILE* f = std::fopen(path_.c_str(), "w");
    std::fputs("tidegate: not a database at all, really not\n", f);
    std::fclose(f);
  }
  EXPECT_FALSE(OpenSqliteStore(path_, {}).ok());
}

// Debian builds SQLite to zero every page it frees, which made the commit
// that pruned an old snapshot write that snapshot's size again (tens of ms
// on the writer at a million jobs). The store zeroes only within pages it
// writes anyway (secure_delete = FAST): pruning frees the pages.
TEST_F(SqliteStoreTest, PruningASnapshotDoesNotRewriteItsPages) {
  auto store = OpenSqliteStore(path_, {}).value();
  constexpr size_t kBig = 4 << 20;
  for (int64_t seq = 1; seq <= 5; ++seq) {
    Batch batch;
    batch.journal = {Entry(seq)};
    // The earliest and the three latest are kept: the fifth prunes the second.
    batch.snapshot = SnapshotRecord{seq, 1000 * seq, seq == 2 ? std::string(kBig, 'x') : absl::StrCat("state ", seq)};
    // The WAL checkpointed first, so what the commit writes is its own.
    if (seq == 5) {
      ASSERT_TRUE(RawDb(path_).Exec("PRAGMA wal_checkpoint(TRUNCATE)").ok());
    }
    const int64_t before = BytesWrittenByThisProcess();
    ASSERT_TRUE(store->Commit(batch).ok());
    if (seq == 5) {
      EXPECT_LT(BytesWrittenByThisProcess() - before, static_cast<int64_t>(kBig / 4));
    }
  }
  EXPECT_THAT(store->EarliestSnapshot().value().value(), FieldsAre(1, 1000, "state 1"));
  EXPECT_THAT(store->SnapshotBefore(3).value(), Optional(FieldsAre(1, 1000, "state 1")));  // the second is gone
}

}  // namespace
}  // namespace tidegate::ledger
