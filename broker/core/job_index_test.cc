#include "broker/core/job_index.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tidegate::core {
namespace {

using ::testing::UnorderedElementsAreArray;

TEST(JobIndexTest, FindsWhatWasSetUntilErased) {
  JobIndex index;
  EXPECT_EQ(index.Find("a"), -1);
  index.Set("a", 3);
  index.Set("b", 5);
  index.Set("a", 7);  // replaces
  EXPECT_EQ(index.Find("a"), 7);
  EXPECT_EQ(index.Find("b"), 5);
  EXPECT_EQ(index.size(), 2u);
  index.Erase("a");
  index.Erase("never");  // absent: nothing
  EXPECT_EQ(index.Find("a"), -1);
  EXPECT_EQ(index.Find("b"), 5);
  EXPECT_EQ(index.size(), 1u);
  std::vector<int> slots;
  index.ForEachSlot([&](int slot) { slots.push_back(slot); });
  EXPECT_EQ(slots, std::vector<int>{5});
}

TEST(JobIndexTest, VisitsEverySlotOnce) {
  JobIndex index;
  std::vector<int> expected;
  for (int i = 0; i < 5000; ++i) {
    index.Set(absl::StrCat("job-", i), i);
    expected.push_back(i);
  }
  for (int i = 0; i < 5000; i += 2) index.Erase(absl::StrCat("job-", i));
  expected.erase(std::remove_if(expected.begin(), expected.end(), [](int i) { return i % 2 == 0; }), expected.end());
  std::vector<int> slots;
  index.ForEachSlot([&](int slot) { slots.push_back(slot); });
  EXPECT_THAT(slots, UnorderedElementsAreArray(expected));
  EXPECT_EQ(index.size(), expected.size());
}

// What bounds the stall of one insert: no shard holds more than a small share
// of the ids, so growing one rehashes a few thousand of them, not all.
TEST(JobIndexTest, NoShardHoldsMoreThanASmallShareOfTheIds) {
  JobIndex index;
  constexpr int kIds = 200000;
  for (int i = 0; i < kIds; ++i) index.Set(absl::StrCat("lg-", i % 32, "-", i), i);
  // An even spread puts 781 ids in a shard, in a table of 1,023 or 2,047
  // slots; one map of them all would have 262,143.
  EXPECT_LE(index.LargestShardCapacity(), 4095u);
}

}  // namespace
}  // namespace tidegate::core
