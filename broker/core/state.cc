#include "broker/core/state.h"

#include <algorithm>

namespace tidegate::core {

State::State(CompiledConfig config, v1::Config source)
    : config_(std::move(config)), source_(std::move(source)) {
  nodes_.resize(config_.nodes.size());
  for (auto& n : nodes_) {
    n.usage.assign(num_resources(), 0);
    n.queued.assign(num_resources(), 0);
    n.pending_demand.resize(num_resources());
  }
  cluster_used_.assign(config_.clusters.size(), std::vector<Quantity>(num_resources(), 0));
  known_demand_.assign(num_resources(), 0);
  // Inner nodes start at sum of children's private parts.
  RecomputeUsage();
}

int State::FindJob(std::string_view id) const {
  return job_index_.Find(id);
}

int State::NewJob(Job job) {
  int slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
    jobs_[slot] = std::move(job);
  } else {
    slot = static_cast<int>(jobs_.size());
    jobs_.push_back(std::move(job));
  }
  jobs_[slot].gen = ++job_gen_;
  job_index_.Set(jobs_[slot].id, slot);
  const std::vector<Quantity> most = MaxDemand(jobs_[slot]);
  for (int r = 0; r < num_resources(); ++r) known_demand_[r] += most[r];  // bounded by Submit's check.
  ForgetEnded(jobs_[slot].id);
  return slot;
}

std::vector<Quantity> State::MaxDemand(const Job& job) {
  const int64_t most = job.elastic() ? job.elastic_max : job.replicas;
  std::vector<Quantity> out(job.per_replica.size(), 0);
  for (size_t r = 0; r < out.size(); ++r) out[r] = SatMul(job.per_replica[r], most);
  return out;
}

const EndedJob* State::FindEnded(std::string_view id) const { return ended_.Find(id); }

void State::ForgetEnded(const std::string& id) {
  if (ended_.Forget(id)) forgotten_.push_back(id);
}

void State::RememberEnded(std::string id, EndedJob ended) { ended_.Remember(std::move(id), std::move(ended), &forgotten_); }

void State::PruneEnded(Time now, Time retention_ms) { ended_.Prune(now, retention_ms, &forgotten_); }

void State::DropJob(int j) {
  if (jobs_[j].growable) {
    jobs_[j].running_slot = -1;  // leaves the growable set.
    UpdateGrowable(j);
  }
  const std::vector<Quantity> most = MaxDemand(jobs_[j]);
  for (int r = 0; r < num_resources(); ++r) known_demand_[r] -= most[r];
  job_index_.Erase(jobs_[j].id);
  jobs_[j] = Job{};
  free_slots_.push_back(j);
}

void State::AddUsage(int leaf, int cluster, const std::vector<Quantity>& amount, int sign) {
  for (int r = 0; r < num_resources(); ++r) {
    const Quantity delta = sign * amount[r];
    if (delta == 0) continue;
    if (cluster >= 0) cluster_used_[cluster][r] += delta;
    int n = leaf;
    Quantity old_u = nodes_[n].usage[r];
    nodes_[n].usage[r] += delta;
    while (n != kRootNode) {
      const Quantity p = config_.nodes[n].private_part[r];
      const Quantity before = std::max(old_u, p);
      const Quantity after = std::max(nodes_[n].usage[r], p);
      if (before == after) break;
      const int parent = config_.nodes[n].parent;
      old_u = nodes_[parent].usage[r];
      nodes_[parent].usage[r] += after - before;
      n = parent;
    }
  }
}

