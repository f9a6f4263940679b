// EndedJobs: which retained records go, and in which order, when a kind is
// over its bound or out of the retention window.
#include "broker/core/ended_jobs.h"

#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tidegate::core {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

EndedJob Record(Time ended_at, v1::JobState state = v1::JOB_STATE_ENDED) {
  EndedJob e;
  e.state = state;
  e.ended_at = ended_at;
  return e;
}

std::vector<std::string> Ids(const EndedJobs& store) {
  std::vector<std::string> ids;
  for (const auto& [id, e] : store.SortedById()) ids.push_back(*id);
  return ids;
}

TEST(EndedJobsStoreTest, OverTheBoundTheEarliestGoFirstAndTiesByIdNotByArrival) {
  EndedJobs store(/*max_ended=*/3, /*max_rejected=*/1);
  std::vector<std::string> forgotten;
  store.Remember("c", Record(10), &forgotten);
  store.Remember("a", Record(10), &forgotten);
  store.Remember("b", Record(10), &forgotten);
  EXPECT_THAT(forgotten, IsEmpty());
  store.Remember("d", Record(20), &forgotten);
  EXPECT_THAT(forgotten, ElementsAre("a"));  // not "c", which came first.
  store.Remember("e", Record(20), &forgotten);
  store.Remember("f", Record(30), &forgotten);
  EXPECT_THAT(forgotten, ElementsAre("a", "b", "c"));
  EXPECT_THAT(Ids(store), ElementsAre("d", "e", "f"));
  // A record older than every kept one (a restore may remember one) is the
  // oldest at once.
  store.Remember("z", Record(5), &forgotten);
  EXPECT_THAT(forgotten, ElementsAre("a", "b", "c", "z"));
  EXPECT_EQ(store.Find("z"), nullptr);
  ASSERT_NE(store.Find("d"), nullptr);
  EXPECT_EQ(store.Find("d")->ended_at, 20);
}

TEST(EndedJobsStoreTest, AmongRecordsOfTheLatestInstantTheSmallestIdGoesFirst) {
  EndedJobs store(/*max_ended=*/2, /*max_rejected=*/1);
  std::vector<std::string> forgotten;
  store.Remember("c", Record(10), &forgotten);
  store.Remember("a", Record(10), &forgotten);
  store.Remember("b", Record(10), &forgotten);
  store.Remember("a2", Record(10), &forgotten);
  EXPECT_THAT(forgotten, ElementsAre("a", "a2"));
  EXPECT_THAT(Ids(store), ElementsAre("b", "c"));
}

TEST(EndedJobsStoreTest, ManyForgottenRecordsLeaveTheBoundAndOrderIntact) {
  EndedJobs store(/*max_ended=*/6, /*max_rejected=*/1);
  std::vector<std::string> forgotten;
  // Far more records forgotten than kept: their queue entries are compacted
  // away on the way.
  for (int i = 0; i < 5000; ++i) {
    const std::string id = absl::StrCat("s", i);
    store.Remember(id, Record(i / 7), &forgotten);
    if (i % 1000 != 0) EXPECT_TRUE(store.Forget(id));
  }
  EXPECT_THAT(forgotten, IsEmpty());
  EXPECT_THAT(Ids(store), ElementsAre("s0", "s1000", "s2000", "s3000", "s4000"));
  store.Remember("q", Record(800), &forgotten);
  store.Remember("p", Record(800), &forgotten);
  EXPECT_THAT(forgotten, ElementsAre("s0"));
  store.Remember("r", Record(801), &forgotten);
  store.Remember("s", Record(801), &forgotten);
  store.Remember("t", Record(801), &forgotten);
  EXPECT_THAT(forgotten, ElementsAre("s0", "s1000", "s2000", "s3000"));
  store.Remember("a", Record(802), &forgotten);
  store.Remember("b", Record(802), &forgotten);
  EXPECT_THAT(forgotten, ElementsAre("s0", "s1000", "s2000", "s3000", "s4000", "p"));
  EXPECT_THAT(Ids(store), ElementsAre("a", "b", "q", "r", "s", "t"));
  EXPECT_EQ(store.size(), 6u);
}

TEST(EndedJobsStoreTest, EachKindHasItsOwnBound) {
  EndedJobs store(/*max_ended=*/2, /*max_rejected=*/1);
  std::vector<std::string> forgotten;
  store.Remember("e1", Record(1), &forgotten);
  store.Remember("r1", Record(2, v1::JOB_STATE_REJECTED), &forgotten);
  store.Remember("e2", Record(3), &forgotten);
  store.Remember("r2", Record(4, v1::JOB_STATE_REJECTED), &forgotten);
  EXPECT_THAT(forgotten, ElementsAre("r1"));
  EXPECT_THAT(Ids(store), ElementsAre("e1", "e2", "r2"));
}

