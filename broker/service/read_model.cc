#include "broker/service/read_model.h"

#include <algorithm>
#include <functional>

#include "absl/base/call_once.h"
#include "broker/service/read_model_teams.h"

namespace tidegate::service {

v1::JobInfo ToJobInfo(const core::JobView& v, const v1::JobSpec* spec) {
  v1::JobInfo out;
  out.set_job(v.id);
  out.set_team(v.team);
  out.set_cluster(v.cluster);
  out.set_state(v.state);
  out.set_replicas(v.replicas);
  out.set_priority(v.priority);
  out.set_created_at_ms(v.created_at);
  out.set_admitted_at_ms(v.admitted_at < 0 ? 0 : v.admitted_at);
  out.set_last_admitted_at_ms(v.last_admitted_at < 0 ? 0 : v.last_admitted_at);
  out.set_ended_at_ms(v.ended_at < 0 ? 0 : v.ended_at);
  out.set_borrowing(v.borrowing);
  for (const auto& [name, q] : v.borrowed) (*out.mutable_borrowed())[name] = q;
  for (const auto& [name, q] : v.demand) (*out.mutable_demand())[name] = q;
  out.set_reason(v.reason);
  if (spec) {
    *out.mutable_spec() = *spec;
  } else {
    out.mutable_spec()->ParseFromString(v.spec_bytes);
  }
  out.set_resize_epoch(v.epoch);
  if (v.resize_from >= 0) {
    v1::ResizeRequest* r = out.mutable_resize();
    r->set_job(v.id);
    r->set_epoch(v.epoch);
    r->set_target_replicas(v.resize_to);
    r->set_current_replicas(v.resize_from);
    r->set_reason(v.resize_reason);
    r->set_deadline_ms(v.resize_deadline);
  }
  return out;
}

JobRecord::JobRecord(const core::JobView& v, NamePool* names) : state_(v.state) {
  if (v.state == v1::JOB_STATE_REJECTED || v.resize_from >= 0) {
    whole_ = std::make_unique<const v1::JobInfo>(ToJobInfo(v, nullptr));
    team_ = &whole_->team();
    cluster_ = &whole_->cluster();
    return;
  }
  team_ = names->Intern(v.team);
  cluster_ = names->Intern(v.cluster);
  reason_ = v.reason;
  spec_ = v.spec_bytes;  // the core's bytes: no message built, nothing serialized again
  for (const auto& [name, q] : v.demand) demand_.emplace_back(names->Intern(name), q);
  replicas_ = v.replicas;
  created_at_ms_ = v.created_at;
  admitted_at_ms_ = std::max<int64_t>(0, v.admitted_at);
  last_admitted_at_ms_ = std::max<int64_t>(0, v.last_admitted_at);
  ended_at_ms_ = std::max<int64_t>(0, v.ended_at);
  resize_epoch_ = v.epoch;
  priority_ = v.priority;
  borrowing_ = v.borrowing;
  for (const auto& [name, q] : v.borrowed) borrowed_.emplace_back(names->Intern(name), q);
}

v1::JobInfo JobRecord::ToInfo(const std::string& id) const {
  if (whole_) return *whole_;
  v1::JobInfo out;
  out.set_job(id);
  out.set_team(*team_);
  out.set_cluster(*cluster_);
  out.set_state(state_);
  out.set_replicas(replicas_);
  out.set_priority(priority_);
  out.set_created_at_ms(created_at_ms_);
  out.set_admitted_at_ms(admitted_at_ms_);
  out.set_last_admitted_at_ms(last_admitted_at_ms_);
  out.set_ended_at_ms(ended_at_ms_);
  out.set_borrowing(borrowing_);
  for (const auto& [name, q] : borrowed_) (*out.mutable_borrowed())[*name] = q;
  for (const auto& [name, q] : demand_) (*out.mutable_demand())[*name] = q;
  out.set_reason(reason_);
  out.mutable_spec()->ParseFromString(spec_);
  out.set_resize_epoch(resize_epoch_);
  return out;
}

v1::TeamInfo ToTeamInfo(const core::TeamView& v) {
  v1::TeamInfo out;
  out.set_name(v.name);
  out.set_parent(v.parent);
  out.set_leaf(v.leaf);
  out.set_weight(v.weight);
  out.set_share(v.share);
  out.set_running_jobs(v.running_jobs);
  out.set_queued_jobs(v.queued_jobs);
  for (const auto& r : v.resources) {
    v1::TeamResource* tr = out.add_resources();
    tr->set_resource(r.resource);
    tr->set_guaranteed(r.guaranteed);
    if (r.borrow_limit != core::kInfinite) tr->set_borrow_limit(r.borrow_limit);
    if (r.lend_limit != core::kInfinite) tr->set_lend_limit(r.lend_limit);
    tr->set_used(r.used);
    tr->set_borrowed(r.borrowed);
    tr->set_queued(r.queued);
  }
  for (const auto& rule : v.tide) *out.add_tide() = rule;
  if (v.next_tide_change >= 0) {
    out.set_next_tide_change_ms(v.next_tide_change);
    out.set_next_tide_lead_ms(v.next_tide_lead);
    for (const auto& [res, q] : v.next_tide_quota) (*out.mutable_next_tide_quota())[res] = q;
  }
  for (const auto& [res, q] : v.quota) (*out.mutable_quota())[res] = q;
  return out;
}

v1::DecisionRecord ToRecord(const core::Event& e) {
  v1::DecisionRecord r;
  r.set_type(core::EventTypeName(e.type));
  r.set_at_ms(e.at);
  r.set_job(e.job);
  r.set_team(e.team);
  r.set_replicas(e.replicas);
  for (const auto& [name, q] : e.borrowed) (*r.mutable_borrowed())[name] = q;
  r.set_reason(e.reason);
  r.set_requeued(e.requeued);
  r.set_by(e.by);
  r.set_decision(e.decision);
  for (const auto& v : e.victims) r.add_victims(v);
  r.set_from(e.from);
  r.set_to(e.to);
  r.set_adopted(e.adopted);
  return r;
}

struct ReadModel::FilledTeams {
  absl::once_flag once;
  std::vector<TeamFigures> figures;  // parallel to the teams
};

size_t ReadModel::ShardOf(const std::string& id) { return std::hash<std::string>{}(id) % kShards; }

std::shared_ptr<const ReadModel> ReadModel::Build(const core::Broker& broker, int64_t seq) {
  auto m = std::make_shared<ReadModel>();
  m->filled_ = std::make_shared<FilledTeams>();
  m->team_figures_ = std::make_shared<TeamFiguresCache>();
  m->seq_ = seq;
  m->now_ms_ = broker.Now();
  std::vector<Shard> shards(kShards);
  m->names_ = std::make_shared<NamePool>();
  for (const auto& list : {broker.ListJobs(), broker.ListEndedJobs()}) {
    for (const core::JobView& v : list) {
      shards[ShardOf(v.id)][v.id] = std::make_shared<const JobRecord>(v, m->names_.get());
    }
  }
  for (int p = 0; p < kPages; ++p) {
    auto page = std::make_shared<Page>();
    for (int i = 0; i < kShardsPerPage; ++i) {
      (*page)[i] = std::make_shared<Shard>(std::move(shards[p * kShardsPerPage + i]));
    }
    m->pages_[p] = std::move(page);
  }
  m->RebuildTeams(broker);
  m->waiting_ = broker.TakeWaitPicture(nullptr);
  return m;
}

void ReadModel::RebuildTeams(const core::Broker& broker) {
  config_ = std::make_shared<v1::Config>(broker.Config());
  team_chunks_.clear();
  auto index = std::make_shared<absl::flat_hash_map<std::string, int>>();
  std::shared_ptr<TeamChunk> chunk;
  int n = 0;
  for (const auto& name : broker.TeamNames()) {
    if (n % kTeamsPerChunk == 0) {
      chunk = std::make_shared<TeamChunk>();
      chunk->reserve(kTeamsPerChunk);
      team_chunks_.push_back(chunk);
    }
    (*index)[name] = n++;
    chunk->push_back(std::make_shared<v1::TeamInfo>(ToTeamInfo(*broker.GetTeam(name))));
  }
  team_count_ = static_cast<size_t>(n);
  team_index_ = std::move(index);
}

std::shared_ptr<const JobRecord> ReadModel::MakeRecord(const core::JobView& view) const {
  return std::make_shared<const JobRecord>(view, names_.get());
}

std::shared_ptr<const ReadModel> ReadModel::Update(const ReadModel& prev, const core::Broker& broker, int64_t seq,
                                                   const std::vector<std::string>& touched_jobs, bool all_teams,
                                                   const Records* made) {
  auto m = std::make_shared<ReadModel>(prev);
  m->filled_ = std::make_shared<FilledTeams>();  // the figures of `prev` are not this model's
  m->seq_ = seq;
  m->now_ms_ = broker.Now();
  if (all_teams) m->RebuildTeams(broker);  // the tree or config may have changed.
  m->waiting_ = broker.TakeWaitPicture(prev.waiting_.get());  // O(teams), whatever the queues hold.
  std::vector<std::string> teams_to_refresh;
  // Copies of the pages and shards this batch writes, made on first write.
  absl::flat_hash_map<size_t, std::shared_ptr<Page>> pages;
  absl::flat_hash_map<size_t, std::shared_ptr<Shard>> copied;
  for (const auto& id : touched_jobs) {
    const size_t s = ShardOf(id);
    auto it = copied.find(s);
    if (it == copied.end()) it = copied.emplace(s, std::make_shared<Shard>(prev.ShardAt(s))).first;
    Shard& shard = *it->second;
    std::string team;
    if (auto old = shard.find(id); old != shard.end()) team = old->second->team();
    std::shared_ptr<const JobRecord> record;
    if (made != nullptr) {
      if (auto found = made->find(id); found != made->end()) record = found->second;
    }
    if (!record) {
      if (auto view = broker.GetJob(id)) record = m->MakeRecord(*view);
    }
    if (record) {
      team = record->team();
      shard[id] = std::move(record);
    } else {
      shard.erase(id);  // its retention ended: the ledger's jobs table keeps its history.
    }
    if (!team.empty()) teams_to_refresh.push_back(team);
  }
  for (auto& [s, shard] : copied) {
    const size_t p = s / kShardsPerPage;
    auto page = pages.find(p);
    if (page == pages.end()) page = pages.emplace(p, std::make_shared<Page>(*prev.pages_[p])).first;
    (*page->second)[s % kShardsPerPage] = std::move(shard);
  }
  for (auto& [p, page] : pages) m->pages_[p] = std::move(page);
  if (!all_teams) {
    // Each touched team and its ancestors.
    absl::flat_hash_map<std::string, bool> seen;
    absl::flat_hash_map<size_t, std::shared_ptr<TeamChunk>> chunks;
    for (std::string name : teams_to_refresh) {
      while (!name.empty() && !seen.contains(name)) {
        seen[name] = true;
        auto idx = m->team_index_->find(name);
        if (idx == m->team_index_->end()) break;
        auto view = broker.GetTeam(name);
        if (!view) break;
        const size_t c = static_cast<size_t>(idx->second) / kTeamsPerChunk;
        auto chunk = chunks.find(c);
        if (chunk == chunks.end()) chunk = chunks.emplace(c, std::make_shared<TeamChunk>(*m->team_chunks_[c])).first;
        (*chunk->second)[idx->second % kTeamsPerChunk] = std::make_shared<v1::TeamInfo>(ToTeamInfo(*view));
        name = view->parent;
      }
    }
    for (auto& [c, chunk] : chunks) m->team_chunks_[c] = std::move(chunk);
  }
  return m;
}

namespace {
bool Live(v1::JobState s) { return s != v1::JOB_STATE_ENDED && s != v1::JOB_STATE_REJECTED; }
}  // namespace

const JobRecord* ReadModel::FindRecord(const std::string& id) const {
  const Shard& shard = ShardAt(ShardOf(id));
  auto it = shard.find(id);
  return it == shard.end() ? nullptr : it->second.get();
}

std::shared_ptr<const v1::JobInfo> ReadModel::FindJobAny(const std::string& id) const {
  const JobRecord* r = FindRecord(id);
  return r ? std::make_shared<const v1::JobInfo>(r->ToInfo(id)) : nullptr;
}

std::shared_ptr<const v1::JobInfo> ReadModel::FindJob(const std::string& id) const {
  const JobRecord* r = FindRecord(id);
  return r && Live(r->state()) ? std::make_shared<const v1::JobInfo>(r->ToInfo(id)) : nullptr;
}

std::vector<std::shared_ptr<const v1::JobInfo>> ReadModel::Jobs(const std::string& team, v1::JobState state) const {
  std::vector<std::pair<const std::string*, const JobRecord*>> chosen;
  for (size_t s = 0; s < kShards; ++s) {
    for (const auto& [id, job] : ShardAt(s)) {
      if (!team.empty() && job->team() != team) continue;
      if (state == v1::JOB_STATE_UNSPECIFIED ? !Live(job->state()) : job->state() != state) continue;
      chosen.emplace_back(&id, job.get());
    }
  }
  std::sort(chosen.begin(), chosen.end(), [](const auto& a, const auto& b) { return *a.first < *b.first; });
  std::vector<std::shared_ptr<const v1::JobInfo>> out;
  out.reserve(chosen.size());
  for (const auto& [id, job] : chosen) out.push_back(std::make_shared<const v1::JobInfo>(job->ToInfo(*id)));
  return out;
}

std::vector<std::shared_ptr<const v1::JobInfo>> ReadModel::JobsAfter(const std::string& team, v1::JobState state,
                                                                     const std::string& after, size_t limit,
                                                                     const std::string& cluster) const {
  std::vector<std::pair<const std::string*, const JobRecord*>> candidates;
  for (size_t s = 0; s < kShards; ++s) {
    for (const auto& [id, job] : ShardAt(s)) {
      if (!team.empty() && job->team() != team) continue;
      if (!cluster.empty() && job->cluster() != cluster) continue;
      if (state == v1::JOB_STATE_UNSPECIFIED ? !Live(job->state()) : job->state() != state) continue;
      if (!after.empty() && id <= after) continue;
      candidates.emplace_back(&id, job.get());
    }
  }
  auto by_id = [](const auto& a, const auto& b) { return *a.first < *b.first; };
  if (candidates.size() > limit) {
    std::nth_element(candidates.begin(), candidates.begin() + limit, candidates.end(), by_id);
    candidates.resize(limit);
  }
  std::sort(candidates.begin(), candidates.end(), by_id);
  std::vector<std::shared_ptr<const v1::JobInfo>> out;
  out.reserve(candidates.size());
  for (const auto& [id, job] : candidates) out.push_back(std::make_shared<const v1::JobInfo>(job->ToInfo(*id)));
  return out;
}

std::string ReadModel::ReasonNow(const v1::JobInfo& job) const {
  if (job.state() != v1::JOB_STATE_QUEUED || !waiting_) return job.reason();
  core::NamedQuantities demand(job.demand().begin(), job.demand().end());
  return waiting_->Reason(job.job(), job.team(), job.cluster(), demand, job.reason());
}

int64_t ReadModel::QueuePosition(const v1::JobInfo& job) const {
  if (job.state() != v1::JOB_STATE_QUEUED) return 0;
  // Whether a queued job with these keys is ahead of `job`.
  auto before = [&job](int32_t priority, int64_t created_at_ms, const std::string& id) {
    if (priority != job.priority()) return priority > job.priority();
    if (created_at_ms != job.created_at_ms()) return created_at_ms < job.created_at_ms();
    return id < job.job();
  };
  int64_t ahead = 0;
  for (size_t s = 0; s < kShards; ++s) {
    for (const auto& [id, other] : ShardAt(s)) {
      if (other->state() != v1::JOB_STATE_QUEUED || other->team() != job.team()) continue;
      if (before(other->priority(), other->created_at_ms(), id)) ++ahead;
    }
  }
  return ahead + 1;
}

const v1::TeamInfo* ReadModel::FindTeam(const std::string& name) const {
  auto it = team_index_->find(name);
  return it == team_index_->end() ? nullptr : &TeamAt(it->second);
}

const ReadModel::FilledTeams& ReadModel::Filled() const {
  absl::call_once(filled_->once, [this] {
    std::vector<const v1::TeamInfo*> teams;
    teams.reserve(team_count_);
    for (size_t i = 0; i < team_count_; ++i) teams.push_back(&TeamAt(i));
    filled_->figures = ComputeTeamFigures(*config_, teams);
  });
  return *filled_;
}

std::vector<v1::TeamInfo> ReadModel::Teams() const {
  const FilledTeams& filled = Filled();
  std::vector<v1::TeamInfo> out;
  out.reserve(team_count_);
  for (size_t i = 0; i < team_count_; ++i) {
    out.push_back(TeamAt(i));
    ApplyTeamFigures(filled.figures[i], &out.back());
  }
  return out;
}

std::optional<v1::TeamInfo> ReadModel::TeamWithFigures(const std::string& name) const {
  auto it = team_index_->find(name);
  if (it == team_index_->end()) return std::nullopt;
  v1::TeamInfo team = TeamAt(it->second);
  const size_t i = static_cast<size_t>(it->second);
  ApplyTeamFigures(team_figures_ ? team_figures_->Figures(config_, team_index_, team_chunks_, kTeamsPerChunk,
                                                          team_count_, i)
                                 : Filled().figures[i],
                   &team);
  return team;
}

}  // namespace tidegate::service
