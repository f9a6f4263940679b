#include "broker/service/read_model_teams.h"

#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "ledger/accounting_loans.h"

namespace tidegate::service {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// a + b, or int64's maximum when the true sum does not fit (both >= 0 here;
// a negative input, a figure that cannot be right, is taken as 0).
int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (__builtin_add_overflow(std::max<int64_t>(0, a), std::max<int64_t>(0, b), &sum)) return kMax;
  return sum;
}

// The trees ComputeTeamFigures and TeamFiguresCache attribute loans over:
// per resource one node per team (parallel to the teams), a team without
// the resource an unknown top-level leaf.
struct TeamTrees {
  std::vector<int> parent;                              // per team; -1: top-level
  absl::flat_hash_map<std::string, int> resource_index;  // in order of first appearance
  std::vector<std::string> resources;
  std::vector<std::optional<int64_t>> capacity;         // per resource
  std::vector<std::vector<ledger::LoanNode>> nodes;     // per resource
};

TeamTrees BuildTrees(const v1::Config& config, const std::vector<const v1::TeamInfo*>& teams) {
  const size_t n = teams.size();
  auto team = [&](size_t i) -> const v1::TeamInfo& { return *teams[i]; };
  TeamTrees t;
  absl::flat_hash_map<std::string, int> index;
  index.reserve(n);
  for (size_t i = 0; i < n; ++i) index[team(i).name()] = static_cast<int>(i);
  t.parent.assign(n, -1);
  for (size_t i = 0; i < n; ++i) {
    if (auto it = index.find(team(i).parent()); it != index.end()) t.parent[i] = it->second;
  }
  for (size_t i = 0; i < n; ++i) {
    for (const v1::TeamResource& r : team(i).resources()) {
      if (t.resource_index.try_emplace(r.resource(), static_cast<int>(t.resources.size())).second) {
        t.resources.push_back(r.resource());
      }
    }
  }
  std::map<std::string, int64_t> capacity;
  for (const v1::Cluster& c : config.clusters()) {
    for (const auto& [resource, q] : c.capacity()) capacity[resource] = SaturatingAdd(capacity[resource], q);
  }
  for (const std::string& resource : t.resources) {
    auto cap = capacity.find(resource);
    t.capacity.push_back(cap == capacity.end() ? std::nullopt : std::optional<int64_t>(cap->second));
  }
  t.nodes.resize(t.resources.size());
  for (size_t i = 0; i < n; ++i) {
    for (const v1::TeamResource& r : team(i).resources()) {
      std::vector<ledger::LoanNode>& nodes = t.nodes[t.resource_index[r.resource()]];
      if (nodes.empty()) nodes.resize(n, ledger::LoanNode{"", -1, true, 0, 0, 0, true});
      ledger::LoanNode& node = nodes[i];
      node.team = team(i).name();
      node.parent = t.parent[i];
      node.leaf = team(i).leaf();
      node.guaranteed = r.guaranteed();
      if (r.has_lend_limit()) node.lend_limit = r.lend_limit(); else node.lend_limit.reset();
      node.used = r.used();
      node.unknown = false;
    }
  }
  return t;
}

void SetResourceFigures(const ledger::NodeFigures& nf, TeamFigures::Resource* fr) {
  fr->known = nf.known;
  fr->used = nf.jobs_used;
  fr->private_idle = nf.private_idle;
  fr->borrowed = nf.borrowed;
  fr->lent = std::llround(nf.lent);
}

}  // namespace

