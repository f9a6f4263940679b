// Admits the broker refused, kept in memory so that `tidegate job ID` and
// `tidegate jobs --state rejected` can say why for a while (docs/jobs.md).
//
// A rejection changes nothing, so it is never journalled: a burst of bad
// requests must not grow the ledger. This record is therefore not durable (a
// restart forgets it) and bounded three ways, so that no client can use it to
// grow the broker's memory or to push other teams' rejections out:
//   - by age: a record lives for the retention window of ended jobs;
//   - per team: at most `per_team` records in each team's bucket (rejects
//     that name no known team share one bucket, so made-up team names cannot
//     multiply buckets); a full bucket drops its own oldest record;
//   - in total: at most `total` records; past it the oldest record of the
//     largest bucket goes, i.e. the flooder's own;
// and each record is small: the spec's labels are dropped, the reason is cut
// to 1 KiB. Only ids a job could have are kept (an invalid id cannot be
// asked about).
//
// Thread-safe.
#ifndef TIDEGATE_BROKER_SERVICE_RECENT_REJECTIONS_H_
#define TIDEGATE_BROKER_SERVICE_RECENT_REJECTIONS_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "tidegate/v1/service.pb.h"

namespace tidegate::service {

class RecentRejections {
 public:
  static constexpr size_t kDefaultPerTeam = 1000;
  static constexpr size_t kDefaultTotal = 10000;
  static constexpr size_t kMaxReasonBytes = 1024;

  explicit RecentRejections(size_t per_team = kDefaultPerTeam, size_t total = kDefaultTotal)
      : per_team_(per_team), total_(total) {}

  // Records that `spec` was refused at `now_ms` for `reason`. `known_team`:
  // whether spec.team() is a team of the config (else the shared bucket).
  // `retention_ms` is how long it stays (0: it is not kept). Replaces an
  // earlier rejection of the same id.
  void Record(const v1::JobSpec& spec, bool known_team, const std::string& reason, int64_t now_ms,
              int64_t retention_ms);
  // A later submission of the id was accepted: its rejection is history.
  void Forget(const std::string& id);

  // The rejection of `id` as a job in state REJECTED, if kept and not expired.
  std::optional<v1::JobInfo> Find(const std::string& id, int64_t now_ms) const;
  // Kept rejections of `team` (empty: all) with id > `after`, by id, at most
  // `limit`.
  std::vector<v1::JobInfo> After(const std::string& team, const std::string& after, size_t limit,
                                 int64_t now_ms) const;
  size_t size() const;

 private:
  struct Entry {
    std::shared_ptr<const v1::JobInfo> job;
    int64_t expires_ms;
    std::string bucket;
  };
  void EraseLocked(const std::string& id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DropExpiredLocked(int64_t now_ms) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const size_t per_team_;
  const size_t total_;
  mutable absl::Mutex mu_;
  std::map<std::string, Entry> by_id_ ABSL_GUARDED_BY(mu_);  // ordered: pages by id
  absl::flat_hash_map<std::string, std::deque<std::string>> buckets_ ABSL_GUARDED_BY(mu_);  // bucket -> ids, oldest first
  std::set<std::pair<int64_t, std::string>> by_expiry_ ABSL_GUARDED_BY(mu_);                // (expires, id)
};

}  // namespace tidegate::service

#endif  // TIDEGATE_BROKER_SERVICE_RECENT_REJECTIONS_H_