TEST(EndedJobsStoreTest, AForgottenOrReplacedRecordNoLongerCountsNorGoesTwice) {
  EndedJobs store(/*max_ended=*/2, /*max_rejected=*/2);
  std::vector<std::string> forgotten;
  store.Remember("a", Record(1), &forgotten);
  store.Remember("b", Record(2), &forgotten);
  EXPECT_TRUE(store.Forget("a"));
  EXPECT_FALSE(store.Forget("a"));
  store.Remember("c", Record(3), &forgotten);  // two records: b, c.
  EXPECT_THAT(forgotten, IsEmpty());
  // b replaced by a later record of the same id (and kind): it is as new as
  // its ended_at says, and its old place in the order is gone.
  store.Remember("b", Record(4), &forgotten);
  EXPECT_THAT(forgotten, ElementsAre("b"));
  store.Remember("d", Record(5), &forgotten);
  EXPECT_THAT(forgotten, ElementsAre("b", "c"));
  EXPECT_THAT(Ids(store), ElementsAre("b", "d"));
  // A record that changes kind leaves the other kind's order.
  store.Remember("d", Record(6, v1::JOB_STATE_REJECTED), &forgotten);
  store.Remember("e", Record(7), &forgotten);
  store.Remember("f", Record(8), &forgotten);
  EXPECT_THAT(forgotten, ElementsAre("b", "c", "d", "b"));
  EXPECT_THAT(Ids(store), ElementsAre("d", "e", "f"));
}

TEST(EndedJobsStoreTest, PruneForgetsWhatLeftTheWindowOldestFirstEndedBeforeRejected) {
  EndedJobs store(/*max_ended=*/10, /*max_rejected=*/10);
  std::vector<std::string> forgotten;
  store.Remember("r", Record(3, v1::JOB_STATE_REJECTED), &forgotten);
  store.Remember("b", Record(2), &forgotten);
  store.Remember("a", Record(2), &forgotten);
  store.Remember("c", Record(3), &forgotten);
  store.Remember("x", Record(3), &forgotten);
  EXPECT_TRUE(store.Forget("x"));
  store.Prune(/*now=*/11, /*retention_ms=*/10, &forgotten);
  EXPECT_THAT(forgotten, IsEmpty());
  store.Prune(/*now=*/13, /*retention_ms=*/10, &forgotten);
  EXPECT_THAT(forgotten, ElementsAre("a", "b", "c", "r"));
  EXPECT_EQ(store.size(), 0u);
}

// The store against the ordered sets it replaced, on random work: the same
// ids forgotten, in the same order, and the same records kept.
class Reference {
 public:
  Reference(size_t max_ended, size_t max_rejected) : max_ended_(max_ended), max_rejected_(max_rejected) {}
  bool Forget(const std::string& id, std::vector<std::string>* forgotten) {
    auto it = records_.find(id);
    if (it == records_.end()) return false;
    (it->second.second ? rejected_ : ended_).erase({it->second.first, id});
    records_.erase(it);
    if (forgotten) forgotten->push_back(id);
    return true;
  }
  void Remember(const std::string& id, Time at, bool rejected, std::vector<std::string>* forgotten) {
    Forget(id, forgotten);
    auto& order = rejected ? rejected_ : ended_;
    order.insert({at, id});
    records_[id] = {at, rejected};
    while (order.size() > (rejected ? max_rejected_ : max_ended_)) Forget(order.begin()->second, forgotten);
  }
  void Prune(Time now, Time retention, std::vector<std::string>* forgotten) {
    for (auto* order : {&ended_, &rejected_}) {
      while (!order->empty() && order->begin()->first + retention <= now) Forget(order->begin()->second, forgotten);
    }
  }
  std::vector<std::string> Ids() const {
    std::vector<std::string> ids;
    for (const auto& [id, r] : records_) ids.push_back(id);
    return ids;
  }

 private:
  size_t max_ended_, max_rejected_;
  std::map<std::string, std::pair<Time, bool>> records_;
  std::set<std::pair<Time, std::string>> ended_, rejected_;
};

TEST(EndedJobsStoreTest, ForgetsWhatTheOrderedSetsForgotOnRandomWork) {
  for (uint32_t seed = 1; seed <= 10; ++seed) {
    std::mt19937 rng(seed);
    auto pick = [&rng](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
    EndedJobs store(/*max_ended=*/40, /*max_rejected=*/15);
    Reference ref(40, 15);
    std::vector<std::string> got, want;
    Time now = 0;
    for (int step = 0; step < 3000; ++step) {
      const std::string id = absl::StrCat("j", pick(120));
      const int what = pick(100);
      if (what < 60) {
        // Ties are common; in half the seeds the clock hardly moves, so
        // the oldest is often among records of the latest instant.
        if (pick(seed % 2 == 0 ? 3 : 60) == 0) now += pick(4);
        // Now and then an earlier instant, as a restore's records are.
        const Time at = pick(50) == 0 ? now - pick(20) : now;
        const bool rejected = pick(4) == 0;
        store.Remember(id, Record(at, rejected ? v1::JOB_STATE_REJECTED : v1::JOB_STATE_ENDED), &got);
        ref.Remember(id, at, rejected, &want);
      } else if (what < 90) {
        if (store.Forget(id)) got.push_back(id);
        ref.Forget(id, &want);
      } else {
        store.Prune(now, /*retention=*/30, &got);
        ref.Prune(now, 30, &want);
      }
      ASSERT_EQ(got, want) << "seed " << seed << " step " << step;
    }
    EXPECT_EQ(Ids(store), ref.Ids()) << "seed " << seed;
  }
}

}  // namespace
}  // namespace tidegate::core