std::vector<TeamFigures> ComputeTeamFigures(const v1::Config& config, const std::vector<const v1::TeamInfo*>& teams) {
  const size_t n = teams.size();
  auto team = [&](size_t i) -> const v1::TeamInfo& { return *teams[i]; };
  TeamTrees trees = BuildTrees(config, teams);
  const std::vector<int>& parent = trees.parent;
  const size_t nr = trees.resources.size();

  // Subtree totals of what is counted per leaf: queued demand and jobs.
  std::vector<int64_t> queued(n * nr, 0);  // [team * nr + resource]
  std::vector<int64_t> running(n, 0), waiting(n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (!team(i).leaf()) continue;
    size_t steps = 0;  // a parent cycle cannot loop forever
    for (int v = static_cast<int>(i); v >= 0 && steps <= n; v = parent[v], ++steps) {
      running[v] = SaturatingAdd(running[v], team(i).running_jobs());
      waiting[v] = SaturatingAdd(waiting[v], team(i).queued_jobs());
      for (const v1::TeamResource& r : team(i).resources()) {
        int64_t& q = queued[v * nr + trees.resource_index[r.resource()]];
        q = SaturatingAdd(q, r.queued());
      }
    }
  }

  std::vector<ledger::LoanAttribution> attributed(nr);
  for (size_t k = 0; k < nr; ++k) {
    attributed[k] = ledger::AttributeLoans(trees.nodes[k], trees.capacity[k], trees.resources[k]);
  }

  std::vector<TeamFigures> out(n);
  for (size_t i = 0; i < n; ++i) {
    TeamFigures& f = out[i];
    f.inner = !team(i).leaf();
    f.running_jobs = running[i];
    f.queued_jobs = waiting[i];
    for (const v1::TeamResource& r : team(i).resources()) {
      const int k = trees.resource_index[r.resource()];
      TeamFigures::Resource& fr = f.resources.emplace_back();
      fr.queued = queued[i * nr + k];
      SetResourceFigures(attributed[k].nodes[i], &fr);
    }
  }
  return out;
}

TeamFiguresCache::TeamFiguresCache() = default;
TeamFiguresCache::~TeamFiguresCache() = default;

TeamFigures TeamFiguresCache::Figures(const std::shared_ptr<const v1::Config>& config,
                                      const std::shared_ptr<const void>& teams, const TeamChunks& chunks,
                                      size_t chunk_size, size_t count, size_t index) {
  absl::MutexLock lock(&mu_);
  MoveTo(config, teams, chunks, chunk_size, count);
  if (cyclic_) return ComputeTeamFigures(*config_, infos_)[index];
  const v1::TeamInfo& asked = *infos_[index];
  TeamFigures f;
  f.inner = !asked.leaf();
  const size_t nr = resources_.size();
  // Subtree totals, over the asked team's subtree only.
  std::vector<int64_t> queued(nr, 0);
  std::vector<int> stack{static_cast<int>(index)};
  while (!stack.empty()) {
    const int v = stack.back();
    stack.pop_back();
    stack.insert(stack.end(), children_[v].begin(), children_[v].end());
    const v1::TeamInfo& t = *infos_[v];
    if (!t.leaf()) continue;
    f.running_jobs = SaturatingAdd(f.running_jobs, t.running_jobs());
    f.queued_jobs = SaturatingAdd(f.queued_jobs, t.queued_jobs());
    for (const v1::TeamResource& r : t.resources()) {
      int64_t& q = queued[resource_index_.at(r.resource())];
      q = SaturatingAdd(q, r.queued());
    }
  }
  for (const v1::TeamResource& r : asked.resources()) {
    const int k = resource_index_.at(r.resource());
    TeamFigures::Resource& fr = f.resources.emplace_back();
    fr.queued = queued[k];
    SetResourceFigures(trees_[k].figures(static_cast<int>(index)), &fr);
  }
  return f;
}

void TeamFiguresCache::MoveTo(const std::shared_ptr<const v1::Config>& config,
                              const std::shared_ptr<const void>& teams, const TeamChunks& chunks,
                              size_t chunk_size, size_t count) {
  if (teams != teams_ || config != config_ || count != infos_.size() || chunk_size != chunk_size_) {
    Rebuild(config, teams, chunks, chunk_size, count);
    return;
  }
  for (size_t c = 0; c < chunks.size(); ++c) {
    if (chunks_[c] == chunks[c]) continue;  // shared with the model it was at: no team changed
    for (size_t j = 0; j < chunks[c]->size(); ++j) {
      const size_t i = c * chunk_size + j;
      const v1::TeamInfo* now = (*chunks[c])[j].get();
      if (now == infos_[i]) continue;
      if (!Refresh(i, *now)) {
        Rebuild(config, teams, chunks, chunk_size, count);
        return;
      }
    }
    chunks_[c] = chunks[c];
  }
  for (ledger::LoanTree& tree : trees_) tree.Settle();
}

