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

void FillTeamFigures(const v1::Config& config, std::vector<v1::TeamInfo>* teams) {
  std::vector<v1::TeamInfo>& out = *teams;
  absl::flat_hash_map<std::string, int> index;
  for (size_t i = 0; i < out.size(); ++i) index[out[i].name()] = static_cast<int>(i);
  std::vector<int> parent(out.size(), -1);
  for (size_t i = 0; i < out.size(); ++i) {
    if (auto it = index.find(out[i].parent()); it != index.end()) parent[i] = it->second;
  }
  std::map<std::string, int64_t> capacity;
  for (const v1::Cluster& c : config.clusters()) {
    for (const auto& [resource, q] : c.capacity()) capacity[resource] = SaturatingAdd(capacity[resource], q);
  }

  // Subtree totals of what is counted per leaf: queued demand and jobs.
  std::vector<std::map<std::string, int64_t>> queued(out.size());
  std::vector<int64_t> running(out.size(), 0), waiting(out.size(), 0);
  for (size_t i = 0; i < out.size(); ++i) {
    if (!out[i].leaf()) continue;
    size_t steps = 0;  // a parent cycle cannot loop forever
    for (int v = static_cast<int>(i); v >= 0 && steps <= out.size(); v = parent[v], ++steps) {
      running[v] = SaturatingAdd(running[v], out[i].running_jobs());
      waiting[v] = SaturatingAdd(waiting[v], out[i].queued_jobs());
      for (const v1::TeamResource& r : out[i].resources()) {
        queued[v][r.resource()] = SaturatingAdd(queued[v][r.resource()], r.queued());
      }
    }
  }

  std::map<std::string, std::vector<ledger::LoanNode>> trees;  // per resource, parallel to out
  for (size_t i = 0; i < out.size(); ++i) {
    for (const v1::TeamResource& r : out[i].resources()) {
      std::vector<ledger::LoanNode>& nodes = trees[r.resource()];
      if (nodes.empty()) nodes.resize(out.size(), ledger::LoanNode{"", -1, true, 0, 0, 0, true});
      ledger::LoanNode& n = nodes[i];
      n.team = out[i].name();
      n.parent = parent[i];
      n.leaf = out[i].leaf();
      n.guaranteed = r.guaranteed();
      if (r.has_lend_limit()) n.lend_limit = r.lend_limit(); else n.lend_limit.reset();
      n.used = r.used();
      n.unknown = false;
    }
  }
  std::map<std::string, ledger::LoanAttribution> attributed;
  for (const auto& [resource, nodes] : trees) {
    auto cap = capacity.find(resource);
    attributed[resource] = ledger::AttributeLoans(
        nodes, cap == capacity.end() ? std::nullopt : std::optional<int64_t>(cap->second), resource);
  }

  for (size_t i = 0; i < out.size(); ++i) {
    v1::TeamInfo& team = out[i];
    if (!team.leaf()) {
      team.set_running_jobs(running[i]);
      team.set_queued_jobs(waiting[i]);
    }
    for (v1::TeamResource& r : *team.mutable_resources()) {
      r.set_queued(queued[i][r.resource()]);
      const ledger::NodeFigures& f = attributed[r.resource()].nodes[i];
      if (!f.known) continue;  // keep the core's figures; the accountant logs the problem
      r.set_used(f.jobs_used);
      r.set_private_(f.private_idle);
      r.set_borrowed(f.borrowed);
      r.set_lent(std::llround(f.lent));
    }
  }
}

}  // namespace tidegate::service
