// LedgerLock: one holder per file, whatever path names it; errors say why.
#include "ledger/ledger_lock.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tidegate::ledger {
namespace {

using ::testing::HasSubstr;

class LedgerLockTest : public testing::Test {
 protected:
  LedgerLockTest() {
    std::string pattern = (std::filesystem::temp_directory_path() / "tidegate-lock-XXXXXX").string();
    dir_ = mkdtemp(pattern.data());
    path_ = (dir_ / "ledger.db").string();
  }
  ~LedgerLockTest() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(LedgerLockTest, AMissingFileIsNotFoundUnlessCreated) {
  EXPECT_EQ(LedgerLock::Acquire(path_, false).status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(std::filesystem::exists(path_));
  auto created = LedgerLock::Acquire(path_, true);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->size(), 0);
}

TEST_F(LedgerLockTest, EveryPathToTheFileFindsTheLockTaken) {
  auto held = LedgerLock::Acquire(path_, true);
  ASSERT_TRUE(held.ok());
  const std::string hard = (dir_ / "hard.db").string(), soft = (dir_ / "soft.db").string();
  std::filesystem::create_hard_link(path_, hard);
  std::filesystem::create_symlink(path_, soft);
  EXPECT_EQ(held->links(), 2);
  for (const std::string& other : {path_, hard, soft}) {
    auto second = LedgerLock::Acquire(other, false);
    EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable) << other;
    EXPECT_THAT(second.status().message(), HasSubstr(other + " is in use by a running tidegated"));
  }
  *held = std::move(*LedgerLock::Acquire((dir_ / "other.db").string(), true));  // releases the first
  EXPECT_TRUE(LedgerLock::Acquire(hard, false).ok());
}

}  // namespace
}  // namespace tidegate::ledger