bool TeamFiguresCache::Refresh(size_t i, const v1::TeamInfo& now) {
  const v1::TeamInfo& was = *infos_[i];
  if (now.name() != was.name() || now.parent() != was.parent() || now.leaf() != was.leaf() ||
      now.resources_size() != was.resources_size()) {
    return false;
  }
  for (int r = 0; r < now.resources_size(); ++r) {
    if (now.resources(r).resource() != was.resources(r).resource()) return false;
  }
  infos_[i] = &now;
  for (const v1::TeamResource& r : now.resources()) {
    const std::optional<int64_t> lend_limit =
        r.has_lend_limit() ? std::optional<int64_t>(r.lend_limit()) : std::nullopt;
    trees_[resource_index_.at(r.resource())].Set(static_cast<int>(i), r.guaranteed(), lend_limit, r.used(), false);
  }
  return true;
}

void TeamFiguresCache::Rebuild(const std::shared_ptr<const v1::Config>& config,
                               const std::shared_ptr<const void>& teams, const TeamChunks& chunks,
                               size_t chunk_size, size_t count) {
  config_ = config;
  teams_ = teams;
  chunks_ = chunks;
  chunk_size_ = chunk_size;
  infos_.clear();
  infos_.reserve(count);
  for (const auto& chunk : chunks) {
    for (const auto& team : *chunk) infos_.push_back(team.get());
  }
  TeamTrees built = BuildTrees(*config_, infos_);
  resource_index_ = std::move(built.resource_index);
  resources_ = std::move(built.resources);
  children_.assign(count, {});
  std::vector<int> tops;
  for (size_t i = 0; i < count; ++i) {
    if (built.parent[i] >= 0) {
      children_[built.parent[i]].push_back(static_cast<int>(i));
    } else {
      tops.push_back(static_cast<int>(i));
    }
  }
  // A parent cycle (a config never has one) is left to ComputeTeamFigures.
  size_t reached = 0;
  while (!tops.empty()) {
    const int v = tops.back();
    tops.pop_back();
    ++reached;
    tops.insert(tops.end(), children_[v].begin(), children_[v].end());
  }
  cyclic_ = reached != count;
  trees_.clear();
  for (size_t k = 0; k < resources_.size(); ++k) {
    trees_.emplace_back(std::move(built.nodes[k]), built.capacity[k], resources_[k]);
    trees_.back().Settle();
  }
}

void ApplyTeamFigures(const TeamFigures& f, v1::TeamInfo* team) {
  if (f.inner) {
    team->set_running_jobs(f.running_jobs);
    team->set_queued_jobs(f.queued_jobs);
  }
  for (int k = 0; k < team->resources_size() && k < static_cast<int>(f.resources.size()); ++k) {
    v1::TeamResource& r = *team->mutable_resources(k);
    const TeamFigures::Resource& fr = f.resources[k];
    r.set_queued(fr.queued);
    if (!fr.known) continue;  // keep the core's figures; the accountant logs the problem
    r.set_used(fr.used);
    r.set_private_(fr.private_idle);
    r.set_borrowed(fr.borrowed);
    r.set_lent(fr.lent);
  }
}

void FillTeamFigures(const v1::Config& config, std::vector<v1::TeamInfo>* teams) {
  std::vector<const v1::TeamInfo*> in;
  in.reserve(teams->size());
  for (const v1::TeamInfo& t : *teams) in.push_back(&t);
  const std::vector<TeamFigures> figures = ComputeTeamFigures(config, in);
  for (size_t i = 0; i < teams->size(); ++i) ApplyTeamFigures(figures[i], &(*teams)[i]);
}

}  // namespace tidegate::service
