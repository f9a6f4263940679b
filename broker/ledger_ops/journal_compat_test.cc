// The ledger stores the core's commands and snapshots as binary protobuf
// (tidegate.internal.v1, api/tidegate/internal/v1/journal.proto). Those
// messages were once in the public package tidegate.v1, with the same field
// numbers and types; tests/data/ledger-v1-journal/ledger.sql is a ledger written by a
// broker of that time (its make.sh says how). Today's code must read every
// entry and snapshot of it and replay it to the state it stored.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "broker/ledger_ops/verify_ledger.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sqlite3.h"
#include "ledger/store.h"
#include "tidegate/internal/v1/journal.pb.h"

namespace tidegate::ledger_ops {
namespace {

using internal::v1::Command;
using internal::v1::CoreSnapshot;
using ::testing::ElementsAre;
using ::testing::StartsWith;

class JournalCompatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* source = std::getenv("TIDEGATE_SOURCE_DIR");
    ASSERT_NE(source, nullptr) << "run through ctest (TIDEGATE_SOURCE_DIR)";
    // The ledger is kept as its SQL text (`sqlite3 .dump`: every blob byte as
    // hex), so no database file is committed; it is rebuilt here in a
    // directory of the test's own, where opening it writes beside it.
    path_ = ::testing::TempDir() + "/journal-compat-ledger.db";
    for (const char* suffix : {"", "-wal", "-shm", ".acked"}) std::filesystem::remove(path_ + suffix);
    std::ifstream dump(std::string(source) + "/tests/data/ledger-v1-journal/ledger.sql");
    ASSERT_TRUE(dump) << "tests/data/ledger-v1-journal/ledger.sql";
    const std::string sql((std::istreambuf_iterator<char>(dump)), std::istreambuf_iterator<char>());
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    char* error = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
    const std::string message = error ? error : "";
    sqlite3_free(error);
    sqlite3_close(db);
    ASSERT_EQ(rc, SQLITE_OK) << message;
    ledger::SqliteOptions options;
    options.create = false;
    auto store = ledger::OpenSqliteStore(path_, options);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }

  std::vector<ledger::JournalRecord> Journal() {
    std::vector<ledger::JournalRecord> records;
    absl::Status read = store_->ReadJournal(0, [&](const ledger::JournalRecord& rec) {
      records.push_back(rec);
      return absl::OkStatus();
    });
    EXPECT_TRUE(read.ok()) << read;
    return records;
  }

  std::string path_;
  std::unique_ptr<ledger::Store> store_;
};

TEST_F(JournalCompatTest, EveryEntryParsesAsTheCommandItsKindColumnNames) {
  const std::map<std::string, Command::KindCase> kCaseOfKind = {
      {"submit", Command::kSubmit}, {"tick", Command::kTick}, {"ack_resize", Command::kAckResize},
      {"finish", Command::kFinish}, {"apply_config", Command::kApplyConfig}};
  std::vector<Command> submits;
  Command ack, finish, apply;
  const std::vector<ledger::JournalRecord> journal = Journal();
  ASSERT_EQ(journal.size(), 13u);
  for (const auto& rec : journal) {
    Command command;
    ASSERT_TRUE(command.ParseFromString(rec.payload)) << "entry " << rec.seq;
    ASSERT_TRUE(kCaseOfKind.count(rec.kind)) << rec.kind;
    EXPECT_EQ(command.kind_case(), kCaseOfKind.at(rec.kind)) << "entry " << rec.seq << " (" << rec.kind << ")";
    if (command.has_submit()) submits.push_back(command);
    if (command.has_ack_resize()) ack = command;
    if (command.has_finish()) finish = command;
    if (command.has_apply_config()) apply = command;
  }
  ASSERT_EQ(submits.size(), 4u);
  const auto& big = submits[0].submit();
  EXPECT_EQ(big.job(), "ml:big");
  EXPECT_EQ(big.team(), "ml");
  EXPECT_EQ(big.replicas(), 6);
  EXPECT_EQ(big.per_replica().at("gpu"), 1);
  EXPECT_EQ(submits[1].submit().elastic().max(), 2);
  EXPECT_EQ(submits[0].origin().principal(), "anonymous");
  EXPECT_THAT(submits[0].origin().peer(), StartsWith("ipv4:127.0.0.1:"));
  EXPECT_EQ(ack.ack_resize().job(), "vision:e");
  EXPECT_EQ(ack.ack_resize().epoch(), 1);
  EXPECT_EQ(ack.ack_resize().replicas(), 2);
  EXPECT_EQ(finish.finish(), "ml:q");
  ASSERT_EQ(apply.apply_config().teams_size(), 2);
  EXPECT_EQ(apply.apply_config().teams(0).quota().at("gpu").guaranteed(), 3);
}

TEST_F(JournalCompatTest, TheSnapshotsParseWithTheirJobsDrainsAndEndedJobs) {
  auto earliest = store_->EarliestSnapshot();
  ASSERT_TRUE(earliest.ok() && earliest->has_value());
  CoreSnapshot initial;
  ASSERT_TRUE(initial.ParseFromString((*earliest)->payload));
  EXPECT_EQ(initial.config().teams(0).quota().at("gpu").guaranteed(), 4);
  EXPECT_EQ(initial.jobs_size(), 0);

  auto latest = store_->LatestSnapshot();
  ASSERT_TRUE(latest.ok() && latest->has_value());
  EXPECT_EQ((*latest)->seq, 13);
  CoreSnapshot last;
  ASSERT_TRUE(last.ParseFromString((*latest)->payload));
  EXPECT_EQ(last.config().teams(0).quota().at("gpu").guaranteed(), 3);
  ASSERT_EQ(last.jobs_size(), 3);
  const auto& big = last.jobs(0);  // jobs are sorted by id
  EXPECT_EQ(big.spec().job(), "ml:big");
  EXPECT_EQ(big.state(), v1::JOB_STATE_DRAINING);
  EXPECT_TRUE(big.borrowing());
  EXPECT_EQ(big.drain_for(), "vision:v");
  EXPECT_GT(big.drain_deadline_ms(), big.admitted_at_ms());
  EXPECT_EQ(big.last_admitted_at_ms(), big.admitted_at_ms());
  const auto& elastic = last.jobs(1);
  EXPECT_EQ(elastic.spec().job(), "vision:e");
  EXPECT_EQ(elastic.replicas(), 2);
  EXPECT_EQ(elastic.epoch(), 1);
  EXPECT_EQ(elastic.resize_from(), -1);
  const auto& waiting = last.jobs(2);
  EXPECT_EQ(waiting.spec().job(), "vision:v");
  EXPECT_EQ(waiting.state(), v1::JOB_STATE_QUEUED);
  EXPECT_THAT(waiting.victims(), ElementsAre("ml:big"));
  EXPECT_EQ(waiting.search_failed_at_ms(), -1);
  ASSERT_EQ(last.ended_jobs_size(), 1);
  EXPECT_EQ(last.ended_jobs(0).spec().job(), "ml:q");
  EXPECT_EQ(last.ended_jobs(0).state(), v1::JOB_STATE_ENDED);
  EXPECT_EQ(last.ended_jobs(0).demand().at("gpu"), 1);
}

TEST_F(JournalCompatTest, ReplayingTheWholeJournalReachesTheStoredState) {
  auto report = VerifyLedger(*store_);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_THAT(report->problems, ::testing::IsEmpty());
  EXPECT_EQ(report->entries, 13);
  EXPECT_EQ(report->jobs, 3);
}

}  // namespace
}  // namespace tidegate::ledger_ops
