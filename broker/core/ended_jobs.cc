#include "broker/core/ended_jobs.h"

#include <algorithm>
#include <limits>

namespace tidegate::core {
namespace {

// Stale entries are compacted away only past this many, so a small store
// does not compact on every forget.
constexpr size_t kStaleSlack = 1024;

bool Before(Time at, std::string_view id, Time other_at, std::string_view other_id) {
  return at != other_at ? at < other_at : id < other_id;
}

// For the tail heap: std heaps put the largest first, so "larger" is the
// smaller id.
struct LaterId {
  template <typename E>
  bool operator()(const E& a, const E& b) const { return a.id > b.id; }
};

}  // namespace

EndedJobs::EndedJobs(size_t max_ended, size_t max_rejected) {
  ended_.bound = max_ended;
  rejected_.bound = max_rejected;
  ended_.tail_time = rejected_.tail_time = std::numeric_limits<Time>::min();
}

const EndedJob* EndedJobs::Find(std::string_view id) const {
  auto it = records_.find(AbslView(id));
  return it == records_.end() ? nullptr : &it->second.job;
}

bool EndedJobs::Live(const Entry& e) const {
  auto it = records_.find(AbslView(e.id));
  return it != records_.end() && it->second.seq == e.seq;
}

void EndedJobs::Remember(std::string id, EndedJob job, std::vector<std::string>* forgotten) {
  if (Forget(id)) forgotten->push_back(id);
  Queue& q = QueueOf(job.state);
  const uint64_t seq = ++next_seq_;
  Push(q, Entry{job.ended_at, id, seq});
  records_.emplace(std::move(id), Record{std::move(job), seq});
  ++q.live;
  while (q.live > q.bound) ForgetOldest(q, forgotten);
}

bool EndedJobs::Forget(std::string_view id) {
  auto it = records_.find(AbslView(id));
  if (it == records_.end()) return false;
  Queue& q = QueueOf(it->second.job.state);
  records_.erase(it);
  --q.live;
  CompactIfMostlyStale(q);
  return true;
}

void EndedJobs::Prune(Time now, Time retention_ms, std::vector<std::string>* forgotten) {
  for (Queue* q : {&ended_, &rejected_}) {
    // The front entry, stale or not, ended no later than any record, so
    // when it is in the window every record is (and nothing is looked up).
    while (q->live > 0 && SatAdd(FrontTime(*q), retention_ms) <= now) {
      if (SatAdd(Oldest(*q)->ended_at, retention_ms) > now) break;
      ForgetOldest(*q, forgotten);
    }
  }
}

std::vector<std::pair<const std::string*, const EndedJob*>> EndedJobs::SortedById() const {
  std::vector<std::pair<const std::string*, const EndedJob*>> out;
  out.reserve(records_.size());
  for (const auto& [id, record] : records_) out.emplace_back(&id, &record.job);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return *a.first < *b.first; });
  return out;
}

void EndedJobs::Push(Queue& q, Entry e) {
  if (e.ended_at < q.tail_time) {  // not the live case: in place.
    auto at = std::upper_bound(q.settled.begin(), q.settled.end(), e, [](const Entry& a, const Entry& b) {
      return Before(a.ended_at, a.id, b.ended_at, b.id);
    });
    q.settled.insert(at, std::move(e));
    return;
  }
  if (e.ended_at > q.tail_time) {  // a later instant: the tail settles.
    std::sort(q.tail.begin(), q.tail.end(), [](const Entry& a, const Entry& b) { return a.id < b.id; });
    for (Entry& t : q.tail) q.settled.push_back(std::move(t));
    q.tail.clear();
    q.tail_time = e.ended_at;
  }
  q.tail.push_back(std::move(e));
  std::push_heap(q.tail.begin(), q.tail.end(), LaterId{});
}

const EndedJobs::Entry* EndedJobs::Oldest(Queue& q) {
  while (!q.settled.empty()) {
    if (Live(q.settled.front())) return &q.settled.front();
    q.settled.pop_front();
  }
  while (!q.tail.empty()) {
    if (Live(q.tail.front())) return &q.tail.front();
    std::pop_heap(q.tail.begin(), q.tail.end(), LaterId{});
    q.tail.pop_back();
  }
  return nullptr;
}

void EndedJobs::ForgetOldest(Queue& q, std::vector<std::string>* forgotten) {
  for (;;) {  // pops entries until a live one is popped and its record erased.
    Entry e;
    if (!q.settled.empty()) {
      e = std::move(q.settled.front());
      q.settled.pop_front();
    } else {
      std::pop_heap(q.tail.begin(), q.tail.end(), LaterId{});
      e = std::move(q.tail.back());
      q.tail.pop_back();
    }
    auto it = records_.find(AbslView(e.id));
    if (it == records_.end() || it->second.seq != e.seq) continue;  // stale.
    records_.erase(it);
    --q.live;
    forgotten->push_back(std::move(e.id));
    return;
  }
}

Time EndedJobs::FrontTime(const Queue& q) { return q.settled.empty() ? q.tail_time : q.settled.front().ended_at; }

void EndedJobs::CompactIfMostlyStale(Queue& q) {
  const size_t entries = q.settled.size() + q.tail.size();
  if (entries - q.live <= q.live + kStaleSlack) return;
  auto stale = [this](const Entry& e) { return !Live(e); };
  q.settled.erase(std::remove_if(q.settled.begin(), q.settled.end(), stale), q.settled.end());
  q.tail.erase(std::remove_if(q.tail.begin(), q.tail.end(), stale), q.tail.end());
  std::make_heap(q.tail.begin(), q.tail.end(), LaterId{});
}

}  // namespace tidegate::core
