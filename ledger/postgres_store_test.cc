// The PostgreSQL Store on a real server (tests/postgres/with_postgres.sh
// starts one and names it in TIDEGATE_PG): the conformance suite, plus what
// only PostgreSQL has — migrations, the lease and the fencing of commits,
// reconnecting after the server dropped the connection.
// Each store gets a schema of its own (search_path in its conninfo), so the
// tests share one server and start empty. Faults come from a second, plain
// connection, as an operator with psql could cause them.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ledger/acked_seq.h"
#include "ledger/postgres_conn.h"
#include "ledger/postgres_lease.h"
#include "ledger/postgres_store.h"
#include "ledger/store_conformance.h"

namespace tidegate::ledger {
namespace {

using ::testing::HasSubstr;

std::string ServerConninfo() {
  const char* pg = std::getenv("TIDEGATE_PG");
  return pg == nullptr ? "" : pg;
}

// A fresh schema on the test server and a conninfo that uses it.
class Schema {
 public:
  Schema() {
    static std::atomic<int> next{0};
    name_ = absl::StrCat("t", getpid(), "_", next++);
    raw_ = PgConnection::Open(ServerConninfo(), "").value();
    raw_->ExecScript(absl::StrCat("DROP SCHEMA IF EXISTS ", name_, " CASCADE; CREATE SCHEMA ", name_)).IgnoreError();
    raw_->ExecScript(absl::StrCat("SET search_path = ", name_)).IgnoreError();
  }
  std::string conninfo() const { return absl::StrCat(ServerConninfo(), " options='-csearch_path=", name_, "'"); }
  PgConnection& raw() { return *raw_; }

 private:
  std::string name_;
  std::unique_ptr<PgConnection> raw_;
};

class PostgresHarness final : public StoreHarness {
 public:
  PostgresHarness() : store_(OpenPostgresStore(schema_.conninfo(), {}).value()) {}
  Store& store() override { return *store_; }
  absl::Status CorruptJournalPayload(int64_t seq) override {
    return schema_.raw().ExecScript(
        absl::StrCat("UPDATE journal SET payload = payload || '\\x21'::bytea WHERE seq = ", seq));
  }
  absl::Status DropJournalEntry(int64_t seq) override {
    return schema_.raw().ExecScript(absl::StrCat("DELETE FROM journal WHERE seq = ", seq));
  }
  absl::Status CorruptSnapshotPayload(int64_t seq) override {
    // A snapshot written in parts is damaged in its first part.
    return schema_.raw().ExecScript(absl::StrCat(
        "UPDATE snapshots SET payload = payload || '\\x21'::bytea WHERE seq = ", seq,
        "; UPDATE snapshot_parts SET bytes = bytes || '\\x21'::bytea WHERE part = 0 AND seq = ", seq));
  }
  absl::Status FailWritesOfLoansBorrowedBy(const std::string& borrower) override {
    // A trigger fails the insert inside the server, after the batch's
    // journal, jobs and usage rows were written in the same transaction.
    return schema_.raw().ExecScript(absl::StrCat(
        "CREATE FUNCTION fail_loan() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'injected failure'; END $$ "
        "LANGUAGE plpgsql; CREATE TRIGGER fail_loan BEFORE INSERT ON loans FOR EACH ROW WHEN (NEW.borrower = '",
        borrower, "') EXECUTE FUNCTION fail_loan()"));
  }