void State::RecomputeUsage() {
  for (auto& n : nodes_) std::fill(n.usage.begin(), n.usage.end(), 0);
  for (auto& c : cluster_used_) std::fill(c.begin(), c.end(), 0);
  std::vector<std::vector<Quantity>> leaf_u(nodes_.size(), std::vector<Quantity>(num_resources(), 0));
  job_index_.ForEachSlot([&](int j) {
    const Job& job = jobs_[j];
    if (job.phase != Phase::kQueued) {
      for (int r = 0; r < num_resources(); ++r) {
        leaf_u[job.team][r] += job.demand[r];
        cluster_used_[job.cluster][r] += job.demand[r];
      }
    }
    for (const auto& hold : job.holds) {
      for (int r = 0; r < num_resources(); ++r) {
        leaf_u[hold.leaf][r] += hold.amount[r];
        cluster_used_[hold.cluster][r] += hold.amount[r];
      }
    }
  });
  // Post-order: children before parents (node ids are not ordered).
  std::vector<int> order;
  std::vector<std::pair<int, size_t>> stack{{kRootNode, 0}};
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < config_.nodes[node].children.size()) {
      int child = config_.nodes[node].children[next++];
      stack.push_back({child, 0});
    } else {
      order.push_back(node);
      stack.pop_back();
    }
  }
  for (int n : order) {
    const NodeConfig& nc = config_.nodes[n];
    if (nc.leaf && n != kRootNode) {
      nodes_[n].usage = leaf_u[n];
      continue;
    }
    for (int r = 0; r < num_resources(); ++r) {
      Quantity sum = 0;
      for (int ch : nc.children) sum += std::max(nodes_[ch].usage[r], config_.nodes[ch].private_part[r]);
      nodes_[n].usage[r] = sum;
    }
  }
  Changed();
}

void State::Available(int n, std::vector<Quantity>* out) const {
  out->resize(num_resources());
  const auto& path = config_.nodes[n].path;
  for (int r = 0; r < num_resources(); ++r) {
    const int root = path[0];
    Quantity avail = config_.nodes[root].guaranteed[r] - nodes_[root].usage[r];
    for (size_t i = 1; i < path.size(); ++i) {
      const int a = path[i];
      const NodeConfig& nc = config_.nodes[a];
      const Quantity own = SatSub(SatAdd(nc.guaranteed[r], nc.borrow_limit[r]), nodes_[a].usage[r]);
      avail = std::min(own, SatAdd(Slack(a, r), avail));
    }
    (*out)[r] = avail;
  }
}

bool State::WithinGuarantee(int n, ResourceMask rs) const {
  for (int r = 0; r < num_resources(); ++r) {
    if ((rs >> r & 1) && nodes_[n].usage[r] > config_.nodes[n].guaranteed[r]) return false;
  }
  return true;
}

int State::Domain(int leaf, ResourceMask rs) const {
  for (int a = config_.nodes[leaf].parent; a != kRootNode; a = config_.nodes[a].parent) {
    const NodeConfig& nc = config_.nodes[a];
    bool boundary = true;
    for (int r = 0; r < num_resources() && boundary; ++r) {
      if ((rs >> r & 1) && !(nc.borrow_limit[r] == 0 && nc.lend_limit[r] == 0)) boundary = false;
    }
    if (boundary) return a;
  }
  return kRootNode;
}

bool State::Fits(const Job& j, bool within_guarantee) const {
  const auto& path = config_.nodes[j.team].path;
  for (int r = 0; r < num_resources(); ++r) {
    if (!(j.requested >> r & 1)) continue;
    const Quantity d = j.demand[r];
    if (within_guarantee && nodes_[j.team].usage[r] + d > config_.nodes[j.team].guaranteed[r]) return false;
    if (d == 0) continue;
    if (d > std::max<Quantity>(0, free_capacity(j.cluster, r))) return false;
    Quantity avail = config_.nodes[path[0]].guaranteed[r] - nodes_[path[0]].usage[r];
    for (size_t i = 1; i < path.size(); ++i) {
      const int a = path[i];
      const NodeConfig& nc = config_.nodes[a];
      avail = std::min(SatSub(SatAdd(nc.guaranteed[r], nc.borrow_limit[r]), nodes_[a].usage[r]), SatAdd(Slack(a, r), avail));
    }
    if (d > std::max<Quantity>(0, avail)) return false;
  }
  return true;
}

void State::Enqueue(int j) {
  Job& job = jobs_[j];
  job.phase = Phase::kQueued;
  NodeState& n = nodes_[job.team];
  n.pending.insert(QueueKey{-job.priority, job.created_at, &job.id, j});
  teams_with_pending_.insert(job.team);
  for (int r = 0; r < num_resources(); ++r) {
    n.queued[r] += job.demand[r];
    n.pending_demand[r].insert(job.demand[r]);
  }
}

