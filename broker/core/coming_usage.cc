#include "broker/core/coming_usage.h"

#include <algorithm>

namespace tidegate::core {

ComingUsage::ComingUsage(const CompiledConfig* config, std::vector<Quantity> leaf_u)
    : config_(config), num_resources_(config->num_resources()), usage_(std::move(leaf_u)) {
  Sum(kRootNode);
}

void ComingUsage::Sum(int n) {
  if (config_->nodes[n].leaf && n != kRootNode) return;
  for (int r = 0; r < num_resources_; ++r) u(n, r) = 0;
  for (int c : config_->nodes[n].children) {
    Sum(c);
    for (int r = 0; r < num_resources_; ++r) u(n, r) += std::max(u(c, r), config_->nodes[c].private_part[r]);
  }
}

void ComingUsage::Add(int leaf, const std::vector<Quantity>& amount, int sign) {
  for (int r = 0; r < num_resources_; ++r) {
    Quantity delta = sign * amount[r];
    int n = leaf;
    while (delta != 0 && n != kRootNode) {
      const Quantity p = config_->nodes[n].private_part[r];
      const Quantity before = std::max(u(n, r), p);
      u(n, r) += delta;
      const Quantity after = std::max(u(n, r), p);
      delta = after - before;
      n = config_->nodes[n].parent;
    }
    if (n == kRootNode) u(kRootNode, r) += delta;
  }
}

bool ComingUsage::NodeFits(int n) const {
  for (int r = 0; r < num_resources_; ++r) {
    const NodeConfig& nc = config_->nodes[n];
    const Quantity limit = n == kRootNode ? nc.guaranteed[r] : SatAdd(nc.guaranteed[r], nc.borrow_limit[r]);
    if (u(n, r) > limit) return false;
  }
  return true;
}

bool ComingUsage::PathFits(int n) const {
  for (int a : config_->nodes[n].path) {
    if (!NodeFits(a)) return false;
  }
  return true;
}

bool ComingUsage::WithinGuarantee(int n) const {
  for (int r = 0; r < num_resources_; ++r) {
    if (u(n, r) > config_->nodes[n].guaranteed[r]) return false;
  }
  return true;
}

Quantity ComingUsage::Available(int n, int r) const {
  const NodeConfig& nc = config_->nodes[n];
  if (n == kRootNode) return nc.guaranteed[r] - u(n, r);
  const Quantity own = SatSub(SatAdd(nc.guaranteed[r], nc.borrow_limit[r]), u(n, r));
  const Quantity slack = std::max<Quantity>(0, nc.private_part[r] - u(n, r));
  return std::min(own, SatAdd(slack, Available(nc.parent, r)));
}

bool ComingUsage::FitsWith(int leaf, const std::vector<Quantity>& extra) const {
  for (int r = 0; r < num_resources_; ++r) {
    if (extra[r] > 0 && extra[r] > std::max<Quantity>(0, Available(leaf, r))) return false;
  }
  return true;
}

}  // namespace tidegate::core
