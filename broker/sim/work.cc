#include "broker/sim/work.h"

#include <algorithm>

namespace tidegate::sim {

void WorkTracker::Register(const std::string& job, const Spec& spec) {
  auto [it, inserted] = jobs_.try_emplace(job);
  if (!inserted && !it->second.ended) return;
  const uint64_t generation = it->second.generation + 1;
  it->second = Job{};
  it->second.spec = spec;
  it->second.generation = generation;
}

core::Time WorkTracker::Job::Progress(core::Time ran) const {
  return ran * rate_num / rate_den;
}

void WorkTracker::Start(const std::string& job, core::Time t) {
  auto it = jobs_.find(job);
  if (it == jobs_.end() || it->second.ended || it->second.running_since >= 0) return;
  Job& j = it->second;
  j.running_since = t;
  ++j.generation;
  if (j.spec.work_ms) {
    const core::Time remaining = std::max<core::Time>(0, *j.spec.work_ms - j.done_ms);
    const core::Time wall = (remaining * j.rate_den + j.rate_num - 1) / j.rate_num;  // rounds up.
    completions_.push(Completion{t + wall, next_seq_++, j.generation, job});
  }
}

void WorkTracker::SetRate(const std::string& job, core::Time t, int64_t num, int64_t den) {
  auto it = jobs_.find(job);
  if (it == jobs_.end() || it->second.ended || num <= 0 || den <= 0) return;
  Job& j = it->second;
  const bool running = j.running_since >= 0;
  if (running) {
    // A resize re-forms from a checkpoint taken at the resize: nothing lost.
    j.done_ms += j.Progress(std::max<core::Time>(0, t - j.running_since));
    j.checkpoint_ms = j.done_ms;
    j.running_since = -1;
  }
  j.rate_num = num;
  j.rate_den = den;
  if (running) Start(job, t);
}

core::Time WorkTracker::Stop(const std::string& job, core::Time t) {
  auto it = jobs_.find(job);
  if (it == jobs_.end() || it->second.running_since < 0) return 0;
  Job& j = it->second;
  const core::Time ran = std::max<core::Time>(0, t - j.running_since);
  const core::Time progress = j.done_ms + j.Progress(ran);
  core::Time safe = std::max(j.checkpoint_ms, std::min(j.done_ms, progress));
  if (j.spec.checkpoint_interval_ms && *j.spec.checkpoint_interval_ms > 0) {
    const core::Time interval = *j.spec.checkpoint_interval_ms;
    safe = std::max(safe, j.done_ms + j.Progress((ran / interval) * interval));
  }
  safe = std::min(safe, progress);
  j.done_ms = safe;
  j.checkpoint_ms = safe;
  j.running_since = -1;
  ++j.generation;
  return progress - safe;
}

void WorkTracker::Checkpoint(const std::string& job, core::Time t) {
  auto it = jobs_.find(job);
  if (it == jobs_.end() || it->second.running_since < 0) return;
  Job& j = it->second;
  j.checkpoint_ms = j.done_ms + j.Progress(std::max<core::Time>(0, t - j.running_since));
}

void WorkTracker::End(const std::string& job) {
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return;
  it->second.ended = true;
  it->second.running_since = -1;
  ++it->second.generation;
}

void WorkTracker::Prune() {
  while (!completions_.empty()) {
    const Completion& top = completions_.top();
    auto it = jobs_.find(top.job);
    if (it != jobs_.end() && it->second.generation == top.generation) return;
    completions_.pop();
  }
}

std::optional<core::Time> WorkTracker::NextCompletion() {
  Prune();
  if (completions_.empty()) return std::nullopt;
  return completions_.top().at;
}

std::optional<std::string> WorkTracker::PopDue(core::Time t) {
  Prune();
  if (completions_.empty() || completions_.top().at > t) return std::nullopt;
  std::string job = completions_.top().job;
  completions_.pop();
  Job& j = jobs_[job];
  if (j.running_since >= 0 && j.spec.work_ms) j.done_ms = *j.spec.work_ms;
  j.running_since = -1;
  ++j.generation;
  return job;
}

}  // namespace tidegate::sim
