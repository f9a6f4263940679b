#include "broker/service/pagination.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tidegate::service {
namespace {

using ::testing::HasSubstr;

TEST(PaginationTest, ZeroMeansTheDefaultAndLargeMeansTheMaximum) {
  EXPECT_EQ(ParsePage(0, "", "q")->size, kDefaultPageSize);
  EXPECT_EQ(ParsePage(7, "", "q")->size, 7);
  EXPECT_EQ(ParsePage(1'000'000, "", "q")->size, kMaxPageSize);
  EXPECT_TRUE(ParsePage(3, "", "q")->after.empty());
}

TEST(PaginationTest, NegativePageSizeIsInvalidArgumentNamingTheValue) {
  auto page = ParsePage(-1, "", "q");
  EXPECT_EQ(page.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(page.status().message(), HasSubstr("page_size: -1 must be >= 0"));
}

TEST(PaginationTest, ATokenResumesAfterItsKeyWhateverTheKeyHolds) {
  const std::string key = std::string("day\0b:ob/x", 10);
  auto page = ParsePage(5, PageToken("jobs/0/team", key), "jobs/0/team");
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ(page->after, key);
}

TEST(PaginationTest, ATokenOfAnotherQueryOrGarbageIsInvalidArgument) {
  for (const std::string& token :
       {PageToken("jobs/0/research", "a"), PageToken("jobs/0/", "a"), std::string("not base64!"),
        PageToken("jobs/0/team", "")}) {
    auto page = ParsePage(5, token, "jobs/0/team");
    EXPECT_EQ(page.status().code(), absl::StatusCode::kInvalidArgument) << token;
    EXPECT_THAT(page.status().message(), HasSubstr("page_token"));
  }
}

}  // namespace
}  // namespace tidegate::service
