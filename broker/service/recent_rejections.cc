#include "broker/service/recent_rejections.h"

#include <algorithm>

#include "broker/core/names.h"

namespace tidegate::service {

namespace {
// Rejects that name no team of the config share this bucket.
constexpr char kUnknownTeamBucket[] = "\x01unknown";
}  // namespace

void RecentRejections::Record(const v1::JobSpec& spec, bool known_team, const std::string& reason, int64_t now_ms,
                              int64_t retention_ms) {
  if (retention_ms <= 0 || per_team_ == 0 || total_ == 0) return;
  if (spec.job().empty() || !core::ValidateName("job", spec.job()).ok()) return;  // nobody can ask for it
  auto job = std::make_shared<v1::JobInfo>();
  job->set_job(spec.job());
  // A made-up team name is shown as given, cut to a name's length.
  job->set_team(spec.team().substr(0, 253));
  job->set_cluster(spec.cluster().substr(0, 253));
  job->set_state(v1::JOB_STATE_REJECTED);
  job->set_priority(spec.priority());
  job->set_created_at_ms(now_ms);
  job->set_ended_at_ms(now_ms);
  job->set_reason(reason.size() > kMaxReasonBytes ? reason.substr(0, kMaxReasonBytes) + "..." : reason);
  *job->mutable_spec() = spec;
  job->mutable_spec()->clear_labels();
  job->mutable_spec()->set_team(job->team());
  job->mutable_spec()->set_cluster(job->cluster());
  // As the core would have counted it (replicas default to 1), where that
  // can be counted at all: a rejected demand may be the one that overflows.
  const int64_t replicas = spec.has_elastic() ? spec.elastic().min() : std::max<int64_t>(1, spec.replicas());
  job->set_replicas(replicas);
  for (const auto& [name, q] : spec.per_replica()) {
    int64_t total = 0;
    if (name.size() > 253 || __builtin_mul_overflow(q, replicas, &total)) continue;
    (*job->mutable_demand())[name] = total;
  }

  const std::string bucket = known_team ? spec.team() : kUnknownTeamBucket;
  absl::MutexLock lock(&mu_);
  DropExpiredLocked(now_ms);
  EraseLocked(spec.job());
  std::deque<std::string>& ids = buckets_[bucket];
  while (ids.size() >= per_team_) EraseLocked(ids.front());
  while (by_id_.size() >= total_) {
    auto largest = std::max_element(buckets_.begin(), buckets_.end(),
                                     [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
    if (largest == buckets_.end() || largest->second.empty()) break;
    EraseLocked(largest->second.front());
  }
  const int64_t expires = now_ms + retention_ms;
  by_id_[spec.job()] = Entry{std::move(job), expires, bucket};
  buckets_[bucket].push_back(spec.job());
  by_expiry_.insert({expires, spec.job()});
}

void RecentRejections::Forget(const std::string& id) {
  absl::MutexLock lock(&mu_);
  EraseLocked(id);
}

void RecentRejections::EraseLocked(const std::string& id) {
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return;
  by_expiry_.erase({it->second.expires_ms, id});
  auto bucket = buckets_.find(it->second.bucket);
  if (bucket != buckets_.end()) {
    auto& ids = bucket->second;
    ids.erase(std::find(ids.begin(), ids.end(), id));
    if (ids.empty()) buckets_.erase(bucket);
  }
  by_id_.erase(it);
}

void RecentRejections::DropExpiredLocked(int64_t now_ms) {
  while (!by_expiry_.empty() && by_expiry_.begin()->first <= now_ms) {
    const std::string id = by_expiry_.begin()->second;
    EraseLocked(id);
  }
}

std::optional<v1::JobInfo> RecentRejections::Find(const std::string& id, int64_t now_ms) const {
  absl::MutexLock lock(&mu_);
  auto it = by_id_.find(id);
  if (it == by_id_.end() || it->second.expires_ms <= now_ms) return std::nullopt;
  return *it->second.job;
}

std::vector<v1::JobInfo> RecentRejections::After(const std::string& team, const std::string& after, size_t limit,
                                                 int64_t now_ms) const {
  std::vector<v1::JobInfo> out;
  absl::MutexLock lock(&mu_);
  for (auto it = by_id_.upper_bound(after); it != by_id_.end() && out.size() < limit; ++it) {
    if (it->second.expires_ms <= now_ms) continue;
    if (!team.empty() && it->second.job->team() != team) continue;
    out.push_back(*it->second.job);
  }
  return out;
}

size_t RecentRejections::size() const {
  absl::MutexLock lock(&mu_);
  return by_id_.size();
}

}  // namespace tidegate::service