void State::Dequeue(int j) {
  Job& job = jobs_[j];
  NodeState& n = nodes_[job.team];
  n.pending.erase(QueueKey{-job.priority, job.created_at, &job.id, j});
  if (n.pending.empty()) teams_with_pending_.erase(job.team);
  for (int r = 0; r < num_resources(); ++r) {
    n.queued[r] -= job.demand[r];
    n.pending_demand[r].erase(n.pending_demand[r].find(job.demand[r]));
  }
}

void State::AddRunning(int j) {
  Job& job = jobs_[j];
  auto& running = nodes_[job.team].running;
  job.running_slot = static_cast<int>(running.size());
  running.push_back(j);
  AddUsage(job.team, job.cluster, job.demand, +1);
  Changed();
  UpdateGrowable(j);
}

void State::RemoveRunning(int j) {
  Job& job = jobs_[j];
  auto& running = nodes_[job.team].running;
  const int slot = job.running_slot;
  running[slot] = running.back();
  jobs_[running[slot]].running_slot = slot;
  running.pop_back();
  job.running_slot = -1;
  AddUsage(job.team, job.cluster, job.demand, -1);
  Changed();
  UpdateGrowable(j);
}

void State::SetReplicas(int j, int64_t replicas) {
  Job& job = jobs_[j];
  const int64_t delta = replicas - job.replicas;
  if (delta == 0) return;
  std::vector<Quantity> amount(num_resources(), 0);
  Quantity gpus = 0, largest = 0;
  for (int r = 0; r < num_resources(); ++r) {
    amount[r] = job.per_replica[r] * (delta > 0 ? delta : -delta);
    job.demand[r] = job.per_replica[r] * replicas;
    if (config_.is_gpu[r]) gpus = SatAdd(gpus, job.demand[r]);
    largest = std::max(largest, job.demand[r]);
  }
  job.gpus = gpus > 0 ? gpus : largest;
  job.replicas = replicas;
  if (job.running_slot >= 0) {
    AddUsage(job.team, job.cluster, amount, delta > 0 ? +1 : -1);
    Changed();
  }
}

void State::UpdateGrowable(int j) {
  Job& job = jobs_[j];
  const bool want = job.elastic() && job.phase == Phase::kAdmitted && job.running_slot >= 0 &&
                    !job.resize_pending() && job.replicas < job.elastic_max;
  if (want == job.growable) return;
  NodeState& n = nodes_[job.team];
  const QueueKey key{-job.priority, job.created_at, &job.id, j};
  if (want) {
    n.growable.insert(key);
    teams_with_growable_.insert(job.team);
  } else {
    n.growable.erase(key);
    if (n.growable.empty()) teams_with_growable_.erase(job.team);
  }
  job.growable = want;
}

void State::Reconfigure(CompiledConfig config, v1::Config source) {
  source_ = std::move(source);
  tide_.index.Clear();
  tide_.compiled.clear();
  ReconfigureQuota(std::move(config));
}

