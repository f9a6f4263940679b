// Accountant: expected resource-seconds written inline.
#include "ledger/accounting.h"

#include <cmath>
#include <optional>
#include <random>
#include <string>
#include <tuple>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tidegate::ledger {
namespace {

using ::testing::DoubleEq;
using ::testing::ElementsAre;
using ::testing::FieldsAre;
using ::testing::IsEmpty;

constexpr int64_t kMinute = 60'000;
constexpr int64_t kHour = 60 * kMinute;
constexpr int64_t kMar1 = 1'709'251'200'000;  // 2024-03-01T00:00:00Z

class Leaf {
 public:
  explicit Leaf(std::string team) {
    leaf_.team = std::move(team);
    leaf_.resource = "gpu";
  }
  Leaf& Resource(std::string resource) {
    leaf_.resource = std::move(resource);
    return *this;
  }
  Leaf& Guaranteed(int64_t g) {
    leaf_.guaranteed = g;
    return *this;
  }
  Leaf& Uses(int64_t used) {
    leaf_.used = used;
    return *this;
  }
  Leaf& LendLimit(int64_t limit) {
    leaf_.lend_limit = limit;
    return *this;
  }
  Leaf& Queued(int64_t queued) {
    leaf_.queued = queued;
    return *this;
  }
  operator LeafObservation() const { return leaf_; }

