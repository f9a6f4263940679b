// AttributeLoans: nearest lender in the tree first, then the node's pool, then
// the fleet. Expected amounts written inline.
#include "ledger/accounting_loans.h"

#include <map>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tidegate::ledger {
namespace {

using ::testing::DoubleNear;
using ::testing::IsEmpty;

// deploy/examples/tidegate.yaml, one resource, capacity 64:
//   org 48 (ml's 40 + a pool of 8) ─ ml 40 ─ research 16
//                                          └ training 24, lends at most 16
//   serving 16
enum { kOrg, kMl, kResearch, kTraining, kServing };

std::vector<LoanNode> ExampleTree(int64_t research, int64_t training, int64_t serving) {
  std::vector<LoanNode> nodes(5);
  nodes[kOrg] = {"org", -1, false, 48, std::nullopt, 0};
  nodes[kMl] = {"ml", kOrg, false, 40, std::nullopt, 0};
  nodes[kResearch] = {"research", kMl, true, 16, std::nullopt, research};
  nodes[kTraining] = {"training", kMl, true, 24, 16, training};
  nodes[kServing] = {"serving", -1, true, 16, std::nullopt, serving};
  return nodes;
}

// (borrower, lender) -> amount; lender "(fleet)" for kFleet.
std::map<std::pair<std::string, std::string>, double> LoanMap(const std::vector<LoanNode>& nodes,
                                                             const LoanAttribution& a) {
  std::map<std::pair<std::string, std::string>, double> out;
  for (const LoanShare& l : a.loans) {
    out[{nodes[l.borrower].team, l.lender == kFleet ? kFleetLender : nodes[l.lender].team}] +=
        l.amount;
  }
  return out;
}

// The guarantees the header promises, checked on any attribution.
void ExpectConservation(const std::vector<LoanNode>& nodes, const LoanAttribution& a) {
  constexpr double kEps = 1e-9;
  std::vector<double> borrowed_by(nodes.size()), lent_by(nodes.size());
  double fleet = 0;
  for (const LoanShare& l : a.loans) {
    borrowed_by[l.borrower] += l.amount;
    if (l.lender == kFleet) {
      fleet += l.amount;
    } else if (nodes[l.lender].leaf) {
      lent_by[l.lender] += l.amount;
    }
  }
  EXPECT_NEAR(fleet, a.fleet_lent, kEps);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const LoanNode& n = nodes[i];
    const NodeFigures& f = a.nodes[i];
    SCOPED_TRACE(n.team);
    ASSERT_TRUE(f.known);
    // Never lends more than its idle lendable guarantee at this moment.
    const int64_t idle = std::max<int64_t>(0, n.guaranteed - f.policy_used);
    EXPECT_LE(f.lent, static_cast<double>(std::min(idle, n.lend_limit.value_or(idle))) + kEps);
    if (f.borrowed > 0) {
      EXPECT_EQ(f.lent, 0);
    }
    if (n.leaf) {
      EXPECT_NEAR(borrowed_by[i], static_cast<double>(f.borrowed), kEps);
      EXPECT_NEAR(lent_by[i], f.lent, kEps);
      continue;
    }
    // At every inner node: what its children borrow and what it lends out is
    // covered by what its children lend, its pool and what it borrows.
    double children_borrowed = 0, children_lent = 0;
    for (size_t c = 0; c < nodes.size(); ++c) {
      if (nodes[c].parent != static_cast<int>(i)) continue;
      children_borrowed += static_cast<double>(a.nodes[c].borrowed);
      children_lent += a.nodes[c].lent;
    }
    EXPECT_NEAR(children_borrowed + f.lent,
                children_lent + f.pool_lent + static_cast<double>(f.borrowed), kEps);
  }
}

TEST(AttributeLoansTest, ASiblingLendsFirstThenTheParentsPoolAndNeverAFarTeam) {
  // The README walkthrough: research runs 40 (16 own + 24 borrowed). Its
  // sibling training lends 16 (its lend limit), org's own pool the other 8;
  // serving, in another subtree, lends nothing: it can take its 16 back
  // without any reclaim.
  const auto nodes = ExampleTree(/*research=*/40, /*training=*/0, /*serving=*/0);
  const LoanAttribution a = AttributeLoans(nodes, 64, "gpu");
  EXPECT_THAT(a.problems, IsEmpty());
  EXPECT_THAT(LoanMap(nodes, a),
              (std::map<std::pair<std::string, std::string>, double>{
                  {{"research", "training"}, 16}, {{"research", "org"}, 8}}));
  EXPECT_EQ(a.nodes[kResearch].borrowed, 24);
  EXPECT_DOUBLE_EQ(a.nodes[kTraining].lent, 16);
  EXPECT_DOUBLE_EQ(a.nodes[kServing].lent, 0);
  EXPECT_DOUBLE_EQ(a.nodes[kOrg].pool_lent, 8);
  // ml takes 8 from outside itself (org's pool): 40 held by research plus
  // training's idle private 8 is u(ml) = 48 > 40.
  EXPECT_EQ(a.nodes[kMl].borrowed, 8);
  EXPECT_EQ(a.nodes[kMl].jobs_used, 40);
  EXPECT_EQ(a.nodes[kMl].private_idle, 8);
  EXPECT_DOUBLE_EQ(a.nodes[kMl].lent, 0);
  EXPECT_EQ(a.nodes[kOrg].borrowed, 0);
  EXPECT_DOUBLE_EQ(a.fleet_lent, 0);
  ExpectConservation(nodes, a);
}

