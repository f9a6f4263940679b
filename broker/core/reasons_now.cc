#include "broker/core/reasons_now.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "broker/core/reasons.h"
#include "broker/core/state.h"

namespace tidegate::core {

// The picture's numbers, as State's are (State::Available's formula).
class WaitPicture::Numbers final : public ReasonNumbers {
 public:
  explicit Numbers(const WaitPicture& p) : p_(p) {}
  const CompiledConfig& config() const override { return *p_.config_; }
  Quantity usage(int node, int r) const override { return p_.usage_[node * p_.resources_ + r]; }
  Quantity free_capacity(int cluster, int r) const override {
    return p_.config_->clusters[cluster].capacity[r] - p_.cluster_used_[cluster * p_.resources_ + r];
  }
  void Available(int n, std::vector<Quantity>* out) const override {
    const CompiledConfig& c = *p_.config_;
    out->resize(c.num_resources());
    const auto& path = c.nodes[n].path;
    for (int r = 0; r < c.num_resources(); ++r) {
      Quantity avail = c.nodes[path[0]].guaranteed[r] - usage(path[0], r);
      for (size_t i = 1; i < path.size(); ++i) {
        const int a = path[i];
        const NodeConfig& nc = c.nodes[a];
        const Quantity own = SatSub(SatAdd(nc.guaranteed[r], nc.borrow_limit[r]), usage(a, r));
        const Quantity slack = std::max<Quantity>(0, nc.private_part[r] - usage(a, r));
        avail = std::min(own, SatAdd(slack, avail));
      }
      (*out)[r] = avail;
    }
  }

 private:
  const WaitPicture& p_;
};

WaitPicture::~WaitPicture() = default;

std::shared_ptr<const WaitPicture> WaitPicture::Take(const State& s, const WaitPicture* prev) {
  std::shared_ptr<WaitPicture> p(new WaitPicture());
  p->quota_generation_ = s.quota_generation();
  if (prev && prev->config_ && prev->quota_generation_ == s.quota_generation() &&
      prev->config_->nodes.size() == s.config().nodes.size()) {
    p->config_ = prev->config_;
  } else {
    p->config_ = std::make_shared<const CompiledConfig>(s.config());
  }
  const size_t nodes = s.config().nodes.size();
  const int resources = s.num_resources();
  p->resources_ = resources;
  p->usage_.reserve(nodes * resources);
  for (size_t n = 0; n < nodes; ++n) {
    const std::vector<Quantity>& u = s.node_state(static_cast<int>(n)).usage;
    p->usage_.insert(p->usage_.end(), u.begin(), u.end());
  }
  p->cluster_used_.reserve(s.config().clusters.size() * resources);
  for (size_t k = 0; k < s.config().clusters.size(); ++k) {
    for (int r = 0; r < resources; ++r) p->cluster_used_.push_back(s.cluster_used(static_cast<int>(k), r));
  }
  p->teams_.resize(nodes);
  for (int n : s.teams_with_pending()) {
    const NodeState& ns = s.node_state(n);
    WaitingTeam& t = p->teams_[n];
    t.stuck = ns.stuck;
    t.strict_fifo = s.node(n).policy.strict_fifo;
    if (t.strict_fifo && !ns.pending.empty()) t.head = s.job(ns.pending.begin()->job).id;
  }
  return p;
}

std::string WaitPicture::Reason(const std::string& job, const std::string& team, const std::string& cluster,
                                const NamedQuantities& demand, const std::string& stored) const {
  const CompiledConfig& c = *config_;
  const auto t = c.node_index.find(team);
  const auto k = c.cluster_index.find(cluster);
  if (t == c.node_index.end() || k == c.cluster_index.end()) return stored;
  const WaitingTeam& waiting = teams_[t->second];
  if (!waiting.stuck && !waiting.strict_fifo) return stored;  // the common case: no work.
  Job facts;
  facts.id = job;
  facts.team = t->second;
  facts.cluster = k->second;
  facts.demand.assign(c.num_resources(), 0);
  for (const auto& [name, q] : demand) {
    const auto r = c.resource_index.find(name);
    if (r == c.resource_index.end()) return stored;
    facts.demand[r->second] = q;
    facts.requested |= ResourceMask{1} << r->second;
  }
  // The stored reason was the core's ReasonNow when the job was last read:
  // its code says whether it waits for victims or for its backoff to end
  // (the core re-reads a job whose backoff ends).
  const bool waits_for_victims = absl::StartsWith(stored, "reclaiming");
  const bool in_backoff = ReasonNamesBackoff(stored);
  return ReasonNow(Numbers(*this), waiting, facts, waits_for_victims, in_backoff, stored);
}

}  // namespace tidegate::core
