#include "cli/quota_command.h"

#include <sstream>

#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace tidegate::cli {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kNow = 1714564800000;  // 2024-05-01T12:00:00Z

template <typename M>
M Parse(const std::string& text) {
  M m;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &m)) << text;
  return m;
}

// ml's jobs hold 40 and its children keep 8 idle privately, so it borrows 8,
// which serving lends; research waits for 16.
const char kTeams[] = R"pb(
  teams {
    name: "ml" leaf: false share: 0.2
    resources {
      resource: "gpu" guaranteed: 40 borrow_limit: 16 used: 40 private: 8 borrowed: 8
    }
    running_jobs: 3
  }
  teams {
    name: "research" parent: "ml" leaf: true share: 0.125
    resources { resource: "gpu" guaranteed: 16 used: 8 queued: 16 }
    resources { resource: "cpu" guaranteed: 100 used: 10 }
    running_jobs: 1 queued_jobs: 1
  }
  teams {
    name: "serving" leaf: true
    resources { resource: "gpu" guaranteed: 16 borrow_limit: 0 lend_limit: 8 lent: 8 }
  })pb";

TEST(PrintTeamsTableTest, OneRowPerTeamGpuColumnsFirst) {
  auto response = Parse<v1::ListTeamsResponse>(kTeams);
  std::ostringstream out;
  PrintTeamsTable(response.teams(), out);
  EXPECT_EQ(out.str(),
            "team      parent  gpu guaranteed  gpu private  gpu used  gpu borrowed  gpu lent  "
            "gpu queued  cpu guaranteed  cpu private  cpu used  cpu borrowed  cpu lent  "
            "cpu queued  share  running jobs  queued jobs\n"
            "ml        -                   40            8        40             8         0  "
            "         0               -            -         -             -         -  "
            "         -  0.200             3            0\n"
            "research  ml                  16            0         8             0         0  "
            "        16             100            0        10             0         0  "
            "         0  0.125             1            1\n"
            "serving   -                   16            0         0             0         8  "
            "         0               -            -         -             -         -  "
            "         -  0.000             0            0\n");
}

TEST(PrintQuotaTableTest, OneRowPerTeamAndResourceWithLimits) {
  auto response = Parse<v1::ListTeamsResponse>(kTeams);
  std::ostringstream out;
  PrintQuotaTable(response.teams(), out);
  EXPECT_EQ(out.str(),
            "team      resource  guaranteed  borrow limit  lend limit  private  used  borrowed  "
            "lent  queued  share\n"
            "ml        gpu               40            16   unlimited        8    40         8  "
            "   0       0  0.200\n"
            "research  gpu               16     unlimited   unlimited        0     8         0  "
            "   0      16  0.125\n"
            "research  cpu              100     unlimited   unlimited        0    10         0  "
            "   0       0  0.125\n"
            "serving   gpu               16             0           8        0     0         0  "
            "   8       0  0.000\n");
}

TEST(PrintLoansTableTest, HoursHaveTwoDecimals) {
  auto response = Parse<v1::ListLoansResponse>(R"pb(
    loans { borrower: "ml" lender: "serving" resource: "gpu" day: "2024-05-01" hours: 12.5 })pb");
  std::ostringstream out;
  PrintLoansTable(response.loans(), out);
  EXPECT_EQ(out.str(),
            "borrower  lender   resource  day         hours\n"
            "ml        serving  gpu       2024-05-01  12.50\n");
}

TEST(PrintUsageTableTest, ResourceSecondsBecomeHours) {
  auto response = Parse<v1::GetUsageResponse>(R"pb(
    points { start_ms: 1714561200000 resource: "gpu" used: 172800 borrowed: 28800 queued: 3600 })pb");
  std::ostringstream out;
  PrintUsageTable(response.points(), out);
  EXPECT_EQ(out.str(),
            "time              resource  used h  borrowed h  lent h  queued h\n"
            "2024-05-01 11:00  gpu        48.00        8.00    0.00      1.00\n");
}

TEST(QuotaJsonTest, OneUnitPerQuantityNamedInTheFieldAndNumbersAsNumbers) {
  auto usage = Parse<v1::GetUsageResponse>(R"pb(
    points { start_ms: 1714561200000 resource: "gpu" used: 172800 borrowed: 1000 queued: 3600 })pb");
  EXPECT_EQ(UsageJson(usage),
            R"({"points":[{"start":"2024-05-01T11:00:00Z","start_ms":1714561200000,)"
            R"("resource":"gpu","used_hours":48,"borrowed_hours":0.28,"lent_hours":0,)"
            R"("queued_hours":1}]})");
  auto loans = Parse<v1::ListLoansResponse>(R"pb(
    loans { borrower: "ml" lender: "serving" resource: "gpu" day: "2024-05-01" hours: 12.499999999 })pb");
  EXPECT_EQ(LoansJson(loans),
            R"({"loans":[{"borrower":"ml","lender":"serving","resource":"gpu",)"
            R"("day":"2024-05-01","hours":12.5}],"next_page_token":""})");
  auto teams = Parse<v1::ListTeamsResponse>(kTeams);
  teams.mutable_teams(0)->set_share(0.20000000000000001 + 1e-9);
  const std::string json = TeamsJson(teams);
  EXPECT_THAT(json, HasSubstr(R"("resources":[{"resource":"gpu","guaranteed":40,)"
                              R"("borrow_limit":16,"used":40,"borrowed":8,"lent":0,"queued":0,)"
                              R"("private":8}])"));
  EXPECT_THAT(json, HasSubstr(R"("share":0.2,"running_jobs":3)"));
}

TEST(HistoryRequestTest, DefaultsAndFlags) {
  HistoryOptions o;
  o.team = "ml";
  auto loans = BuildLoansRequest(o, kNow);
  ASSERT_TRUE(loans.ok());
  EXPECT_EQ(loans->team(), "ml");
  EXPECT_EQ(loans->since_ms(), kNow - int64_t{30} * 86'400'000);  // 30d by default.
  auto usage = BuildUsageRequest(o, kNow);
  ASSERT_TRUE(usage.ok());
  EXPECT_EQ(usage->since_ms(), kNow - 86'400'000);  // 1d by default.
  EXPECT_EQ(usage->step_s(), 3600);

  o.since = "2024-05-01";
  o.step = "1d";
  o.resource = "gpu";
  usage = BuildUsageRequest(o, kNow);
  ASSERT_TRUE(usage.ok());
  EXPECT_EQ(usage->since_ms(), kNow - 12 * 3'600'000);
  EXPECT_EQ(usage->step_s(), 86400);
  EXPECT_EQ(usage->resource(), "gpu");
}

TEST(HistoryRequestTest, BadSinceOrStepIsNamed) {
  HistoryOptions o;
  o.since = "last week";
  EXPECT_THAT(std::string(BuildLoansRequest(o, kNow).status().message()),
              HasSubstr("--since 'last week'"));
  o.since = "";
  o.step = "30m";
  EXPECT_THAT(std::string(BuildUsageRequest(o, kNow).status().message()),
              HasSubstr("--step '30m'"));
}

}  // namespace
}  // namespace tidegate::cli
