// The team figures readers see (`tidegate teams`, GetTeam, ListTeams), from
// the core's per-team views. Separate from the job read model so the rules
// that team leads read live in one place:
//   - used: what jobs hold (an inner team: its subtree's jobs), never the
//     idle private parts docs/policy.md's u(n) counts;
//   - private: guarantee kept from lending that no job uses now;
//   - borrowed: max(0, u − g) as the policy sees it (used + private − g);
//   - lent: of its guarantee, what teams outside it use now, attributed by
//     ledger::AttributeLoans (the same rule the GPU-hours of `loans` use);
//   - queued, running_jobs, queued_jobs: an inner team's are its subtree's.
// Sums are checked: a sum that overflows int64 shows int64's maximum, never
// a wrapped number, and does not change any other team's figures.
//
// Pure; thread-compatible.
#ifndef TIDEGATE_BROKER_SERVICE_READ_MODEL_TEAMS_H_
#define TIDEGATE_BROKER_SERVICE_READ_MODEL_TEAMS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "ledger/accounting_loans.h"

#include "tidegate/v1/config.pb.h"
#include "tidegate/v1/service.pb.h"

namespace tidegate::service {

// The figures of one team, as FillTeamFigures writes them.
struct TeamFigures {
  struct Resource {
    int64_t queued = 0;
    bool known = false;  // false: keep the core's used and borrowed (the accountant logs why)
    int64_t used = 0, private_idle = 0, borrowed = 0, lent = 0;
  };
  bool inner = false;  // an inner team shows its subtree's job counts
  int64_t running_jobs = 0, queued_jobs = 0;
  std::vector<Resource> resources;  // the team's resources, in its order
};

// `teams`: every team of `config`, as ToTeamInfo made them from the core.
// Figures parallel to `teams`; ApplyTeamFigures writes one team's, so a
// reader of one team copies one team.
std::vector<TeamFigures> ComputeTeamFigures(const v1::Config& config, const std::vector<const v1::TeamInfo*>& teams);
void ApplyTeamFigures(const TeamFigures& figures, v1::TeamInfo* team);

// A read model's teams in config order, in chunks that models share while
// they do not change (a changed team is a new TeamInfo in a new chunk).
using TeamChunks = std::vector<std::shared_ptr<const std::vector<std::shared_ptr<const v1::TeamInfo>>>>;

// One team's figures without computing every team's: ComputeTeamFigures'
// answer for that team, to the bit, kept between the models of one lineage.
// It moves to the model asked by re-reading only the teams whose TeamInfo is
// not the object it last read (unchanged chunks are skipped whole) and
// settling only their paths of each resource's ledger::LoanTree; queued and
// job totals are summed over the asked team's subtree. So a GetTeam after a
// batch costs the batch's teams and paths, not the 10,000 teams of a config.
// Thread-safe (one mutex): readers of any model of the lineage may ask.
class TeamFiguresCache {
 public:
  TeamFiguresCache();
  ~TeamFiguresCache();
  // `teams` identifies the team list (the same object: the same teams in the
  // same order under `config`); it is held, so its address is never reused.
  // `chunks` hold `count` teams, `chunk_size` a chunk; `index` < count.
  TeamFigures Figures(const std::shared_ptr<const v1::Config>& config, const std::shared_ptr<const void>& teams,
                      const TeamChunks& chunks, size_t chunk_size, size_t count, size_t index);

 private:
  void MoveTo(const std::shared_ptr<const v1::Config>& config, const std::shared_ptr<const void>& teams,
              const TeamChunks& chunks, size_t chunk_size, size_t count) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes team i's new figures; false when its place in the tree changed.
  bool Refresh(size_t i, const v1::TeamInfo& now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Rebuild(const std::shared_ptr<const v1::Config>& config, const std::shared_ptr<const void>& teams,
               const TeamChunks& chunks, size_t chunk_size, size_t count) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  // The model it is at: its config, team list and chunks (held, so the
  // TeamInfo pointers below stay valid).
  std::shared_ptr<const v1::Config> config_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const void> teams_ ABSL_GUARDED_BY(mu_);
  TeamChunks chunks_ ABSL_GUARDED_BY(mu_);
  size_t chunk_size_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<const v1::TeamInfo*> infos_ ABSL_GUARDED_BY(mu_);
  std::vector<std::vector<int>> children_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, int> resource_index_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> resources_ ABSL_GUARDED_BY(mu_);
  std::vector<ledger::LoanTree> trees_ ABSL_GUARDED_BY(mu_);  // per resource, one node per team
  bool cyclic_ ABSL_GUARDED_BY(mu_) = false;
};
// Both, in place, for every team.
void FillTeamFigures(const v1::Config& config, std::vector<v1::TeamInfo>* teams);

}  // namespace tidegate::service

#endif  // TIDEGATE_BROKER_SERVICE_READ_MODEL_TEAMS_H_
