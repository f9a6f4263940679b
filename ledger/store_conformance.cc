// The Store conformance suite (store_conformance.h). Expected values are
// written inline; `Dump` renders a whole store as text so "nothing changed"
// is one comparison with a readable diff.
#include "ledger/store_conformance.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "ledger/journal_damage.h"
#include "ledger/store_conformance_support.h"

namespace tidegate::ledger {

JournalRecord Entry(int64_t seq, std::string payload) {
  if (payload.empty()) payload = absl::StrCat("command ", seq);
  JournalRecord record{seq, 1000 * seq, "submit", std::move(payload), 0};
  record.checksum = Checksum(record.payload);
  return record;
}

Batch Entries(int64_t first, int64_t last) {
  Batch batch;
  for (int64_t seq = first; seq <= last; ++seq) batch.journal.push_back(Entry(seq));
  return batch;
}

// Everything the Store interface can show, as text.
std::string Dump(Store& store) {
  std::string out = absl::StrCat("last_seq ", store.LastSeq().value(), "\n");
  absl::Status read = store.ReadJournal(0, [&](const JournalRecord& r) {
    absl::StrAppend(&out, "journal ", r.seq, " ", r.at_ms, " ", r.kind, " ", r.payload, "\n");
    return absl::OkStatus();
  });
  absl::StrAppend(&out, "read ", read.ToString(), "\n");
  const std::optional<SnapshotRecord> snapshots[] = {store.EarliestSnapshot().value(),
                                                     store.LatestSnapshot().value()};
  for (const auto& snapshot : snapshots) {
    if (snapshot.has_value())
      absl::StrAppend(&out, "snapshot ", snapshot->seq, " ", snapshot->payload, "\n");
  }
  const std::vector<JobRow> jobs = store.Jobs({}).value();
  const std::vector<UsageRow> usage = store.Usage("", 0).value();
  const std::vector<LoanRow> loans = store.Loans("", "").value();
  for (const JobRow& j : jobs) {
    absl::StrAppend(&out, "job ", j.job, " ", j.team, " ", j.state, " ", j.created_at_ms, "\n");
  }
  for (const UsageRow& u : usage) {
    absl::StrAppend(&out, "usage ", u.team, " ", u.resource, " ", u.hour_start_ms, " ", u.used, " ",
                    u.borrowed, " ", u.lent, " ", u.queued, "\n");
  }
  for (const LoanRow& l : loans) {
    absl::StrAppend(&out, "loan ", l.borrower, " ", l.lender, " ", l.resource, " ", l.day, " ",
                    l.amount, "\n");
  }
  return out;
}

namespace {

using ::testing::DoubleEq;
using ::testing::ElementsAre;
using ::testing::FieldsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

JobRow Job(std::string id, std::string team, std::string state, int64_t created_at_ms) {
  return JobRow{std::move(id), std::move(team), "c1", std::move(state), created_at_ms, 0, 0, "",
                "spec"};
}

Batch JobsBatch(std::vector<JobRow> jobs) {
  Batch batch;
  batch.jobs = std::move(jobs);
  return batch;
}

Batch UsageBatch(std::vector<UsageRow> usage) {
  Batch batch;
  batch.usage = std::move(usage);
  return batch;
}

Batch LoansBatch(std::vector<LoanRow> loans) {
  Batch batch;
  batch.loans = std::move(loans);
  return batch;
}

std::vector<int64_t> Seqs(Store& store, int64_t after) {
  std::vector<int64_t> seqs;
  absl::Status status = store.ReadJournal(after, [&](const JournalRecord& r) {
    seqs.push_back(r.seq);
    return absl::OkStatus();
  });
  EXPECT_TRUE(status.ok()) << status;
  return seqs;
}

// A batch that touches every table, for the all-or-nothing tests.
Batch EverythingBatch(int64_t seq) {
  Batch batch = Entries(seq, seq);
  batch.jobs = {Job("j1", "alpha", "admitted", 5),
                Job(absl::StrCat("new", seq), "beta", "queued", 7)};
  batch.usage = {UsageRow{"alpha", "gpu", 0, 10, 1, 0, 2}};
  batch.loans = {LoanRow{"alpha", "beta", "gpu", "2024-01-01", 4}};
  batch.snapshot = SnapshotRecord{seq, 1000 * seq, absl::StrCat("state after ", seq)};
  return batch;
}

TEST_P(StoreConformanceTest, EmptyStoreHasNothing) {
  EXPECT_EQ(store().LastSeq().value(), 0);
  EXPECT_EQ(store().LatestSnapshot().value(), std::nullopt);
  EXPECT_EQ(store().EarliestSnapshot().value(), std::nullopt);
  EXPECT_THAT(Seqs(store(), 0), IsEmpty());
  EXPECT_THAT(store().Jobs({}).value(), IsEmpty());
  EXPECT_EQ(store().Job("nope").value(), std::nullopt);
  EXPECT_THAT(store().Usage("", 0).value(), IsEmpty());
  EXPECT_THAT(store().Loans("", "").value(), IsEmpty());
}

TEST_P(StoreConformanceTest, CommitsAndReadsJournalInOrder) {
  const std::string binary("\0\x01\xff payload", 11);  // payloads are bytes, not text
  Batch first = Entries(1, 2);
  first.journal.push_back(Entry(3, binary));
  ASSERT_TRUE(store().Commit(first).ok());
  ASSERT_TRUE(store().Commit(Entries(4, 4)).ok());

  EXPECT_EQ(store().LastSeq().value(), 4);
  std::vector<JournalRecord> read;
  ASSERT_TRUE(store()
                  .ReadJournal(0,
                               [&](const JournalRecord& r) {
                                 read.push_back(r);
                                 return absl::OkStatus();
                               })
                  .ok());
  ASSERT_EQ(read.size(), 4u);
  EXPECT_THAT(read[0], FieldsAre(1, 1000, "submit", "command 1", Checksum("command 1")));
  EXPECT_THAT(read[2], FieldsAre(3, 3000, "submit", binary, Checksum(binary)));
  EXPECT_EQ(read[3].seq, 4);
  EXPECT_THAT(Seqs(store(), 2), ElementsAre(3, 4));
  EXPECT_THAT(Seqs(store(), 4), IsEmpty());
}

TEST_P(StoreConformanceTest, ReadJournalStopsAtTheCallbacksError) {
  ASSERT_TRUE(store().Commit(Entries(1, 3)).ok());
  int calls = 0;
  absl::Status status = store().ReadJournal(0, [&](const JournalRecord& r) {
    ++calls;
    return absl::CancelledError("enough");
  });
  EXPECT_EQ(status, absl::CancelledError("enough"));
  EXPECT_EQ(calls, 1);
}

TEST_P(StoreConformanceTest, ReadJournalCallbackMayUseTheStore) {
  ASSERT_TRUE(store().Commit(Entries(1, 2)).ok());
  std::vector<int64_t> nested;
  ASSERT_TRUE(store()
                  .ReadJournal(0,
                               [&](const JournalRecord& r) {
                                 EXPECT_EQ(store().LastSeq().value(), 2);
                                 nested.push_back(
                                     static_cast<int64_t>(Seqs(store(), r.seq).size()));
                                 return absl::OkStatus();
                               })
                  .ok());
  EXPECT_THAT(nested, ElementsAre(1, 0));  // entries after 1, after 2
}

TEST_P(StoreConformanceTest, RefusesSeqsThatDoNotContinueTheJournalAndWritesNothing) {
  ASSERT_TRUE(store().Commit(Entries(1, 2)).ok());
  const std::string before = Dump(store());

  Batch skips = EverythingBatch(4);  // 3 is missing
  EXPECT_EQ(store().Commit(skips).code(), absl::StatusCode::kFailedPrecondition);
  Batch gap_inside = EverythingBatch(3);
  gap_inside.journal.push_back(Entry(5));
  EXPECT_EQ(store().Commit(gap_inside).code(), absl::StatusCode::kFailedPrecondition);
  Batch repeats = EverythingBatch(2);
  EXPECT_EQ(store().Commit(repeats).code(), absl::StatusCode::kFailedPrecondition);

  EXPECT_EQ(Dump(store()), before);
  EXPECT_TRUE(store().Commit(EverythingBatch(3)).ok());  // the journal continues
  EXPECT_EQ(store().LastSeq().value(), 3);
}

TEST_P(StoreConformanceTest, RefusesAChecksumThatIsNotThePayloads) {
  Batch batch = EverythingBatch(1);
  batch.journal[0].checksum ^= 1;
  absl::Status status = store().Commit(batch);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("seq 1"));
  EXPECT_EQ(store().LastSeq().value(), 0);
  EXPECT_THAT(store().Jobs({}).value(), IsEmpty());
}

TEST_P(StoreConformanceTest, RefusesRowsWithoutKeys) {
  Batch no_job_id = EverythingBatch(1);
  no_job_id.jobs.push_back(Job("", "alpha", "queued", 1));
  Batch no_team = EverythingBatch(1);
  no_team.usage.push_back(UsageRow{"", "gpu", 0, 1, 0, 0, 0});
  Batch bad_day = EverythingBatch(1);
  bad_day.loans.push_back(LoanRow{"a", "b", "gpu", "2024-1-1", 1});
  for (const Batch* batch : {&no_job_id, &no_team, &bad_day}) {
    EXPECT_EQ(store().Commit(*batch).code(), absl::StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(store().LastSeq().value(), 0);
}

TEST_P(StoreConformanceTest, EmptyBatchChangesNothing) {
  ASSERT_TRUE(store().Commit(Batch{}).ok());
  EXPECT_EQ(store().LastSeq().value(), 0);
}

TEST_P(StoreConformanceTest, UpsertsJobsByIdAndFiltersByTeamAndState) {
  Batch batch = Entries(1, 1);
  batch.jobs = {Job("a", "x", "queued", 10), Job("b", "y", "admitted", 5),
                Job("c", "x", "admitted", 5)};
  ASSERT_TRUE(store().Commit(batch).ok());
  JobRow a = Job("a", "x", "admitted", 10);
  a.admitted_at_ms = 20;
  a.reason = "fits in guarantee";
  ASSERT_TRUE(store().Commit(JobsBatch({a})).ok());

  auto ids = [&](const std::string& team, const std::string& state) {
    std::vector<std::string> out;
    const std::vector<JobRow> rows = store().Jobs(JobFilter{team, state}).value();
    for (const JobRow& row : rows) out.push_back(row.job);
    return out;
  };
  // Ordered by created_at_ms, then id.
  EXPECT_THAT(ids("", ""), ElementsAre("b", "c", "a"));
  EXPECT_THAT(ids("x", ""), ElementsAre("c", "a"));
  EXPECT_THAT(ids("", "queued"), IsEmpty());
  EXPECT_THAT(ids("", "admitted"), ElementsAre("b", "c", "a"));
  EXPECT_THAT(ids("y", "admitted"), ElementsAre("b"));
  EXPECT_THAT(store().Job("a").value().value(),
              FieldsAre("a", "x", "c1", "admitted", 10, 20, 0, "fits in guarantee", "spec"));
  EXPECT_EQ(store().Job("d").value(), std::nullopt);
}

// An ended job keeps its row; a later job may take its id with another team
// and creation time, and the listings follow the row as last written.
TEST_P(StoreConformanceTest, ListsEndedJobsAndAReusedIdTakesItsNewTeamAndCreationTime) {
  Batch batch = Entries(1, 1);
  batch.jobs = {Job("a", "x", "admitted", 10), Job("b", "y", "admitted", 20), Job("c", "x", "queued", 30)};
  ASSERT_TRUE(store().Commit(batch).ok());
  JobRow a_ended = Job("a", "x", "ended", 10);
  a_ended.ended_at_ms = 40;
  JobRow b_ended = Job("b", "y", "ended", 20);
  b_ended.ended_at_ms = 41;
  ASSERT_TRUE(store().Commit(JobsBatch({a_ended, b_ended})).ok());

  auto ids = [&](const std::string& team, const std::string& state) {
    std::vector<std::string> out;
    const std::vector<JobRow> rows = store().Jobs(JobFilter{team, state}).value();
    for (const JobRow& row : rows) out.push_back(row.job);
    return out;
  };
  EXPECT_THAT(ids("", "ended"), ElementsAre("a", "b"));
  EXPECT_THAT(ids("x", "ended"), ElementsAre("a"));
  EXPECT_THAT(ids("", "admitted"), IsEmpty());
  EXPECT_THAT(ids("", "queued"), ElementsAre("c"));
  EXPECT_THAT(store().Job("b").value().value(), FieldsAre("b", "y", "c1", "ended", 20, 0, 41, "", "spec"));

  // "a" again, in another team, created after "c".
  ASSERT_TRUE(store().Commit(JobsBatch({Job("a", "y", "queued", 50)})).ok());
  EXPECT_THAT(store().Job("a").value().value(), FieldsAre("a", "y", "c1", "queued", 50, 0, 0, "", "spec"));
  EXPECT_THAT(ids("", ""), ElementsAre("b", "c", "a"));
  EXPECT_THAT(ids("x", ""), ElementsAre("c"));
  EXPECT_THAT(ids("y", ""), ElementsAre("b", "a"));
  EXPECT_THAT(ids("", "queued"), ElementsAre("c", "a"));
  EXPECT_THAT(ids("", "ended"), ElementsAre("b"));
  EXPECT_THAT(ids("y", "queued"), ElementsAre("a"));
}

TEST_P(StoreConformanceTest, AddsUsageRowsWithTheSameKeyAndFiltersBySince) {
  const int64_t h = 3'600'000;
  Batch batch;
  batch.usage = {UsageRow{"x", "gpu", 0, 100, 10, 0, 5}, UsageRow{"x", "gpu", h, 50, 0, 0, 0},
                 UsageRow{"y", "gpu", 0, 0, 0, 10, 0}};
  ASSERT_TRUE(store().Commit(batch).ok());
  ASSERT_TRUE(store().Commit(UsageBatch({UsageRow{"x", "gpu", 0, 0.5, 1, 2, 3}})).ok());

  EXPECT_THAT(
      store().Usage("x", 0).value(),
      ElementsAre(FieldsAre("x", "gpu", 0, DoubleEq(100.5), DoubleEq(11), DoubleEq(2), DoubleEq(8)),
                  FieldsAre("x", "gpu", h, DoubleEq(50), DoubleEq(0), DoubleEq(0), DoubleEq(0))));
  EXPECT_THAT(
      store().Usage("x", h).value(),
      ElementsAre(FieldsAre("x", "gpu", h, DoubleEq(50), DoubleEq(0), DoubleEq(0), DoubleEq(0))));
  EXPECT_EQ(store().Usage("", 0).value().size(), 3u);
  EXPECT_THAT(store().Usage("z", 0).value(), IsEmpty());
}

TEST_P(StoreConformanceTest, AddsLoansWithTheSameKeyAndFiltersByTeamAndDay) {
  Batch batch;
  batch.loans = {LoanRow{"x", "y", "gpu", "2024-03-01", 3600},
                 LoanRow{"x", "z", "gpu", "2024-03-02", 60},
                 LoanRow{"z", "y", "gpu", "2024-02-29", 10}};
  ASSERT_TRUE(store().Commit(batch).ok());
  ASSERT_TRUE(store().Commit(LoansBatch({LoanRow{"x", "y", "gpu", "2024-03-01", 1800}})).ok());

  // Ordered by day, then borrower, lender, resource.
  EXPECT_THAT(store().Loans("", "").value(),
              ElementsAre(FieldsAre("z", "y", "gpu", "2024-02-29", DoubleEq(10)),
                          FieldsAre("x", "y", "gpu", "2024-03-01", DoubleEq(5400)),
                          FieldsAre("x", "z", "gpu", "2024-03-02", DoubleEq(60))));
  // A team's loans are those it borrowed and those it lent.
  EXPECT_THAT(store().Loans("y", "").value(),
              ElementsAre(FieldsAre("z", "y", "gpu", "2024-02-29", DoubleEq(10)),
                          FieldsAre("x", "y", "gpu", "2024-03-01", DoubleEq(5400))));
  EXPECT_THAT(store().Loans("z", "2024-03-01").value(),
              ElementsAre(FieldsAre("x", "z", "gpu", "2024-03-02", DoubleEq(60))));
}

TEST_P(StoreConformanceTest, ReportsACorruptPayloadAsDataLossNamingTheSeq) {
  ASSERT_TRUE(store().Commit(Entries(1, 3)).ok());
  absl::Status hook = harness().CorruptJournalPayload(2);
  if (absl::IsUnimplemented(hook)) GTEST_SKIP() << hook.message();
  ASSERT_TRUE(hook.ok()) << hook;

  std::vector<int64_t> delivered;
  absl::Status status = store().ReadJournal(0, [&](const JournalRecord& r) {
    delivered.push_back(r.seq);
    return absl::OkStatus();
  });
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("seq 2"));
  EXPECT_THAT(delivered, ElementsAre(1));  // the bad entry is never handed out
  ASSERT_TRUE(DamageOf(status).has_value());
  EXPECT_EQ(DamageOf(status)->seq, 2);
  EXPECT_THAT(Seqs(store(), DamageOf(status)->resume_after), ElementsAre(3));
}

TEST_P(StoreConformanceTest, ReportsAMissingEntryAsDataLoss) {
  ASSERT_TRUE(store().Commit(Entries(1, 5)).ok());
  for (int64_t seq : {2, 3}) {
    absl::Status hook = harness().DropJournalEntry(seq);
    if (absl::IsUnimplemented(hook)) GTEST_SKIP() << hook.message();
    ASSERT_TRUE(hook.ok()) << hook;
  }
  absl::Status status =
      store().ReadJournal(0, [](const JournalRecord&) { return absl::OkStatus(); });
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("seqs 2..3 missing"));
  ASSERT_TRUE(DamageOf(status).has_value());
  EXPECT_EQ(DamageOf(status)->seq, 2);
  EXPECT_THAT(Seqs(store(), DamageOf(status)->resume_after), ElementsAre(4, 5));
}

TEST_P(StoreConformanceTest, AFailedCommitLeavesNothingHalfApplied) {
  ASSERT_TRUE(store().Commit(EverythingBatch(1)).ok());
  absl::Status hook = harness().FailWritesOfLoansBorrowedBy("poison");
  if (absl::IsUnimplemented(hook)) GTEST_SKIP() << hook.message();
  ASSERT_TRUE(hook.ok()) << hook;
  const std::string before = Dump(store());

  Batch batch = EverythingBatch(2);
  batch.loans.push_back(LoanRow{"poison", "beta", "gpu", "2024-01-01", 1});  // written last
  EXPECT_FALSE(store().Commit(batch).ok());
  EXPECT_EQ(Dump(store()), before);

  EXPECT_TRUE(store().Commit(EverythingBatch(2)).ok());  // the store is still usable
  EXPECT_EQ(store().LastSeq().value(), 2);
}

}  // namespace
}  // namespace tidegate::ledger
