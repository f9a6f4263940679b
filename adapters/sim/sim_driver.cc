#include "adapters/sim/sim_driver.h"

namespace tidegate::adapters {

void SimDriver::Submit(const v1::JobSpec& spec) {
  absl::MutexLock lock(&mu_);
  Job& j = jobs_[spec.job()];
  j.job.id = spec.job();
  j.job.spec = spec;
  j.job.phase = JobPhase::kWaiting;
  j.job.state = "HELD";
}

void SimDriver::SubmitBad(const std::string& id, const std::string& problem) {
  absl::MutexLock lock(&mu_);
  Job& j = jobs_[id];
  j.job.id = id;
  j.job.problem = problem;
  j.job.phase = JobPhase::kWaiting;
  j.job.state = "HELD";
}

void SimDriver::StartOutside(const v1::JobSpec& spec) {
  absl::MutexLock lock(&mu_);
  Job& j = jobs_[spec.job()];
  j.job.id = spec.job();
  j.job.spec = spec;
  j.job.phase = JobPhase::kRunning;
  j.job.state = "RUNNING";
}

void SimDriver::Finish(const std::string& id) {
  absl::MutexLock lock(&mu_);
  if (auto it = jobs_.find(id); it != jobs_.end()) {
    it->second.job.phase = JobPhase::kEnded;
    it->second.job.state = "COMPLETED";
  }
}

void SimDriver::ReleaseOutside(const std::string& id) {
  absl::MutexLock lock(&mu_);
  if (auto it = jobs_.find(id); it != jobs_.end()) {
    it->second.job.phase = JobPhase::kPending;
    it->second.job.state = "PENDING";
  }
}

void SimDriver::SetDown(bool down) {
  absl::MutexLock lock(&mu_);
  down_ = down;
}

int64_t SimDriver::failed_observations() {
  absl::MutexLock lock(&mu_);
  return failed_observations_;
}

JobPhase SimDriver::PhaseOf(const std::string& id) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(id);
  return it == jobs_.end() ? JobPhase::kEnded : it->second.job.phase;
}

bool SimDriver::Signalled(const std::string& id) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(id);
  return it != jobs_.end() && it->second.signalled;
}

std::string SimDriver::NoteOf(const std::string& id) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(id);
  return it == jobs_.end() ? "" : it->second.job.note;
}

absl::StatusOr<ClusterView> SimDriver::Observe() {
  absl::MutexLock lock(&mu_);
  if (down_) {
    ++failed_observations_;
    return absl::UnavailableError("the simulated scheduler is down");
  }
  ClusterView v;
  v.capacity = capacity_;
  for (const auto& [id, j] : jobs_) v.jobs.push_back(j.job);
  return v;
}

absl::Status SimDriver::Start(const std::string& job) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return absl::NotFoundError(job);
  if (it->second.job.phase == JobPhase::kWaiting) {
    it->second.job.phase = JobPhase::kRunning;
    it->second.job.state = "RUNNING";
  }
  return absl::OkStatus();
}

absl::Status SimDriver::Signal(const std::string& job) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return absl::NotFoundError(job);
  it->second.signalled = true;
  return absl::OkStatus();
}

absl::Status SimDriver::Stop(const std::string& job) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return absl::OkStatus();
  it->second.job.phase = JobPhase::kEnded;
  it->second.job.state = "CANCELLED";
  return absl::OkStatus();
}

absl::Status SimDriver::Requeue(const std::string& job) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return absl::NotFoundError(job);
  it->second.job.phase = JobPhase::kWaiting;
  it->second.job.state = "HELD";
  return absl::OkStatus();
}

absl::Status SimDriver::Hold(const std::string& job) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return absl::NotFoundError(job);
  it->second.job.phase = JobPhase::kWaiting;
  return absl::OkStatus();
}

absl::Status SimDriver::Annotate(const std::string& job, const std::string& text) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return absl::NotFoundError(job);
  it->second.job.note = text;
  return absl::OkStatus();
}

}  // namespace tidegate::adapters
