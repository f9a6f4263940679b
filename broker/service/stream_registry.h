// The open server streams of one kind (WaitAdmission, WatchResizes, agent
// Connect), by key (a job, an agent's cluster), so that a batch wakes only
// the streams of what it changed and shutdown ends them all.
//
// Contract for Stream: `void Check()` (look at the published model again) and
// `void Close(const Status&)` (end the stream), both thread-safe. A stream
// adds itself when it opens and removes itself when gRPC is done with it
// (OnDone); the registry holds a reference until then.
//
// Threading: thread-safe. Check and Close run without the registry's lock,
// so a stream may call back into the registry (Remove) from them.
#ifndef TIDEGATE_BROKER_SERVICE_STREAM_REGISTRY_H_
#define TIDEGATE_BROKER_SERVICE_STREAM_REGISTRY_H_

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace tidegate::service {

template <typename Stream>
class StreamRegistry {
 public:
  using Streams = std::vector<std::shared_ptr<Stream>>;

  // Registers `stream` under `key`. False once CloseAll ran: the caller ends
  // the stream itself (it opened during shutdown).
  [[nodiscard]] bool Add(const std::string& key, std::shared_ptr<Stream> stream) {
    absl::MutexLock lock(&mu_);
    if (closing_) return false;
    by_key_[key].push_back(std::move(stream));
    return true;
  }

  // Registers `stream` as the only stream of `key` and hands back those it
  // replaces, for the caller to close (an agent that reconnects replaces its
  // old stream). False, replacing nothing, once CloseAll ran.
  [[nodiscard]] bool Replace(const std::string& key, std::shared_ptr<Stream> stream, Streams* replaced) {
    absl::MutexLock lock(&mu_);
    if (closing_) return false;
    Streams& list = by_key_[key];
    replaced->insert(replaced->end(), list.begin(), list.end());
    list.assign(1, std::move(stream));
    return true;
  }

  // Forgets `stream` (a no-op when it is not under `key`).
  void Remove(const std::string& key, const Stream* stream) {
    absl::MutexLock lock(&mu_);
    auto it = by_key_.find(key);
    if (it == by_key_.end()) return;
    Streams& list = it->second;
    list.erase(std::remove_if(list.begin(), list.end(), [&](const auto& s) { return s.get() == stream; }),
               list.end());
    if (list.empty()) by_key_.erase(it);
  }

  // Calls Check on the streams of `keys`.
  void Wake(const std::vector<std::string>& keys) {
    Streams woken;
    {
      absl::MutexLock lock(&mu_);
      if (by_key_.empty()) return;
      for (const auto& key : keys) {
        auto it = by_key_.find(key);
        if (it != by_key_.end()) woken.insert(woken.end(), it->second.begin(), it->second.end());
      }
    }
    for (auto& s : woken) s->Check();
  }

  // Calls Check on every stream.
  void WakeAll() {
    for (auto& s : All()) s->Check();
  }

  // Ends every stream with `status`, and every stream added later (Add and
  // Replace return false).
  template <typename Status>
  void CloseAll(const Status& status) {
    Streams all;
    {
      absl::MutexLock lock(&mu_);
      closing_ = true;
      all = AllLocked();
    }
    for (auto& s : all) s->Close(status);
  }

  // The keys with an open stream.
  std::vector<std::string> Keys() const {
    absl::MutexLock lock(&mu_);
    std::vector<std::string> keys;
    for (const auto& [key, list] : by_key_) keys.push_back(key);
    return keys;
  }

 private:
  Streams All() const {
    absl::MutexLock lock(&mu_);
    return AllLocked();
  }
  Streams AllLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    Streams all;
    for (const auto& [key, list] : by_key_) all.insert(all.end(), list.begin(), list.end());
    return all;
  }

  mutable absl::Mutex mu_;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_map<std::string, Streams> by_key_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tidegate::service

#endif  // TIDEGATE_BROKER_SERVICE_STREAM_REGISTRY_H_
