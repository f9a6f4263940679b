// The one test suite every Store implementation passes (STYLE.md 7). Each
// implementation's test binary compiles store_conformance.cc and instantiates
// the suite with a factory for its harness:
//
//   std::unique_ptr<StoreHarness> NewSqliteHarness();
//   INSTANTIATE_TEST_SUITE_P(Sqlite, StoreConformanceTest, testing::Values(&NewSqliteHarness));
//
// The harness owns the store under test and injects the faults a real disk or
// database can produce, from outside the store's code (a raw SQL connection, a
// test hook); a harness that cannot produce a fault returns UNIMPLEMENTED and
// the test needing it is skipped, saying why.
#ifndef TIDEGATE_LEDGER_STORE_CONFORMANCE_H_
#define TIDEGATE_LEDGER_STORE_CONFORMANCE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "ledger/store.h"

namespace tidegate::ledger {

class StoreHarness {
 public:
  virtual ~StoreHarness() = default;

  // The store under test: empty when the harness is made.
  virtual Store& store() = 0;

  // Changes the stored payload of journal entry `seq` but not its checksum.
  virtual absl::Status CorruptJournalPayload(int64_t seq) = 0;
  // Deletes journal entry `seq`, leaving a gap.
  virtual absl::Status DropJournalEntry(int64_t seq) = 0;
  // Changes the stored payload of the snapshot at `seq` but not its checksum.
  virtual absl::Status CorruptSnapshotPayload(int64_t seq) = 0;
  // From now on, writing a loan row whose borrower is `borrower` fails inside
  // the store, after the batch's journal, jobs and usage rows were written.
  virtual absl::Status FailWritesOfLoansBorrowedBy(const std::string& borrower) = 0;
};

using StoreHarnessFactory = std::unique_ptr<StoreHarness> (*)();

class StoreConformanceTest : public testing::TestWithParam<StoreHarnessFactory> {
 protected:
  void SetUp() override { harness_ = GetParam()(); }
  Store& store() { return harness_->store(); }
  StoreHarness& harness() { return *harness_; }

 private:
  std::unique_ptr<StoreHarness> harness_;
};

}  // namespace tidegate::ledger

#endif  // TIDEGATE_LEDGER_STORE_CONFORMANCE_H_
