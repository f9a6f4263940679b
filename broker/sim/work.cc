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

namespace {

using Work = WorkTracker::Work;
using Int128 = WorkTracker::Int128;

Int128 Gcd(Int128 a, Int128 b) {
  if (a < 0) a = -a;
  while (b != 0) {
    const Int128 t = a % b;
    a = b;
    b = t;
  }
  return a == 0 ? 1 : a;
}

Work Reduce(Int128 num, Int128 den) {
  const Int128 g = Gcd(num, den);
  return Work{num / g, den / g};
}

Work Add(const Work& a, const Work& b) { return Reduce(a.num * b.den + b.num * a.den, a.den * b.den); }
Work Sub(const Work& a, const Work& b) { return Reduce(a.num * b.den - b.num * a.den, a.den * b.den); }
int Cmp(const Work& a, const Work& b) {
  const Int128 l = a.num * b.den, r = b.num * a.den;
  return l < r ? -1 : l > r ? 1 : 0;
}
const Work& Max(const Work& a, const Work& b) { return Cmp(a, b) < 0 ? b : a; }
const Work& Min(const Work& a, const Work& b) { return Cmp(a, b) < 0 ? a : b; }
Work Ms(core::Time ms) { return Work{ms, 1}; }
// Whole ms, rounded down (lost work is reported in ms).
core::Time Floor(const Work& w) { return static_cast<core::Time>(w.num / w.den); }

}  // namespace

WorkTracker::Work WorkTracker::Job::After(core::Time ran) const {
  return Add(done, Reduce(static_cast<Int128>(ran) * rate_num, rate_den));
}

void WorkTracker::Start(const std::string& job, core::Time t) {
  auto it = jobs_.find(job);
  if (it == jobs_.end() || it->second.ended || it->second.running_since >= 0) return;
  Job& j = it->second;
  j.running_since = t;
  ++j.generation;
  if (j.spec.work_ms) {
    // remaining / rate, exactly, rounded up to the clock's ms only here.
    const Work remaining = Max(Ms(0), Sub(Ms(*j.spec.work_ms), j.done));
    const Int128 num = remaining.num * j.rate_den;
    const Int128 den = remaining.den * j.rate_num;
    const core::Time wall = static_cast<core::Time>((num + den - 1) / den);
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
    j.done = j.After(std::max<core::Time>(0, t - j.running_since));
    j.checkpoint = j.done;
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
  const Work progress = j.After(ran);
  Work safe = Max(j.checkpoint, Min(j.done, progress));
  if (j.spec.checkpoint_interval_ms && *j.spec.checkpoint_interval_ms > 0) {
    const core::Time interval = *j.spec.checkpoint_interval_ms;
    safe = Max(safe, j.After((ran / interval) * interval));
  }
  safe = Min(safe, progress);
  const core::Time lost = Floor(progress) - Floor(safe);
  j.done = safe;
  j.checkpoint = safe;
  j.running_since = -1;
  ++j.generation;
  return lost;
}

void WorkTracker::Checkpoint(const std::string& job, core::Time t) {
  auto it = jobs_.find(job);
  if (it == jobs_.end() || it->second.running_since < 0) return;
  Job& j = it->second;
  j.checkpoint = j.After(std::max<core::Time>(0, t - j.running_since));
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
  if (j.running_since >= 0 && j.spec.work_ms) j.done = Ms(*j.spec.work_ms);
  j.running_since = -1;
  ++j.generation;
  return job;
}

}  // namespace tidegate::sim
