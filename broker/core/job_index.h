// The live jobs' slots by id (State's index). One hash map of every id stops
// its owner for as long as it takes to rehash all of them each time it
// doubles: 20 ms at 460k jobs and 94 ms at 920k on the writer of a broker
// that keeps every job (docs/performance-service.md, "A stall that grows with
// the jobs"). Here the ids are spread over kShards maps, each growing on its
// own, so one insert rehashes at most about 1/kShards of them.
//
// Order: ForEachSlot visits every entry once, in no particular order (as a hash
// map does); callers must not depend on it.
#ifndef TIDEGATE_BROKER_CORE_JOB_INDEX_H_
#define TIDEGATE_BROKER_CORE_JOB_INDEX_H_

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace tidegate::core {

class JobIndex {
 public:
  static constexpr size_t kShards = 256;

  JobIndex() : shards_(kShards) {}

  int Find(std::string_view id) const;       // -1 when absent.
  void Set(const std::string& id, int slot);  // adds or replaces.
  void Erase(std::string_view id);           // absent: nothing.
  size_t size() const { return size_; }

  // f(slot) for every entry.
  template <typename F> void ForEachSlot(F f) const {
    for (const Shard& shard : shards_) {
      for (const auto& [id, slot] : shard) f(slot);
    }
  }

  // The most entries one insert could rehash at once: the largest shard's
  // capacity (for tests of the spread).
  size_t LargestShardCapacity() const;

 private:
  using Shard = absl::flat_hash_map<std::string, int>;
  // std::hash rather than the maps' own absl hash, so that the ids of one
  // shard do not share the hash bits the map itself probes with.
  static size_t ShardOf(std::string_view id) { return std::hash<std::string_view>{}(id) % kShards; }

  std::vector<Shard> shards_;
  size_t size_ = 0;  // the entries of all shards, so size() need not visit 256 maps
};

}  // namespace tidegate::core

#endif  // TIDEGATE_BROKER_CORE_JOB_INDEX_H_
