// What readers see: an immutable picture of the broker published after each
// group commit (docs/design.md §1 "reads from snapshots"). Readers never touch the
// core; they hold a shared_ptr to the model of their choice.
//
// Jobs live in copy-on-write shards, grouped in copy-on-write pages, and
// teams in copy-on-write chunks, so a batch that touched a few jobs copies a
// few shards and pages (a few hundred pointers), not 100,000 jobs nor one
// pointer per shard or per team: the writer publishes a model per batch.
// The team figures readers see (read_model_teams.h) need the whole tree: all
// teams' are computed once per model, on the first read of all of them; one
// team's (GetTeam) come from a cache kept along the lineage that re-reads
// only the teams that changed since the model it last answered for.
//
// Jobs are kept as compact JobRecords (numbers, the spec serialized once,
// team, cluster and resource names shared), not as v1::JobInfo messages:
// a JobInfo with its own spec message, two protobuf maps and a heap string
// per field took about three times the memory. Readers get a JobInfo built
// on demand from the record, identical to ToJobInfo of the core's view.
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
#include "absl/container/inlined_vector.h"
#include "absl/container/node_hash_set.h"
#include "broker/core/broker.h"
#include "broker/core/reasons_now.h"
#include "tidegate/v1/service.pb.h"

namespace tidegate::service {

class TeamFiguresCache;

// Team, cluster and resource names shared by the job records of every model
// of one lineage (Build and the Updates after it). Only the writer interns;
// readers only follow pointers to names already in it, which never move.
// Holds the names of live and ended jobs, which a config named; a rejected
// job's names (anything a client sent) are never interned.
class NamePool {
 public:
  const std::string* Intern(const std::string& name) { return &*names_.insert(name).first; }

 private:
  absl::node_hash_set<std::string> names_;
};

// One job as a ReadModel keeps it. Immutable once made.
class JobRecord {
 public:
  // `view` as ToJobInfo(view, nullptr) would answer it; names interned in `names`.
  JobRecord(const core::JobView& view, NamePool* names);
  JobRecord(const JobRecord&) = delete;
  JobRecord& operator=(const JobRecord&) = delete;

  // The JobInfo readers see: ToJobInfo of the view it was made from.
  v1::JobInfo ToInfo(const std::string& id) const;
  const std::string& team() const { return *team_; }
  const std::string& cluster() const { return *cluster_; }
  v1::JobState state() const { return state_; }
  int32_t priority() const { return whole_ ? whole_->priority() : priority_; }
  int64_t created_at_ms() const { return whole_ ? whole_->created_at_ms() : created_at_ms_; }
  int64_t admitted_at_ms() const { return whole_ ? whole_->admitted_at_ms() : admitted_at_ms_; }
  // The spec as ToInfo(id).spec(), serialized: the bytes kept, without
  // parsing them (the job rows of the ledger store it so).
  std::string SerializedSpec() const { return whole_ ? whole_->spec().SerializeAsString() : spec_; }

 private:
  const std::string* team_;
  const std::string* cluster_;
  std::string reason_;
  std::string spec_;  // serialized v1::JobSpec
  absl::InlinedVector<std::pair<const std::string*, int64_t>, 1> demand_;
  std::vector<std::pair<const std::string*, int64_t>> borrowed_;  // empty unless borrowing
  int64_t replicas_ = 0;
  int64_t created_at_ms_ = 0;
  int64_t admitted_at_ms_ = 0;
  int64_t last_admitted_at_ms_ = 0;
  int64_t ended_at_ms_ = 0;
  int64_t resize_epoch_ = 0;
  int32_t priority_ = 0;
  v1::JobState state_ = v1::JOB_STATE_UNSPECIFIED;
  bool borrowing_ = false;
  // The rare job the compact form does not fit (rejected: names nobody
  // configured; a resize pending): its JobInfo as is, and the fields above
  // unused but for team_, cluster_ and state_, which point into it.
  std::unique_ptr<const v1::JobInfo> whole_;
};

class ReadModel {
 public:
  static constexpr int kShards = 4096;  // ~25 jobs a shard at 100,000 jobs.
  static constexpr int kShardsPerPage = 64;
  static constexpr int kPages = kShards / kShardsPerPage;
  static constexpr int kTeamsPerChunk = 64;
  using Shard = absl::flat_hash_map<std::string, std::shared_ptr<const JobRecord>>;
  // Records the writer made from the core's views before an Update (for the
  // ledger's job rows), by id, so Update does not read and convert them again.
  using Records = absl::flat_hash_map<std::string, std::shared_ptr<const JobRecord>>;

  // The first model: every job and team of `broker`.
  static std::shared_ptr<const ReadModel> Build(const core::Broker& broker, int64_t seq);
  // The next model: `prev` with the given jobs and every team on their paths
  // re-read from `broker` (all teams when `all_teams`). A job found in
  // `made` takes that record, which must be MakeRecord of the broker's
  // current view of it; the others are read from `broker`.
  static std::shared_ptr<const ReadModel> Update(const ReadModel& prev, const core::Broker& broker, int64_t seq,
                                                 const std::vector<std::string>& touched_jobs, bool all_teams,
                                                 const Records* made = nullptr);
  // A record of `view` for a model of this lineage (its names interned in
  // the lineage's pool). Writer thread only: it adds to the shared pool.
  std::shared_ptr<const JobRecord> MakeRecord(const core::JobView& view) const;

  int64_t seq() const { return seq_; }
  core::Time now_ms() const { return now_ms_; }
  const v1::Config& config() const { return *config_; }

  // A live job (queued, admitted, draining), or nullptr. Built on each call.
  std::shared_ptr<const v1::JobInfo> FindJob(const std::string& id) const;
  // A live job or a retained ended or rejected one, or nullptr.
  std::shared_ptr<const v1::JobInfo> FindJobAny(const std::string& id) const;
  // The record FindJobAny builds its answer from (the same object in every
  // model until the job changes), or nullptr.
  const JobRecord* FindRecord(const std::string& id) const;
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
  std::shared_ptr<NamePool> names_;  // shared along the lineage; only the writer interns
  std::shared_ptr<FilledTeams> filled_;  // never shared between models
  // TeamWithFigures' figures, shared along the lineage (read_model_teams.h).
  std::shared_ptr<TeamFiguresCache> team_figures_;
};

// Conversions from the core's views to the API's messages.
v1::JobInfo ToJobInfo(const core::JobView& view, const v1::JobSpec* spec);
v1::TeamInfo ToTeamInfo(const core::TeamView& view);
v1::DecisionRecord ToRecord(const core::Event& event);

}  // namespace tidegate::service

#endif  // TIDEGATE_BROKER_SERVICE_READ_MODEL_H_
