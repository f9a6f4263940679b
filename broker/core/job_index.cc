#include "broker/core/job_index.h"

#include <algorithm>

#include "broker/core/types.h"

namespace tidegate::core {

int JobIndex::Find(std::string_view id) const {
  const Shard& shard = shards_[ShardOf(id)];
  auto it = shard.find(AbslView(id));
  return it == shard.end() ? -1 : it->second;
}

void JobIndex::Set(const std::string& id, int slot) {
  auto [it, inserted] = shards_[ShardOf(id)].insert_or_assign(id, slot);
  if (inserted) ++size_;
}

void JobIndex::Erase(std::string_view id) {
  Shard& shard = shards_[ShardOf(id)];
  auto it = shard.find(AbslView(id));
  if (it == shard.end()) return;
  shard.erase(it);
  --size_;
}

size_t JobIndex::LargestShardCapacity() const {
  size_t largest = 0;
  for (const Shard& shard : shards_) largest = std::max(largest, shard.capacity());
  return largest;
}

}  // namespace tidegate::core