 private:
  Schema schema_;
  std::unique_ptr<Store> store_;
};

std::unique_ptr<StoreHarness> NewPostgresHarness() { return std::make_unique<PostgresHarness>(); }

INSTANTIATE_TEST_SUITE_P(Postgres, StoreConformanceTest, testing::Values(&NewPostgresHarness));

JournalRecord Entry(int64_t seq) {
  JournalRecord record{seq, 1000 * seq, "submit", absl::StrCat("command ", seq), 0};
  record.checksum = Checksum(record.payload);
  return record;
}

Batch Entries(int64_t first, int64_t last) {
  Batch batch;
  for (int64_t seq = first; seq <= last; ++seq) batch.journal.push_back(Entry(seq));
  return batch;
}

TEST(PostgresStoreTest, SelectsPostgresByItsName) {
  EXPECT_TRUE(IsPostgresLedger("postgresql://u@db.example/ledger"));
  EXPECT_TRUE(IsPostgresLedger("postgres://db/ledger"));
  EXPECT_TRUE(IsPostgresLedger("host=/tmp/x port=5432 dbname=ledger"));
  EXPECT_FALSE(IsPostgresLedger("tidegate.db"));
  EXPECT_FALSE(IsPostgresLedger("/var/lib/tidegate/ledger=old.db"));
  EXPECT_EQ(RedactConninfo("postgresql://u:secret@db/l"), "postgresql://u:***@db/l");
  EXPECT_EQ(RedactConninfo("host=db password=secret dbname=l"), "host=db password=*** dbname=l");
}

TEST(PostgresStoreTest, ReadersAndNonCreatingWritersRefuseADatabaseWithoutALedger) {
  Schema schema;
  PostgresOptions reader;
  reader.read_only = true;
  auto read = OpenPostgresStore(schema.conninfo(), reader);
  EXPECT_EQ(read.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(read.status().message(), HasSubstr("no ledger tables"));
  PostgresOptions writer;
  writer.create = false;
  auto write = OpenPostgresStore(schema.conninfo(), writer);
  EXPECT_EQ(write.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(write.status().message(), HasSubstr("--init"));
}

TEST(PostgresStoreTest, MigratesOnceAndRefusesANewerSchema) {
  Schema schema;
  ASSERT_TRUE(OpenPostgresStore(schema.conninfo(), {}).ok());
  auto again = OpenPostgresStore(schema.conninfo(), {});  // already at the version: nothing to do
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_TRUE((*again)->Commit(Entries(1, 1)).ok());
  ASSERT_TRUE(schema.raw().ExecScript("UPDATE tidegate_meta SET value = 99 WHERE key = 'schema_version'").ok());
  auto newer = OpenPostgresStore(schema.conninfo(), {});
  EXPECT_EQ(newer.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(newer.status().message(), HasSubstr("schema version 99 is newer"));
}

TEST(PostgresStoreTest, AReadOnlyStoreRefusesCommits) {
  Schema schema;
  ASSERT_TRUE(OpenPostgresStore(schema.conninfo(), {}).ok());
  PostgresOptions reader;
  reader.read_only = true;
  auto store = OpenPostgresStore(schema.conninfo(), reader).value();
  EXPECT_EQ(store->Commit(Entries(1, 1)).code(), absl::StatusCode::kFailedPrecondition);
}

// A database that failed over to a replica that missed the newest commits;
// the raw DELETE stands in for it. The broker's record outlives the store
// (as it outlives a restart of tidegated) and catches the loss.
TEST(PostgresStoreTest, AWriterRefusesAJournalThatEndsBeforeItsRecord) {
  Schema schema;
  const std::string record = absl::StrCat(::testing::TempDir(), "/pg-acked-", getpid());
  std::remove(record.c_str());
  PostgresOptions writer;
  writer.acked_record_path = record;
  {
    auto store = OpenPostgresStore(schema.conninfo(), writer).value();
    ASSERT_TRUE(store->Commit(Entries(1, 2)).ok());
    ASSERT_TRUE(store->Commit(Entries(3, 3)).ok());
  }  // flushes the record to the last commit
  EXPECT_EQ(ReadAckedSeqAt(record).value(), 3);
  // A writer without the record, and readers, do not check it.
  ASSERT_TRUE(schema.raw().ExecScript("DELETE FROM journal WHERE seq = 3").ok());
  PostgresOptions reader;
  reader.read_only = true;
  reader.acked_record_path = record;
  EXPECT_TRUE(OpenPostgresStore(schema.conninfo(), reader).ok());
  auto refused = OpenPostgresStore(schema.conninfo(), writer);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(refused.status().message(),
              HasSubstr("the journal ends at seq 2 but this broker saw seq 3 committed (" + record + ")"));
  EXPECT_THAT(refused.status().message(), HasSubstr("to accept the loss, remove " + record));
  EXPECT_EQ(ReadAckedSeqAt(record).value(), 3);  // the refusal keeps the evidence
  // Accepting the loss: without the record the ledger opens and goes on.
  ASSERT_EQ(std::remove(record.c_str()), 0);
  auto accepted = OpenPostgresStore(schema.conninfo(), writer);
  ASSERT_TRUE(accepted.ok()) << accepted.status();
  ASSERT_TRUE((*accepted)->Commit(Entries(3, 3)).ok());
  accepted->reset();
  EXPECT_EQ(ReadAckedSeqAt(record).value(), 3);
  std::remove(record.c_str());
}

TEST(PostgresLeaseTest, OneHolderAtATimeAndTheEpochGoesUp) {
  Schema schema;
  ASSERT_TRUE(OpenPostgresStore(schema.conninfo(), {}).ok());
  auto a = PgLease::Open(schema.conninfo()).value();
  auto b = PgLease::Open(schema.conninfo()).value();
  EXPECT_FALSE(a->Read().value().held());
  const std::optional<int64_t> first = a->Acquire("a", "127.0.0.1:1", 60000).value();
  ASSERT_EQ(first, 1);
  EXPECT_EQ(b->Acquire("b", "127.0.0.1:2", 60000).value(), std::nullopt);  // a's lease runs
  LeaseInfo info = b->Read().value();
  EXPECT_EQ(info.holder, "a");
  EXPECT_EQ(info.address, "127.0.0.1:1");
  EXPECT_EQ(info.epoch, 1);
  EXPECT_GT(info.expires_in_ms, 50000);
  EXPECT_GT(info.since_ms, 0);
  EXPECT_TRUE(a->Renew(1, 60000).value());
  ASSERT_TRUE(a->Release(1).ok());
  EXPECT_FALSE(a->Renew(1, 60000).value());  // released is lost
  EXPECT_EQ(b->Acquire("b", "127.0.0.1:2", 60000).value(), 2);
  EXPECT_FALSE(a->Renew(1, 60000).value());
}

TEST(PostgresLeaseTest, AnExpiredLeaseCannotBeRenewedEvenIfNobodyTookIt) {
  Schema schema;
  ASSERT_TRUE(OpenPostgresStore(schema.conninfo(), {}).ok());
  auto a = PgLease::Open(schema.conninfo()).value();
  ASSERT_EQ(a->Acquire("a", "x", 60000).value(), 1);
  ASSERT_TRUE(schema.raw().ExecScript("UPDATE leader_lease SET expires_at = clock_timestamp()").ok());
  EXPECT_FALSE(a->Renew(1, 60000).value());
}

TEST(PostgresFencingTest, ADeposedLeaderCommitsNothingAndTheNewOneContinues) {
  Schema schema;
  ASSERT_TRUE(OpenPostgresStore(schema.conninfo(), {}).ok());
  auto lease = PgLease::Open(schema.conninfo()).value();
  ASSERT_EQ(lease->Acquire("old", "x", 60000).value(), 1);
  PostgresOptions old_options;
  old_options.fence_epoch = 1;
  auto old_leader = OpenPostgresStore(schema.conninfo(), old_options).value();
  ASSERT_TRUE(old_leader->Commit(Entries(1, 2)).ok());

  // The lease expires (a paused leader) and another broker takes it.
  ASSERT_TRUE(schema.raw().ExecScript("UPDATE leader_lease SET expires_at = clock_timestamp()").ok());
  ASSERT_EQ(lease->Acquire("new", "y", 60000).value(), 2);
  Batch late = Entries(3, 3);
  late.jobs.push_back(JobRow{"j", "t", "c", "admitted", 1, 1, 0, "", ""});
  absl::Status refused = old_leader->Commit(late);
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.message(), HasSubstr("not the leader"));
  EXPECT_EQ(old_leader->LastSeq().value(), 2);
  EXPECT_EQ(old_leader->Job("j").value(), std::nullopt);

  PostgresOptions new_options;
  new_options.fence_epoch = 2;
  auto new_leader = OpenPostgresStore(schema.conninfo(), new_options).value();
  ASSERT_TRUE(new_leader->Commit(Entries(3, 3)).ok());
  EXPECT_EQ(old_leader->Commit(Entries(4, 4)).code(), absl::StatusCode::kFailedPrecondition);
  using Pair = std::pair<int64_t, int64_t>;
  EXPECT_THAT(ReadJournalEpochs(schema.conninfo()).value(), testing::ElementsAre(Pair{1, 1}, Pair{2, 1}, Pair{3, 2}));
}

TEST(PostgresFencingTest, AnExpiredLeaseFencesEvenWhenNobodyTookItOver) {
  Schema schema;
  ASSERT_TRUE(OpenPostgresStore(schema.conninfo(), {}).ok());
  auto lease = PgLease::Open(schema.conninfo()).value();
  ASSERT_EQ(lease->Acquire("a", "x", 60000).value(), 1);
  PostgresOptions options;
  options.fence_epoch = 1;
  auto leader = OpenPostgresStore(schema.conninfo(), options).value();
  ASSERT_TRUE(schema.raw().ExecScript("UPDATE leader_lease SET expires_at = clock_timestamp()").ok());
  EXPECT_EQ(leader->Commit(Entries(1, 1)).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(leader->LastSeq().value(), 0);
}

TEST(PostgresStoreTest, ReconnectsAfterTheServerDroppedTheConnection) {
  Schema schema;
  auto store = OpenPostgresStore(schema.conninfo(), {}).value();
  ASSERT_TRUE(store->Commit(Entries(1, 1)).ok());
  ASSERT_TRUE(schema.raw()
                  .ExecScript("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                              "WHERE pid <> pg_backend_pid() AND datname = current_database()")
                  .ok());
  // The first statement finds the connection gone (UNAVAILABLE: retry); the
  // next one reconnects.
  absl::StatusOr<int64_t> first = store->LastSeq();
  if (!first.ok()) {
    EXPECT_EQ(first.status().code(), absl::StatusCode::kUnavailable) << first.status();
  }
  EXPECT_EQ(store->LastSeq().value(), 1);
  EXPECT_TRUE(store->Commit(Entries(2, 2)).ok());
}

}  // namespace
}  // namespace tidegate::ledger