void State::ReconfigureQuota(CompiledConfig config) {
  // Remap resources, teams and clusters by name; the caller has checked that
  // every job's team and cluster still exist (Decider::Reconfigure).
  const CompiledConfig& old = config_;
  std::vector<int> rmap(old.num_resources());
  for (int r = 0; r < old.num_resources(); ++r) rmap[r] = config.resource_index.at(old.resources[r]);
  std::vector<int> nmap(old.nodes.size(), -1);
  nmap[kRootNode] = kRootNode;
  for (size_t n = 1; n < old.nodes.size(); ++n) {
    auto it = config.node_index.find(old.nodes[n].name);
    if (it != config.node_index.end()) nmap[n] = it->second;
  }
  std::vector<int> cmap(old.clusters.size(), -1);
  for (size_t k = 0; k < old.clusters.size(); ++k) {
    auto it = config.cluster_index.find(old.clusters[k].name);
    if (it != config.cluster_index.end()) cmap[k] = it->second;
  }
  const int newR = config.num_resources();
  auto move_vec = [&](std::vector<Quantity>& v) {
    std::vector<Quantity> out(newR, 0);
    for (size_t r = 0; r < v.size(); ++r) out[rmap[r]] = v[r];
    v = std::move(out);
  };
  move_vec(known_demand_);
  job_index_.ForEachSlot([&](int j) {
    Job& job = jobs_[j];
    move_vec(job.demand);
    move_vec(job.per_replica);
    if (!job.borrowed.empty()) move_vec(job.borrowed);
    ResourceMask mask = 0;
    for (int r = 0; r < old.num_resources(); ++r) {
      if (job.requested >> r & 1) mask |= ResourceMask{1} << rmap[r];
    }
    job.requested = mask;
    job.team = nmap[job.team];
    job.cluster = cmap[job.cluster];
    for (auto& hold : job.holds) {
      move_vec(hold.amount);
      hold.leaf = nmap[hold.leaf];
      hold.cluster = cmap[hold.cluster];
    }
    if (job.exceeds_max) job.reason.clear();  // the config changed: retry.
    job.exceeds_max = false;
    job.parked_stamp = 0;
  });
  std::vector<NodeState> next(config.nodes.size());
  for (auto& n : next) {
    n.usage.assign(newR, 0);
    n.queued.assign(newR, 0);
    n.pending_demand.resize(newR);
  }
  teams_with_pending_.clear();
  teams_with_growable_.clear();
  for (size_t n = 0; n < nodes_.size(); ++n) {
    if (nmap[n] < 0) continue;
    NodeState& to = next[nmap[n]];
    to.running = std::move(nodes_[n].running);
    to.pending = std::move(nodes_[n].pending);
    to.growable = std::move(nodes_[n].growable);
    if (!to.growable.empty()) teams_with_growable_.insert(nmap[n]);
    for (const QueueKey& k : to.pending) {
      for (int r = 0; r < newR; ++r) {
        to.queued[r] += jobs_[k.job].demand[r];
        to.pending_demand[r].insert(jobs_[k.job].demand[r]);
      }
    }
    if (!to.pending.empty()) teams_with_pending_.insert(nmap[n]);
  }
  nodes_ = std::move(next);
  ++quota_generation_;
  config_ = std::move(config);
  cluster_used_.assign(config_.clusters.size(), std::vector<Quantity>(newR, 0));
  RecomputeUsage();
}

void State::ReplaceQuota(const CompiledConfig& config) {
  const bool same_shape = config.resources == config_.resources && config.clusters.size() == config_.clusters.size() &&
                          config.nodes.size() == config_.nodes.size() &&
                          std::equal(config.nodes.begin(), config.nodes.end(), config_.nodes.begin(),
                                     [](const NodeConfig& a, const NodeConfig& b) { return a.name == b.name; });
  if (!same_shape) {
    ReconfigureQuota(config);
    return;
  }
  // What ReconfigureQuota does when every map is the identity.
  job_index_.ForEachSlot([&](int j) {
    Job& job = jobs_[j];
    if (job.exceeds_max) job.reason.clear();  // the config changed: retry.
    job.exceeds_max = false;
    job.parked_stamp = 0;
  });
  for (NodeState& n : nodes_) n.stuck = false;
  for (size_t i = 0; i < config.nodes.size(); ++i) {
    const NodeConfig& from = config.nodes[i];
    NodeConfig& to = config_.nodes[i];
    to.guaranteed = from.guaranteed;  // equal sizes: no allocation.
    to.borrow_limit = from.borrow_limit;
    to.lend_limit = from.lend_limit;
    to.private_part = from.private_part;
    to.potential = from.potential;
    to.lendable = from.lendable;
    to.share_resource = from.share_resource;
  }
  config_.warnings = config.warnings;
  ++quota_generation_;
  RecomputeUsage();
}

NamedQuantities State::Named(const std::vector<Quantity>& v, ResourceMask mask) const {
  NamedQuantities out;
  for (int r = 0; r < num_resources(); ++r) {
    if (mask >> r & 1) out.emplace_back(config_.resources[r], v[r]);
  }
  return out;
}

}  // namespace tidegate::core
