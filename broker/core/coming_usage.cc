#include "broker/core/coming_usage.h"

#include <algorithm>

namespace tidegate::core {

ComingUsage::ComingUsage(const CompiledConfig* config, std::vector<std::vector<Quantity>> leaf_u)
    : c_(config), R_(config->num_resources()), u_(std::move(leaf_u)) {
  Sum(kRootNode);
}

void ComingUsage::Sum(int n) {
  if (c_->nodes[n].leaf && n != kRootNode) return;
  std::fill(u_[n].begin(), u_[n].end(), 0);
  for (int c : c_->nodes[n].children) {
    Sum(c);
    for (int r = 0; r < R_; ++r) u_[n][r] += std::max(u_[c][r], c_->nodes[c].p[r]);
  }
}

void ComingUsage::Add(int leaf, const std::vector<Quantity>& amount, int sign) {
  for (int r = 0; r < R_; ++r) {
    Quantity delta = sign * amount[r];
    int n = leaf;
    while (delta != 0 && n != kRootNode) {
      const Quantity p = c_->nodes[n].p[r];
      const Quantity before = std::max(u_[n][r], p);
      u_[n][r] += delta;
      const Quantity after = std::max(u_[n][r], p);
      delta = after - before;
      n = c_->nodes[n].parent;
    }
    if (n == kRootNode) u_[kRootNode][r] += delta;
  }
}

bool ComingUsage::NodeFits(int n) const {
  for (int r = 0; r < R_; ++r) {
    const NodeConfig& nc = c_->nodes[n];
    const Quantity limit = n == kRootNode ? nc.g[r] : SatAdd(nc.g[r], nc.b[r]);
    if (u_[n][r] > limit) return false;
  }
  return true;
}

bool ComingUsage::PathFits(int n) const {
  for (int a : c_->nodes[n].path) {
    if (!NodeFits(a)) return false;
  }
  return true;
}

bool ComingUsage::WithinGuarantee(int n) const {
  for (int r = 0; r < R_; ++r) {
    if (u_[n][r] > c_->nodes[n].g[r]) return false;
  }
  return true;
}

Quantity ComingUsage::Available(int n, int r) const {
  const NodeConfig& nc = c_->nodes[n];
  if (n == kRootNode) return nc.g[r] - u_[n][r];
  const Quantity own = SatSub(SatAdd(nc.g[r], nc.b[r]), u_[n][r]);
  const Quantity slack = std::max<Quantity>(0, nc.p[r] - u_[n][r]);
  return std::min(own, SatAdd(slack, Available(nc.parent, r)));
}

bool ComingUsage::FitsWith(int leaf, const std::vector<Quantity>& extra) const {
  for (int r = 0; r < R_; ++r) {
    if (extra[r] > 0 && extra[r] > std::max<Quantity>(0, Available(leaf, r))) return false;
  }
  return true;
}

}  // namespace tidegate::core
