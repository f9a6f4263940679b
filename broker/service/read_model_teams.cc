#include "broker/service/read_model_teams.h"

#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
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

}  // namespace

std::vector<TeamFigures> ComputeTeamFigures(const v1::Config& config, const std::vector<const v1::TeamInfo*>& teams) {
  const size_t n = teams.size();
  auto team = [&](size_t i) -> const v1::TeamInfo& { return *teams[i]; };
  absl::flat_hash_map<std::string, int> index;
  index.reserve(n);
  for (size_t i = 0; i < n; ++i) index[team(i).name()] = static_cast<int>(i);
  std::vector<int> parent(n, -1);
  for (size_t i = 0; i < n; ++i) {
    if (auto it = index.find(team(i).parent()); it != index.end()) parent[i] = it->second;
  }
  // Resources by number, in order of first appearance.
  absl::flat_hash_map<std::string, int> resource_index;
  std::vector<std::string> resources;
  for (size_t i = 0; i < n; ++i) {
    for (const v1::TeamResource& r : team(i).resources()) {
      if (resource_index.try_emplace(r.resource(), static_cast<int>(resources.size())).second) {
        resources.push_back(r.resource());
      }
    }
  }
  const size_t nr = resources.size();
  std::map<std::string, int64_t> capacity;
  for (const v1::Cluster& c : config.clusters()) {
    for (const auto& [resource, q] : c.capacity()) capacity[resource] = SaturatingAdd(capacity[resource], q);
  }

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
        int64_t& q = queued[v * nr + resource_index[r.resource()]];
        q = SaturatingAdd(q, r.queued());
      }
    }
  }

  std::vector<std::vector<ledger::LoanNode>> trees(nr);  // per resource, parallel to teams
  for (size_t i = 0; i < n; ++i) {
    for (const v1::TeamResource& r : team(i).resources()) {
      std::vector<ledger::LoanNode>& nodes = trees[resource_index[r.resource()]];
      if (nodes.empty()) nodes.resize(n, ledger::LoanNode{"", -1, true, 0, 0, 0, true});
      ledger::LoanNode& node = nodes[i];
      node.team = team(i).name();
      node.parent = parent[i];
      node.leaf = team(i).leaf();
      node.guaranteed = r.guaranteed();
      if (r.has_lend_limit()) node.lend_limit = r.lend_limit(); else node.lend_limit.reset();
      node.used = r.used();
      node.unknown = false;
    }
  }
  std::vector<ledger::LoanAttribution> attributed(nr);
  for (size_t k = 0; k < nr; ++k) {
    auto cap = capacity.find(resources[k]);
    attributed[k] = ledger::AttributeLoans(
        trees[k], cap == capacity.end() ? std::nullopt : std::optional<int64_t>(cap->second), resources[k]);
  }

  std::vector<TeamFigures> out(n);
  for (size_t i = 0; i < n; ++i) {
    TeamFigures& f = out[i];
    f.inner = !team(i).leaf();
    f.running_jobs = running[i];
    f.queued_jobs = waiting[i];
    for (const v1::TeamResource& r : team(i).resources()) {
      const int k = resource_index[r.resource()];
      TeamFigures::Resource& fr = f.resources.emplace_back();
      fr.queued = queued[i * nr + k];
      const ledger::NodeFigures& nf = attributed[k].nodes[i];
      fr.known = nf.known;
      fr.used = nf.jobs_used;
      fr.private_idle = nf.private_idle;
      fr.borrowed = nf.borrowed;
      fr.lent = std::llround(nf.lent);
    }
  }
  return out;
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
