// What readers see: an immutable picture of the broker published after each
// group commit (docs/design.md §1 "reads from snapshots"). Readers never touch the
// core; they hold a shared_ptr to the model of their choice.
//
// Jobs live in copy-on-write shards, grouped in copy-on-write pages, and
// teams in copy-on-write chunks, so a batch that touched a few jobs copies a
// few shards and pages (a few hundred pointers), not 100,000 jobs nor one
// pointer per shard or per team: the writer publishes a model per batch.
// The team figures readers see (read_model_teams.h) need the whole tree; they
// are computed once per model, on the first read that asks for them.
//
// Threading: immutable once published; safe from any thread.
#ifndef TIDEGATE_BROKER_SERVICE_READ_MODEL_H_
#define TIDEGATE_BROKER_SERVICE_READ_MODEL_H_

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "broker/core/broker.h"
#include "broker/core/reasons_now.h"
#include "tidegate/v1/service.pb.h"

namespace tidegate::service {

class ReadModel {
 public:
  static constexpr int kShards = 4096;  // ~25 jobs a shard at 100,000 jobs.
  static constexpr int kShardsPerPage = 64;
  static constexpr int kPages = kShards / kShardsPerPage;
  static constexpr int kTeamsPerChunk = 64;
  using Shard = absl::flat_hash_map<std::string, std::shared_ptr<const v1::JobInfo>>;

  // The first model: every job and team of `broker`.
  static std::shared_ptr<const ReadModel> Build(const core::Broker& broker, int64_t seq);
  // The next model: `prev` with the given jobs and every team on their paths
  // re-read from `broker` (all teams when `all_teams`).
  static std::shared_ptr<const ReadModel> Update(const ReadModel& prev, const core::Broker& broker, int64_t seq,
                                                 const std::vector<std::string>& touched_jobs, bool all_teams);

  int64_t seq() const { return seq_; }
  core::Time now_ms() const { return now_ms_; }
  const v1::Config& config() const { return *config_; }

  // A live job (queued, admitted, draining), or nullptr.
  const v1::JobInfo* FindJob(const std::string& id) const;
  // A live job or a retained ended or rejected one, or nullptr.
  const v1::JobInfo* FindJobAny(const std::string& id) const;
  // Jobs of `team` (empty = all) in `state` (UNSPECIFIED = every live job;
  // ENDED or REJECTED = the retained ones), by id.
  std::vector<std::shared_ptr<const v1::JobInfo>> Jobs(const std::string& team, v1::JobState state) const;
  // A page of Jobs(team, state), of `cluster` only unless it is empty: the
  // first `limit` whose id is greater than `after`, by id. One pass over the
  // jobs, sorting only the page.
  std::vector<std::shared_ptr<const v1::JobInfo>> JobsAfter(const std::string& team, v1::JobState state,
                                                            const std::string& after, size_t limit,
                                                            const std::string& cluster = "") const;
  // The job's reason with this model's numbers: a queued job of a team
  // that no cycle tries (none of its jobs can fit) keeps the reason it was
  // last read with, so its reason is stated here (core::WaitPicture).
  std::string ReasonNow(const v1::JobInfo& job) const;
  // 1-based position of a queued job in its team's queue (priority, then
  // created_at, then id); 0 when it is not queued.
  int64_t QueuePosition(const v1::JobInfo& job) const;

  const v1::TeamInfo* FindTeam(const std::string& name) const;
  // All teams in config order, with the figures of read_model_teams.h (used,
  // private, borrowed, lent, subtree totals) filled in.
  std::vector<v1::TeamInfo> Teams() const;
  // One team as Teams() has it; nullopt when there is no such team.
  std::optional<v1::TeamInfo> TeamWithFigures(const std::string& name) const;

 private:
  using Page = std::array<std::shared_ptr<const Shard>, kShardsPerPage>;
  using TeamChunk = std::vector<std::shared_ptr<const v1::TeamInfo>>;
  // The team figures of this model (read_model_teams.h), computed on first
  // use (any reader thread).
  struct FilledTeams;

  static size_t ShardOf(const std::string& id);
  const Shard& ShardAt(size_t s) const { return *(*pages_[s / kShardsPerPage])[s % kShardsPerPage]; }
  const v1::TeamInfo& TeamAt(size_t i) const { return *(*team_chunks_[i / kTeamsPerChunk])[i % kTeamsPerChunk]; }
  const FilledTeams& Filled() const;
  // Re-reads the config and every team from the broker.
  void RebuildTeams(const core::Broker& broker);
  int64_t seq_ = 0;
  core::Time now_ms_ = 0;
  std::shared_ptr<const v1::Config> config_;
  std::array<std::shared_ptr<const Page>, kPages> pages_;
  std::vector<std::shared_ptr<const TeamChunk>> team_chunks_;  // config order, kTeamsPerChunk a chunk
  size_t team_count_ = 0;
  std::shared_ptr<const absl::flat_hash_map<std::string, int>> team_index_;
  std::shared_ptr<const core::WaitPicture> waiting_;  // for ReasonNow.
  std::shared_ptr<FilledTeams> filled_;  // never shared between models
};

// Conversions from the core's views to the API's messages.
v1::JobInfo ToJobInfo(const core::JobView& view, const v1::JobSpec* spec);
v1::TeamInfo ToTeamInfo(const core::TeamView& view);
v1::DecisionRecord ToRecord(const core::Event& event);

}  // namespace tidegate::service

#endif  // TIDEGATE_BROKER_SERVICE_READ_MODEL_H_
