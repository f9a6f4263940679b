#include "broker/sim/job_states.h"

#include <algorithm>

namespace tidegate::sim {

JobStatus& JobStates::Get(const std::string& job) {
  auto [it, inserted] = jobs_.try_emplace(job);
  if (inserted) ++counts_[v1::JOB_STATE_UNSPECIFIED];
  return it->second;
}

void JobStates::Move(JobStatus& job, v1::JobState to) {
  --counts_[job.state];
  job.state = to;
  ++counts_[to];
}

void JobStates::Apply(const core::Event& event) {
  using core::EventType;
  auto any_borrowed = [&] {
    return std::any_of(event.borrowed.begin(), event.borrowed.end(),
                       [](const auto& named) { return named.second > 0; });
  };
  switch (event.type) {
    case EventType::kAdmit: {
      JobStatus& job = Get(event.job);
      Move(job, v1::JOB_STATE_ADMITTED);
      job.replicas = event.replicas;
      job.borrowing = any_borrowed();
      break;
    }
    case EventType::kResize: {
      JobStatus& job = Get(event.job);
      job.replicas = event.to;
      job.borrowing = any_borrowed();
      break;
    }
    case EventType::kQueue: Move(Get(event.job), v1::JOB_STATE_QUEUED); break;
    case EventType::kPreempt: Move(Get(event.job), v1::JOB_STATE_DRAINING); break;
    case EventType::kEnd: Move(Get(event.job), v1::JOB_STATE_ENDED); break;
    case EventType::kReject: Move(Get(event.job), v1::JOB_STATE_REJECTED); break;
    case EventType::kReclaim: {
      JobStatus& job = Get(event.job);
      if (job.state != v1::JOB_STATE_ADMITTED) Move(job, v1::JOB_STATE_QUEUED);
      break;
    }
    case EventType::kError: break;
  }
}

void JobStates::SetState(const std::string& job, v1::JobState state) { Move(Get(job), state); }

const JobStatus* JobStates::Find(const std::string& job) const {
  auto it = jobs_.find(job);
  return it == jobs_.end() ? nullptr : &it->second;
}

int64_t JobStates::Count(v1::JobState state) const {
  return state >= 0 && static_cast<size_t>(state) < counts_.size() ? counts_[state] : 0;
}

}  // namespace tidegate::sim