 private:
  LeafObservation leaf_;
};

// Holds `leaves` over [from_ms, to_ms) and returns the rows.
AccountingRows Hold(int64_t from_ms, int64_t to_ms, std::vector<LeafObservation> leaves) {
  Accountant accountant;
  EXPECT_TRUE(accountant.Observe({from_ms, std::move(leaves)}).ok());
  EXPECT_TRUE(accountant.AdvanceTo(to_ms).ok());
  return accountant.TakeRows();
}

auto Usage(const std::string& team, int64_t hour, double used, double borrowed, double lent,
           double queued) {
  return FieldsAre(team, "gpu", hour, DoubleEq(used), DoubleEq(borrowed), DoubleEq(lent),
                   DoubleEq(queued));
}

auto Loan(const std::string& borrower, const std::string& lender, const std::string& day,
          double amount) {
  return FieldsAre(borrower, lender, "gpu", day, DoubleEq(amount));
}

TEST(AccountantTest, BorrowingAcrossAnHourBoundarySplitsUsageByHour) {
  // b borrows 4 of a's idle 8 from 00:30 to 02:00: 30 minutes in hour 0, 60 in hour 1.
  AccountingRows rows =
      Hold(30 * kMinute, 2 * kHour, {Leaf("a").Guaranteed(8), Leaf("b").Guaranteed(4).Uses(8)});
  EXPECT_THAT(rows.usage,
              ElementsAre(Usage("a", 0, 0, 0, 4 * 1800, 0), Usage("a", kHour, 0, 0, 4 * 3600, 0),
                          Usage("b", 0, 8 * 1800, 4 * 1800, 0, 0),
                          Usage("b", kHour, 8 * 3600, 4 * 3600, 0, 0)));
  EXPECT_THAT(rows.loans, ElementsAre(Loan("b", "a", "1970-01-01", 4 * 5400)));
}

TEST(AccountantTest, LendersShareInProportionToTheirIdleLendableGuarantee) {
  // b borrows 4; a has 6 idle, c has 2: a lends 3, c lends 1.
  AccountingRows rows =
      Hold(kMar1, kMar1 + 1000 * 1000,
           {Leaf("a").Guaranteed(6), Leaf("b").Uses(4), Leaf("c").Guaranteed(4).Uses(2)});
  EXPECT_THAT(rows.loans,
              ElementsAre(Loan("b", "a", "2024-03-01", 3000), Loan("b", "c", "2024-03-01", 1000)));
  EXPECT_THAT(rows.usage,
              ElementsAre(Usage("a", kMar1, 0, 0, 3000, 0), Usage("b", kMar1, 4000, 4000, 0, 0),
                          Usage("c", kMar1, 2000, 0, 1000, 0)));
}

TEST(AccountantTest, BorrowersShareEachLenderByWhatTheyBorrow) {
  // b1 borrows 3, b2 borrows 1, all of it from a's idle 8.
  AccountingRows rows =
      Hold(kMar1, kMar1 + 1000 * 1000,
           {Leaf("a").Guaranteed(8), Leaf("b1").Uses(3), Leaf("b2").Guaranteed(1).Uses(2)});
  EXPECT_THAT(rows.loans, ElementsAre(Loan("b1", "a", "2024-03-01", 3000),
                                      Loan("b2", "a", "2024-03-01", 1000)));
  EXPECT_THAT(rows.usage[0], Usage("a", kMar1, 0, 0, 4000, 0));
}

TEST(AccountantTest, LendLimitCapsTheIdleGuaranteeAndTheFleetLendsTheRest) {
  // a has 8 idle but lends at most 2; b borrows 4: 2 from a, 2 from the fleet.
  AccountingRows rows =
      Hold(kMar1, kMar1 + 1000 * 1000, {Leaf("a").Guaranteed(8).LendLimit(2), Leaf("b").Uses(4)});
  EXPECT_THAT(rows.loans, ElementsAre(Loan("b", "(fleet)", "2024-03-01", 2000),
                                      Loan("b", "a", "2024-03-01", 2000)));
  EXPECT_THAT(rows.usage[0], Usage("a", kMar1, 0, 0, 2000, 0));
}

TEST(AccountantTest, WithNoIdleGuaranteeAnywhereTheFleetLendsEverything) {
  // a is exactly at its guarantee, so it lends nothing.
  AccountingRows rows =
      Hold(kMar1, kMar1 + 1000 * 1000, {Leaf("a").Guaranteed(4).Uses(4), Leaf("b").Uses(2)});
  EXPECT_THAT(rows.loans, ElementsAre(Loan("b", "(fleet)", "2024-03-01", 2000)));
}

TEST(AccountantTest, LoansSplitAtUtcMidnight) {
  // 23:00 on March 1st to 01:00 on March 2nd, borrowing 4.
  AccountingRows rows =
      Hold(kMar1 + 23 * kHour, kMar1 + 25 * kHour, {Leaf("a").Guaranteed(8), Leaf("b").Uses(4)});
  EXPECT_THAT(rows.loans, ElementsAre(Loan("b", "a", "2024-03-01", 4 * 3600),
                                      Loan("b", "a", "2024-03-02", 4 * 3600)));
  EXPECT_EQ(rows.usage.size(), 4u);  // a and b, two hours each
}

TEST(AccountantTest, QueuedDemandIsIntegratedLikeUse) {
  AccountingRows rows = Hold(0, 30 * kMinute, {Leaf("a").Guaranteed(8).Queued(16)});
  EXPECT_THAT(rows.usage, ElementsAre(Usage("a", 0, 0, 0, 0, 16 * 1800)));
  EXPECT_THAT(rows.loans, IsEmpty());
}

TEST(AccountantTest, IdleGuaranteeNobodyBorrowsWritesNoRows) {
  AccountingRows rows = Hold(0, kHour, {Leaf("a").Guaranteed(8), Leaf("b").Guaranteed(8).Uses(8)});
  EXPECT_THAT(rows.usage, ElementsAre(Usage("b", 0, 8 * 3600, 0, 0, 0)));
  EXPECT_THAT(rows.loans, IsEmpty());
}

TEST(AccountantTest, ResourcesAreAccountedSeparately) {
  // a borrows gpu from b and lends cpu to b.
  AccountingRows rows =
      Hold(kMar1, kMar1 + 1000 * 1000,
           {Leaf("a").Uses(2), Leaf("b").Guaranteed(4), Leaf("a").Resource("cpu").Guaranteed(1000),
            Leaf("b").Resource("cpu").Uses(500)});
  EXPECT_THAT(rows.loans, ElementsAre(FieldsAre("a", "b", "gpu", "2024-03-01", DoubleEq(2000)),
                                      FieldsAre("b", "a", "cpu", "2024-03-01", DoubleEq(500'000))));
}

TEST(AccountantTest, StateHoldsUntilTheNextObservationAndRowsMergeByKey) {
  Accountant accountant;
  ASSERT_TRUE(accountant.Observe({0, {Leaf("a").Guaranteed(8).Uses(2)}}).ok());
  ASSERT_TRUE(accountant.Observe({10 * kMinute, {Leaf("a").Guaranteed(8).Uses(6)}}).ok());
  ASSERT_TRUE(accountant.AdvanceTo(15 * kMinute).ok());
  ASSERT_TRUE(accountant.AdvanceTo(20 * kMinute).ok());
  // 2 for 600 s, then 6 for 600 s: one row.
  EXPECT_THAT(accountant.TakeRows().usage, ElementsAre(Usage("a", 0, 2 * 600 + 6 * 600, 0, 0, 0)));
  EXPECT_THAT(accountant.TakeRows().usage, IsEmpty());
  ASSERT_TRUE(accountant.AdvanceTo(21 * kMinute).ok());
  EXPECT_THAT(accountant.TakeRows().usage, ElementsAre(Usage("a", 0, 6 * 60, 0, 0, 0)));
}

TEST(AccountantTest, RefusesTimeGoingBackwardsAndKeepsItsState) {
  Accountant accountant;
  ASSERT_TRUE(accountant.Observe({10 * kMinute, {Leaf("a").Uses(1)}}).ok());
  EXPECT_EQ(accountant.Observe({5 * kMinute, {Leaf("a").Uses(9)}}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(accountant.AdvanceTo(5 * kMinute).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(accountant.AdvanceTo(20 * kMinute).ok());
  EXPECT_THAT(accountant.TakeRows().usage, ElementsAre(Usage("a", 0, 600, 600, 0, 0)));
}

TEST(AccountantTest, RefusesMalformedObservations) {
  Accountant accountant;
  EXPECT_EQ(accountant.Observe({0, {Leaf("a"), Leaf("a")}}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(accountant.Observe({0, {Leaf("")}}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(accountant.Observe({0, {Leaf("a"), Leaf("a").Resource("cpu")}}).ok());
}

// Every figure a row holds is a finite, non-negative number.
void ExpectNoGarbage(const AccountingRows& rows) {
  for (const UsageRow& r : rows.usage) {
    for (double v : {r.used, r.borrowed, r.lent, r.queued}) {
      EXPECT_TRUE(std::isfinite(v) && v >= 0) << r.team << " " << v;
    }
  }
  for (const LoanRow& r : rows.loans) {
    EXPECT_TRUE(std::isfinite(r.amount) && r.amount >= 0) << r.borrower << " " << r.amount;
  }
}

TEST(AccountantTest, OneTeamsImpossibleFigureLeavesEveryOtherTeamAccounted) {
  // a's queued demand wrapped to a negative number (a sum that overflowed
  // upstream); b borrows 4 of a's idle 8; c runs 2 and waits for 6.
  Accountant accountant;
  ASSERT_TRUE(accountant
                  .Observe({0,
                            {Leaf("a").Guaranteed(8).Queued(-4), Leaf("b").Uses(4),
                             Leaf("c").Guaranteed(2).Uses(2).Queued(6)}})
                  .ok());
  EXPECT_THAT(accountant.problems(),
              ElementsAre("team 'a' gpu: queued -4 is negative; left out"));
  ASSERT_TRUE(accountant.AdvanceTo(kHour).ok());
  const AccountingRows rows = accountant.TakeRows();
  EXPECT_THAT(rows.usage, ElementsAre(Usage("a", 0, 0, 0, 4 * 3600, 0),
                                      Usage("b", 0, 4 * 3600, 4 * 3600, 0, 0),
                                      Usage("c", 0, 2 * 3600, 0, 0, 6 * 3600)));
  EXPECT_THAT(rows.loans, ElementsAre(Loan("b", "a", "1970-01-01", 4 * 3600)));
  ExpectNoGarbage(rows);
}

TEST(AccountantTest, ANegativeUseIsLeftOutAndItsTeamNeitherLendsNorBorrows) {
  Accountant accountant;
  ASSERT_TRUE(
      accountant.Observe({0, {Leaf("a").Guaranteed(8).Uses(-1), Leaf("b").Uses(4)}}).ok());
  EXPECT_EQ(accountant.problems().size(), 1u);
  ASSERT_TRUE(accountant.AdvanceTo(kHour).ok());
  const AccountingRows rows = accountant.TakeRows();
  // b still counts its use; its loan comes from the fleet, not from a.
  EXPECT_THAT(rows.usage, ElementsAre(Usage("b", 0, 4 * 3600, 4 * 3600, 0, 0)));
  EXPECT_THAT(rows.loans, ElementsAre(Loan("b", "(fleet)", "1970-01-01", 4 * 3600)));
  ExpectNoGarbage(rows);
}

TEST(AccountantTest, AQueuedSumThatOverflowsIsLeftOutForThatInnerTeamOnly) {
  // q's two leaves wait for 2^62 each: their own rows stand, q's sum cannot.
  const int64_t huge = int64_t{1} << 62;
  Observation obs{0,
                  {Leaf("q1").Queued(huge), Leaf("q2").Queued(huge), Leaf("a").Guaranteed(8),
                   Leaf("b").Uses(4)}};
  obs.leaves[0].parent = "q";
  obs.leaves[1].parent = "q";
  obs.inner.push_back(InnerObservation{"q", "gpu", 0, std::nullopt, ""});
  Accountant accountant;
  ASSERT_TRUE(accountant.Observe(obs).ok());
  EXPECT_THAT(accountant.problems(),
              ElementsAre("team 'q' gpu: queued demand overflows int64; left out"));
  ASSERT_TRUE(accountant.AdvanceTo(1000).ok());
  const AccountingRows rows = accountant.TakeRows();
  const double h = static_cast<double>(huge);
  EXPECT_THAT(rows.usage, ElementsAre(Usage("a", 0, 0, 0, 4, 0), Usage("b", 0, 4, 4, 0, 0),
                                      Usage("q1", 0, 0, 0, 0, h), Usage("q2", 0, 0, 0, 0, h)));
  EXPECT_THAT(rows.loans, ElementsAre(Loan("b", "a", "1970-01-01", 4)));
  ExpectNoGarbage(rows);
}

TEST(AccountantTest, LoansFollowTheTreeAndInnerTeamsGetSubtreeRows) {
  // org 48 ─ ml 40 ─ research 16 (runs 40) / training 24 (lends at most 16);
  // serving 16; capacity 64. research's 24 come from training (16) and org's
  // pool (8), not from serving.
  Observation obs{0,
                  {Leaf("research").Guaranteed(16).Uses(40).Queued(8),
                   Leaf("training").Guaranteed(24).LendLimit(16), Leaf("serving").Guaranteed(16)}};
  obs.leaves[0].parent = "ml";
  obs.leaves[1].parent = "ml";
  obs.inner = {InnerObservation{"org", "gpu", 48, std::nullopt, ""},
               InnerObservation{"ml", "gpu", 40, std::nullopt, "org"}};
  obs.capacity["gpu"] = 64;
  Accountant accountant;
  ASSERT_TRUE(accountant.Observe(obs).ok());
  ASSERT_TRUE(accountant.AdvanceTo(1000).ok());
  const AccountingRows rows = accountant.TakeRows();
  EXPECT_THAT(rows.loans, ElementsAre(Loan("research", "org", "1970-01-01", 8),
                                      Loan("research", "training", "1970-01-01", 16)));
  EXPECT_THAT(rows.usage,
              ElementsAre(Usage("ml", 0, 40, 8, 0, 8), Usage("org", 0, 40, 0, 0, 8),
                          Usage("research", 0, 40, 24, 0, 8), Usage("training", 0, 0, 0, 16, 0)));
}

TEST(AccountantTest, AdvancingBeforeTheFirstObservationDoesNothing) {
  Accountant accountant;
  EXPECT_TRUE(accountant.AdvanceTo(kHour).ok());
  ASSERT_TRUE(accountant.Observe({0, {Leaf("a").Uses(1)}}).ok());  // earlier than the advance: fine
  ASSERT_TRUE(accountant.AdvanceTo(kMinute).ok());
  EXPECT_THAT(accountant.TakeRows().usage, ElementsAre(Usage("a", 0, 60, 60, 0, 0)));
}

TEST(AccountantTest, ObservingOnlyTheChangedLeavesWritesTheRowsOfObservingEveryTeam) {
  // Two accountants see the same random trees (two resources, inner teams,
  // pools, lend limits) through random batches across hours and days: one
  // observes everything each time, the other only the leaves that changed.
  // Rows and problems must be the same to the bit; now and then a figure
  // that cannot be right (the whole-tree path) and then right again.
  std::mt19937 rng(20261126);
  auto uniform = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int round = 0; round < 20; ++round) {
    SCOPED_TRACE(round);
    Observation obs;
    obs.now_ms = kMar1 - kHour / 2;
    std::vector<std::string> inner;
    const int teams = uniform(1, 25);
    for (int i = 0; i < teams; ++i) {
      const std::string name = "t" + std::to_string(i);
      const std::string parent = inner.empty() || uniform(0, 3) == 0 ? "" : inner[uniform(0, inner.size() - 1)];
      const bool leaf = i == teams - 1 || uniform(0, 3) > 0;
      for (const char* resource : {"gpu", "cpu"}) {
        if (std::string(resource) == "cpu" && uniform(0, 2) > 0) continue;
        std::optional<int64_t> lend_limit;
        if (uniform(0, 2) == 0) lend_limit = uniform(0, 15);
        if (!leaf) {
          obs.inner.push_back({name, resource, uniform(0, 60), lend_limit, parent});
          continue;
        }
        LeafObservation l;
        l.team = name;
        l.resource = resource;
        l.guaranteed = uniform(0, 20);
        l.lend_limit = lend_limit;
        l.used = uniform(0, 30);
        l.queued = uniform(0, 5);
        l.parent = parent;
        obs.leaves.push_back(l);
      }
      if (!leaf) inner.push_back(name);
    }
    obs.capacity["gpu"] = uniform(0, 500);
    Accountant whole, changed;
    ASSERT_TRUE(whole.Observe(obs).ok());
    ASSERT_TRUE(changed.Observe(obs).ok());
    for (int batch = 0; batch < 60; ++batch) {
      SCOPED_TRACE(batch);
      obs.now_ms += uniform(0, 3) == 0 ? uniform(0, 2 * kHour) : uniform(0, 5000);
      std::vector<size_t> rows;
      if (!obs.leaves.empty()) {
        for (int k = uniform(1, 3); k > 0; --k) {
          const size_t l = static_cast<size_t>(uniform(0, obs.leaves.size() - 1));
          LeafObservation& leaf = obs.leaves[l];
          leaf.used = uniform(0, 20) == 0 ? -2 : uniform(0, 30);
          leaf.queued = uniform(0, 20) == 0 ? -1 : uniform(0, 5);
          if (uniform(0, 5) == 0) leaf.guaranteed = uniform(0, 20);
          rows.push_back(l);
        }
      }
      if (uniform(0, 9) == 0) obs.capacity["gpu"] = uniform(0, 500);
      ASSERT_TRUE(whole.Observe(obs).ok());
      ASSERT_TRUE(changed.ObserveChanged(obs, rows).ok());
      ASSERT_EQ(changed.problems(), whole.problems());
      if (uniform(0, 4) > 0) continue;
      const AccountingRows a = changed.TakeRows(), b = whole.TakeRows();
      ASSERT_EQ(a.usage.size(), b.usage.size());
      for (size_t i = 0; i < a.usage.size(); ++i) {
        EXPECT_EQ(std::tie(a.usage[i].team, a.usage[i].resource, a.usage[i].hour_start_ms, a.usage[i].used,
                           a.usage[i].borrowed, a.usage[i].lent, a.usage[i].queued),
                  std::tie(b.usage[i].team, b.usage[i].resource, b.usage[i].hour_start_ms, b.usage[i].used,
                           b.usage[i].borrowed, b.usage[i].lent, b.usage[i].queued));
      }
      ASSERT_EQ(a.loans.size(), b.loans.size());
      for (size_t i = 0; i < a.loans.size(); ++i) {
        EXPECT_EQ(std::tie(a.loans[i].borrower, a.loans[i].lender, a.loans[i].resource, a.loans[i].day,
                           a.loans[i].amount),
                  std::tie(b.loans[i].borrower, b.loans[i].lender, b.loans[i].resource, b.loans[i].day,
                           b.loans[i].amount));
      }
      if (::testing::Test::HasFailure()) return;
    }
  }
}

}  // namespace
}  // namespace tidegate::ledger
