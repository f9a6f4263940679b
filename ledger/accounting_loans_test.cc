// AttributeLoans: nearest lender in the tree first, then the node's pool, then
// the fleet. Expected amounts written inline.
#include "ledger/accounting_loans.h"

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <string>

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

// Every figure, loan and problem of `tree` equals AttributeLoans over
// `nodes` (the tree's nodes as set), to the bit.
void ExpectSameAsWholeTree(const LoanTree& tree, const std::vector<LoanNode>& nodes,
                           std::optional<int64_t> capacity) {
  const LoanAttribution whole = AttributeLoans(nodes, capacity, "gpu");
  for (size_t i = 0; i < nodes.size(); ++i) {
    SCOPED_TRACE(nodes[i].team);
    const NodeFigures& a = tree.figures(static_cast<int>(i));
    const NodeFigures& b = whole.nodes[i];
    EXPECT_EQ(a.known, b.known);
    EXPECT_EQ(a.jobs_used, b.jobs_used);
    EXPECT_EQ(a.policy_used, b.policy_used);
    EXPECT_EQ(a.private_idle, b.private_idle);
    EXPECT_EQ(a.borrowed, b.borrowed);
    EXPECT_EQ(a.lent, b.lent);
    EXPECT_EQ(a.pool_lent, b.pool_lent);
  }
  EXPECT_EQ(tree.fleet_lent(), whole.fleet_lent);
  const std::vector<LoanShare> loans = tree.Loans();
  ASSERT_EQ(loans.size(), whole.loans.size());
  for (size_t i = 0; i < loans.size(); ++i) {
    EXPECT_EQ(loans[i].borrower, whole.loans[i].borrower);
    EXPECT_EQ(loans[i].lender, whole.loans[i].lender);
    EXPECT_EQ(loans[i].meeting, whole.loans[i].meeting);
    EXPECT_EQ(loans[i].amount, whole.loans[i].amount);
  }
  EXPECT_EQ(tree.Problems(), whole.problems);
}

TEST(LoanTreeTest, AChangeDeepInTheTreeReachesEveryAncestorAndTheRoot) {
  // research (two levels below org) starts borrowing: ml's and org's sums,
  // org's pool and serving across the root all change.
  std::vector<LoanNode> nodes = ExampleTree(0, 0, 0);
  LoanTree tree(nodes, 64, "gpu");
  tree.Settle();
  nodes[kResearch].used = 48;
  tree.Set(kResearch, nodes[kResearch].guaranteed, nodes[kResearch].lend_limit, 48, false);
  const std::vector<int> changed = tree.Settle();
  for (int v : {kResearch, kMl, kOrg, kServing}) {
    EXPECT_NE(std::find(changed.begin(), changed.end(), v), changed.end()) << nodes[v].team;
  }
  EXPECT_EQ(tree.figures(kOrg).jobs_used, 48);
  EXPECT_EQ(tree.figures(kOrg).borrowed, 8);
  EXPECT_DOUBLE_EQ(tree.figures(kServing).lent, 8);
  ExpectSameAsWholeTree(tree, nodes, 64);
}

TEST(LoanTreeTest, SettlingChangedNodesAnswersAsAttributingTheWholeTree) {
  // Random trees (up to four levels, pools, lend limits, the fleet) and
  // random batches of changes, now and then an impossible figure.
  std::mt19937 rng(20261126);
  auto uniform = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int round = 0; round < 60; ++round) {
    SCOPED_TRACE(round);
    const int n = uniform(2, 30);
    std::vector<LoanNode> nodes(n);
    std::vector<int> inner;
    for (int i = 0; i < n; ++i) {
      LoanNode& node = nodes[i];
      node.team = "t" + std::to_string(i);
      node.leaf = i == n - 1 || uniform(0, 3) > 0;
      node.parent = inner.empty() || uniform(0, 4) == 0 ? -1 : inner[uniform(0, inner.size() - 1)];
      node.guaranteed = uniform(0, node.leaf ? 20 : 60);
      if (uniform(0, 2) == 0) node.lend_limit = uniform(0, 15);
      if (node.leaf) node.used = uniform(0, 30);
      if (!node.leaf) inner.push_back(i);
    }
    std::optional<int64_t> capacity;
    if (uniform(0, 3) > 0) capacity = uniform(0, 400);
    LoanTree tree(nodes, capacity, "gpu");
    tree.Settle();
    ExpectSameAsWholeTree(tree, nodes, capacity);
    for (int batch = 0; batch < 40; ++batch) {
      SCOPED_TRACE(batch);
      for (int k = uniform(1, 3); k > 0; --k) {
        const int v = uniform(0, n - 1);
        LoanNode& node = nodes[v];
        if (node.leaf) {
          node.used = uniform(0, 10) == 0 ? -1 : uniform(0, 30);
          if (uniform(0, 4) == 0) node.guaranteed = uniform(0, 20);
        } else if (uniform(0, 2) == 0) {
          node.guaranteed = uniform(0, 60);
        }
        if (uniform(0, 5) == 0) node.lend_limit = uniform(0, 1) ? std::optional<int64_t>(uniform(0, 15)) : std::nullopt;
        tree.Set(v, node.guaranteed, node.lend_limit, node.used, node.unknown);
      }
      if (uniform(0, 9) == 0) {
        capacity = uniform(0, 3) ? std::optional<int64_t>(uniform(0, 400)) : std::nullopt;
        tree.SetCapacity(capacity);
      }
      tree.Settle();
      ExpectSameAsWholeTree(tree, nodes, capacity);
      if (::testing::Test::HasFailure()) return;
    }
  }
}

}  // namespace
}  // namespace tidegate::ledger
