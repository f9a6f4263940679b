// ComingUsage: the usage u(n) of every node under another compiled quota (a
// tide's coming quota), from the same leaf usage, so the tide can ask "would
// this fit after the change?" before the change (docs/policy.md §1 sums, §6).
#ifndef TIDEGATE_BROKER_CORE_COMING_USAGE_H_
#define TIDEGATE_BROKER_CORE_COMING_USAGE_H_

#include <vector>

#include "broker/core/config.h"
#include "broker/core/types.h"

namespace tidegate::core {

class ComingUsage {
 public:
  // `leaf_u` per node, node-major: node n's usage of resource r at
  // [n * num_resources + r] (inner nodes' entries are ignored and summed).
  // One flat vector: built for every admission test while a tide guard
  // stands, so one allocation rather than one per node.
  ComingUsage(const CompiledConfig* config, std::vector<Quantity> leaf_u);
  void Add(int leaf, const std::vector<Quantity>& amount, int sign);
  bool NodeFits(int n) const;          // u <= g + b (root: u <= g) on every resource.
  bool PathFits(int n) const;          // NodeFits for n and all its ancestors.
  bool WithinGuarantee(int n) const;   // u <= g on every resource.
  // docs/policy.md §2's fit test under this quota: extra_r <= max(0,
  // available(leaf)) on every r with extra_r > 0 (capacity is not tested:
  // it does not follow the tide).
  bool FitsWith(int leaf, const std::vector<Quantity>& extra) const;
  // available(n) for resource r under this quota (docs/policy.md §1).
  Quantity Available(int n, int r) const;

 private:
  void Sum(int n);
  Quantity& u(int n, int r) { return usage_[static_cast<size_t>(n) * num_resources_ + r]; }
  Quantity u(int n, int r) const { return usage_[static_cast<size_t>(n) * num_resources_ + r]; }
  const CompiledConfig* config_;
  int num_resources_;
  std::vector<Quantity> usage_;
};

}  // namespace tidegate::core

#endif  // TIDEGATE_BROKER_CORE_COMING_USAGE_H_
