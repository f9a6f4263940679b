// A simulated cluster for tests: an in-memory ClusterDriver that behaves like
// a batch scheduler whose jobs are submitted held. Tests drive it from their
// own thread (Submit, Finish, StartOutside, ...) while an Agent polls it.
//
// Threading: thread-safe.
#ifndef TIDEGATE_ADAPTERS_SIM_SIM_DRIVER_H_
#define TIDEGATE_ADAPTERS_SIM_SIM_DRIVER_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "adapters/agent/driver.h"

namespace tidegate::adapters {

class SimDriver : public ClusterDriver {
 public:
  explicit SimDriver(std::map<std::string, int64_t> capacity) : capacity_(std::move(capacity)) {}

  // The test's side.
  void Submit(const v1::JobSpec& spec);        // held, waits for admission.
  void SubmitBad(const std::string& id, const std::string& problem);
  void StartOutside(const v1::JobSpec& spec);  // runs without the broker.
  void Finish(const std::string& id);          // the job completes.
  void ReleaseOutside(const std::string& id);  // its user releases it: pending, unheld.
  void SetDown(bool down);                     // Observe fails while down.
  int64_t failed_observations();               // Observe calls that failed so far.
  JobPhase PhaseOf(const std::string& id);     // kEnded when unknown.
  bool Signalled(const std::string& id);
  std::string NoteOf(const std::string& id);

  // ClusterDriver. Stop ends the job (cancelled).
  absl::StatusOr<ClusterView> Observe() override;
  absl::Status Start(const std::string& job) override;
  absl::Status Signal(const std::string& job) override;
  absl::Status Stop(const std::string& job) override;
  absl::Status Requeue(const std::string& job) override;  // back to held.
  absl::Status Hold(const std::string& job) override;
  absl::Status Annotate(const std::string& job, const std::string& text) override;

 private:
  struct Job {
    ClusterJob job;
    bool signalled = false;
  };
  absl::Mutex mu_;
  std::map<std::string, int64_t> capacity_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Job> jobs_ ABSL_GUARDED_BY(mu_);
  bool down_ ABSL_GUARDED_BY(mu_) = false;
  int64_t failed_observations_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tidegate::adapters

#endif  // TIDEGATE_ADAPTERS_SIM_SIM_DRIVER_H_
