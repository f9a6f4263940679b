// The in-memory Store against the conformance suite.
#include "ledger/memory_store.h"

#include "gtest/gtest.h"
#include "ledger/forwarding_store.h"
#include "ledger/store_conformance.h"

namespace tidegate::ledger {
namespace {

class MemoryHarness final : public StoreHarness {
 public:
  Store& store() override { return *store_; }
  absl::Status CorruptJournalPayload(int64_t seq) override {
    return CorruptMemoryJournalForTest(*store_, seq);
  }
  absl::Status DropJournalEntry(int64_t seq) override {
    return DropMemoryJournalEntryForTest(*store_, seq);
  }
  absl::Status CorruptSnapshotPayload(int64_t seq) override {
    return CorruptMemorySnapshotForTest(*store_, seq);
  }
  absl::Status FailWritesOfLoansBorrowedBy(const std::string&) override {
    // Its Commit validates the whole batch and then only inserts into maps:
    // there is no step after validation that can fail.
    return absl::UnimplementedError("the memory store has no failure point after validation");
  }

 private:
  std::unique_ptr<Store> store_ = NewMemoryStore();
};

std::unique_ptr<StoreHarness> NewMemoryHarness() { return std::make_unique<MemoryHarness>(); }

INSTANTIATE_TEST_SUITE_P(Memory, StoreConformanceTest, testing::Values(&NewMemoryHarness));

TEST(MemoryStoreTest, TestHooksRefuseOtherStores) {
  auto memory = NewMemoryStore();
  ForwardingStore other(memory.get());  // a Store, but not the memory store itself
  EXPECT_EQ(CorruptMemoryJournalForTest(other, 1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DropMemoryJournalEntryForTest(*memory, 1).code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace tidegate::ledger