TEST(AttributeLoansTest, WhatTheSubtreeCannotCoverComesFromAcrossTheRoot) {
  // research runs 48 (32 borrowed): training 16, org's pool 8, then serving 8.
  const auto nodes = ExampleTree(48, 0, 0);
  const LoanAttribution a = AttributeLoans(nodes, 64, "gpu");
  EXPECT_THAT(LoanMap(nodes, a), (std::map<std::pair<std::string, std::string>, double>{
                                     {{"research", "training"}, 16},
                                     {{"research", "org"}, 8},
                                     {{"research", "serving"}, 8}}));
  EXPECT_EQ(a.nodes[kMl].borrowed, 16);
  EXPECT_EQ(a.nodes[kOrg].borrowed, 8);
  EXPECT_DOUBLE_EQ(a.nodes[kServing].lent, 8);
  ExpectConservation(nodes, a);
}

TEST(AttributeLoansTest, AnEmptyTreeShowsPrivatePartsAsIdleNotAsUse) {
  const auto nodes = ExampleTree(0, 0, 0);
  const LoanAttribution a = AttributeLoans(nodes, 64, "gpu");
  EXPECT_THAT(a.loans, IsEmpty());
  for (int team : {kOrg, kMl, kTraining}) {
    EXPECT_EQ(a.nodes[team].jobs_used, 0) << nodes[team].team;
    EXPECT_EQ(a.nodes[team].private_idle, 8) << nodes[team].team;
    EXPECT_EQ(a.nodes[team].borrowed, 0) << nodes[team].team;
  }
  EXPECT_EQ(a.nodes[kOrg].policy_used, 8);  // docs/policy.md's u(org) counts training's private 8
}

TEST(AttributeLoansTest, LendersAtTheSameDistanceShareInProportion) {
  // Flat: b borrows 4; a has 6 idle, c has 2: a lends 3, c lends 1.
  std::vector<LoanNode> nodes = {{"a", -1, true, 6, std::nullopt, 0},
                                 {"b", -1, true, 0, std::nullopt, 4},
                                 {"c", -1, true, 4, std::nullopt, 2}};
  const LoanAttribution a = AttributeLoans(nodes, 10, "gpu");
  EXPECT_THAT(LoanMap(nodes, a), (std::map<std::pair<std::string, std::string>, double>{
                                     {{"b", "a"}, 3}, {{"b", "c"}, 1}}));
  ExpectConservation(nodes, a);
}

TEST(AttributeLoansTest, AnInnerLendLimitCapsWhatTheSubtreeLendsOut) {
  // p (g 10, lends at most 2) has two idle leaves of 5; x borrows 6 outside
  // p: 2 from p's subtree, the rest from the fleet's unguaranteed capacity.
  std::vector<LoanNode> nodes = {{"p", -1, false, 10, 2, 0},
                                 {"p1", 0, true, 5, std::nullopt, 0},
                                 {"p2", 0, true, 5, std::nullopt, 0},
                                 {"x", -1, true, 0, std::nullopt, 6}};
  const LoanAttribution a = AttributeLoans(nodes, 20, "gpu");
  EXPECT_THAT(LoanMap(nodes, a), (std::map<std::pair<std::string, std::string>, double>{
                                     {{"x", "p1"}, 1}, {{"x", "p2"}, 1}, {{"x", "(fleet)"}, 4}}));
  EXPECT_DOUBLE_EQ(a.nodes[0].lent, 2);
  EXPECT_DOUBLE_EQ(a.fleet_lent, 4);
  ExpectConservation(nodes, a);
}

TEST(AttributeLoansTest, AnOverflowingSubtreeIsLeftOutAndTheRestIsAttributed) {
  // Two leaves under q hold 2^62 each: q's sum overflows. b still borrows
  // from a, in another subtree.
  const int64_t huge = int64_t{1} << 62;
  std::vector<LoanNode> nodes = {{"q", -1, false, 0, std::nullopt, 0},
                                 {"q1", 0, true, 0, std::nullopt, huge},
                                 {"q2", 0, true, 0, std::nullopt, huge},
                                 {"a", -1, true, 8, std::nullopt, 0},
                                 {"b", -1, true, 0, std::nullopt, 4}};
  const LoanAttribution a = AttributeLoans(nodes, 64, "gpu");
  ASSERT_EQ(a.problems.size(), 1u);
  EXPECT_THAT(a.problems[0], ::testing::HasSubstr("team 'q' gpu"));
  EXPECT_FALSE(a.nodes[0].known);
  EXPECT_THAT(LoanMap(nodes, a), (std::map<std::pair<std::string, std::string>, double>{
                                     {{"b", "a"}, 4}}));
  EXPECT_DOUBLE_EQ(a.nodes[3].lent, 4);
}

TEST(AttributeLoansTest, ALeafWithAnImpossibleFigureNeitherLendsNorBorrows) {
  std::vector<LoanNode> nodes = {{"bad", -1, true, 8, std::nullopt, -5},
                                 {"b", -1, true, 0, std::nullopt, 4}};
  const LoanAttribution a = AttributeLoans(nodes, 8, "gpu");
  EXPECT_EQ(a.problems.size(), 1u);
  // bad counts as using its 8, so the fleet has nothing idle: b's 4 is over quota.
  EXPECT_THAT(LoanMap(nodes, a), (std::map<std::pair<std::string, std::string>, double>{
                                     {{"b", "(fleet)"}, 4}}));
}

}  // namespace
}  // namespace tidegate::ledger
