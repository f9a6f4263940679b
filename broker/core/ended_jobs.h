// The ended and rejected jobs a core retains so that queries still find them
// and a retried request cannot start them again (docs/design.md §3
// idempotency). Each kind (ENDED, REJECTED) has its own bound; over it, and
// past the retention window, the oldest go first. Oldest means the earliest
// ended_at and, among equal ones, the smallest id: an order of the records
// alone, so a core restored from a snapshot forgets the same records, in the
// same order, as the core that wrote it.
//
// Cost: records are hashed by id; the forgetting order is a queue. A record
// remembered at the latest ended_at so far (the live case: the core's time
// never goes back) is queued in O(1), or O(log k) among k records of that
// same instant; one remembered earlier is inserted in place, O(n) (a restore
// remembers its records in (ended_at, id) order for that reason). Forgetting
// a record by id leaves its queue entry behind as stale; stale entries are
// skipped at the front and compacted away once they outnumber the records.
//
// Threading: not thread-safe; owned by State.
#ifndef TIDEGATE_BROKER_CORE_ENDED_JOBS_H_
#define TIDEGATE_BROKER_CORE_ENDED_JOBS_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/node_hash_map.h"
#include "broker/core/events.h"
#include "broker/core/types.h"
#include "tidegate/v1/config.pb.h"

namespace tidegate::core {

// A job that ended or was rejected, as retained.
struct EndedJob {
  // The spec's SpecBytes: normalized when accepted; as given when rejected.
  std::string spec_bytes;
  v1::JobState state = v1::JOB_STATE_ENDED;  // ENDED or REJECTED.
  int32_t priority = 0;         // the spec's, kept apart so a view needs no parse.
  std::string team;
  std::string cluster;
  Time created_at = 0;
  Time last_admitted_at = -1;
  Time ended_at = 0;
  std::string reason;
  int64_t replicas = 0;
  NamedQuantities demand;
};

class EndedJobs {
 public:
  EndedJobs(size_t max_ended, size_t max_rejected);

  // nullptr when `id` is not retained. The pointer stays valid until that
  // record is forgotten.
  const EndedJob* Find(std::string_view id) const;
  // Retains `job` (of state ENDED or REJECTED) under `id`, replacing a record
  // of that id, then forgets the oldest of its kind while over the kind's
  // bound. Appends each id forgotten (the replaced one too) to *forgotten.
  void Remember(std::string id, EndedJob job, std::vector<std::string>* forgotten);
  // Forgets the record of `id`; false when there is none.
  bool Forget(std::string_view id);
  // Forgets, oldest first, the ENDED records then the REJECTED ones that
  // ended at or before now - retention_ms; appends their ids to *forgotten.
  void Prune(Time now, Time retention_ms, std::vector<std::string>* forgotten);

  size_t size() const { return records_.size(); }
  // Every record, sorted by id (the snapshot's order).
  std::vector<std::pair<const std::string*, const EndedJob*>> SortedById() const;

 private:
  struct Record {
    EndedJob job;
    uint64_t seq;  // of its queue entry: an entry with another seq is stale.
  };
  struct Entry {
    Time ended_at;
    std::string id;
    uint64_t seq;
  };
  // One kind's records in forgetting order. `settled` is sorted by
  // (ended_at, id) and every entry in it ended before `tail_time`; `tail` is
  // a heap (smallest id on top) of the entries that ended at `tail_time`,
  // sorted into `settled` when a later instant comes.
  struct Queue {
    size_t bound;
    size_t live = 0;  // records of this kind (entries minus stale ones).
    std::deque<Entry> settled;
    std::vector<Entry> tail;
    Time tail_time;
  };

  Queue& QueueOf(v1::JobState state) { return state == v1::JOB_STATE_REJECTED ? rejected_ : ended_; }
  bool Live(const Entry& e) const;
  void Push(Queue& q, Entry e);
  // The oldest live entry, after dropping stale ones ahead of it; nullptr
  // when the queue holds no record.
  const Entry* Oldest(Queue& q);
  // Forgets the record of Oldest(q), which must exist.
  void ForgetOldest(Queue& q, std::vector<std::string>* forgotten);
  // When the front entry (maybe stale) ended: no record of q ended earlier.
  static Time FrontTime(const Queue& q);
  void CompactIfMostlyStale(Queue& q);

  absl::node_hash_map<std::string, Record> records_;
  Queue ended_;
  Queue rejected_;
  uint64_t next_seq_ = 0;
};

}  // namespace tidegate::core

#endif  // TIDEGATE_BROKER_CORE_ENDED_JOBS_H_
