// The broker core: a pure, deterministic state machine (docs/design.md §1).
//
//   Apply(command, now) -> events
//
// No I/O, no threads, no clock: time is an argument, and the same sequence of
// (command, now) pairs always yields byte-identical events. It implements
// docs/policy.md §1-6: several clusters, drain with grace periods, requeue of
// victims, adopt, elastic growth and shrink with the resize protocol, and the
// daily tide.
//
// Threading: not thread-safe; one owner (the service's core thread, or the
// simulator) calls it.
#ifndef TIDEGATE_BROKER_CORE_BROKER_H_
#define TIDEGATE_BROKER_CORE_BROKER_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "broker/core/events.h"
#include "broker/core/spec_bytes.h"
#include "broker/core/types.h"
#include "tidegate/internal/v1/journal.pb.h"
#include "tidegate/v1/config.pb.h"

namespace tidegate::core {

class State;  // defined in state.h
class WaitPicture;  // defined in reasons_now.h

// A read-only view of one job, for queries and expectations.
struct JobView {
  std::string id;
  std::string team;
  std::string cluster;
  v1::JobState state = v1::JOB_STATE_UNSPECIFIED;
  int64_t replicas = 0;        // current replicas (admitted or requested).
  int32_t priority = 0;
  Time created_at = 0;         // queue-order time.
  Time admitted_at = -1;       // -1 while not holding capacity.
  Time last_admitted_at = -1;  // the latest admission, kept when requeued or ended; -1: never.
  Time ended_at = -1;          // ENDED / REJECTED: when.
  bool borrowing = false;      // its latest admit/resize borrowed something.
  NamedQuantities borrowed;    // ...and how much of each resource (parts > 0).
  NamedQuantities demand;      // replicas x per_replica.
  std::string reason;          // why it waits (queued), why it drains, how it ended.
  // The spec, normalized (defaults filled in), serialized deterministically
  // (spec_bytes.h): a reader that stores or sends it takes the bytes as they
  // are; ParsedSpec() for its fields.
  std::string spec_bytes;
  // Elastic jobs: the latest resize request; pending while resize_from >= 0.
  int64_t epoch = 0;
  int64_t resize_from = -1;
  int64_t resize_to = 0;
  Time resize_deadline = -1;
  std::string resize_reason;

  v1::JobSpec ParsedSpec() const { return ParseSpecBytes(spec_bytes); }
};

// A read-only view of one team node (leaf or inner), per resource.
struct TeamResourceView {
  std::string resource;
  Quantity guaranteed = 0;
  Quantity borrow_limit = kInfinite;  // kInfinite = unlimited.
  Quantity lend_limit = kInfinite;    // kInfinite = lends all.
  Quantity used = 0;                  // u(n), docs/policy.md §1.
  Quantity borrowed = 0;              // max(0, u - g).
  Quantity queued = 0;                // demand of its (subtree's) queued jobs.
};
struct TeamView {
  std::string name;
  std::string parent;  // empty for a top-level team.
  bool leaf = true;
  double weight = 1;
  double share = 0;          // weighted dominant share (docs/policy.md §5), display only.
  int64_t running_jobs = 0;  // leaf: jobs holding capacity.
  int64_t queued_jobs = 0;   // leaf: jobs waiting.
  std::vector<TeamResourceView> resources;  // config resource order.
  // Tide: its rules, the next change (-1: none) and its quota entries from
  // then on; `quota` is its entries in force now.
  std::vector<v1::TideRule> tide;
  Time next_tide_change = -1;
  Time next_tide_lead = -1;
  std::map<std::string, v1::ResourceQuota> next_tide_quota;
  std::map<std::string, v1::ResourceQuota> quota;
};

class Broker {
 public:
  // Validates `config` (docs/policy.md §1) and builds the initial state at `now`.
  // INVALID_ARGUMENT naming the team, cluster or field on a bad config;
  static absl::StatusOr<std::unique_ptr<Broker>> Create(const v1::Config& config, Time now);
  // Rebuilds a core from Snapshot(); it then behaves exactly like the
  // original. INVALID_ARGUMENT when the snapshot is inconsistent.
  static absl::StatusOr<std::unique_ptr<Broker>> Restore(const internal::v1::CoreSnapshot& snapshot);
  ~Broker();

  // The whole state, deterministic (jobs sorted by id).
  internal::v1::CoreSnapshot Snapshot() const;
  // Time of the latest command or tick applied.
  Time Now() const;
  // The config in force (as given, before compilation).
  const v1::Config& Config() const;
  Broker(const Broker&) = delete;
  Broker& operator=(const Broker&) = delete;

  // Runs the time-driven work due at or before `now` (victims whose grace
  // period ended, in time order), then the command, then an admission cycle.
  // `now` must not go backwards (an earlier time is treated as the latest
  // seen). Bad input yields a `reject` (submit) or `error` event and changes
  // nothing else.
  std::vector<Event> Apply(const internal::v1::Command& command, Time now);

  // What Apply would answer to submitting `spec`, when that submit would
  // change nothing: the `reject` event of an invalid spec, the `error` event
  // of an existing id with another spec, or no events for an existing id
  // with the same spec (idempotent). nullopt when the submit would record a
  // new job. Does not apply anything (not even the time-driven work), so a
  // driver may answer such a submit without journalling it and a replay of
  // the journal still gives the same state.
  std::optional<std::vector<Event>> SubmitWithoutEffect(const v1::JobSpec& spec, Time now) const;

  // The earliest time at which time-driven work is due (a grace period ends,
  // a backoff expires), or nullopt when nothing is pending. A driver calls
  // Apply(Tick, t) at that time.
  std::optional<Time> NextDeadline() const;

  // Reads. All are O(1) or O(size of the answer).
  // A live job, or an ended or rejected one still retained (state ENDED or
  // REJECTED; policy.ended_job_retention_s).
  std::optional<JobView> GetJob(std::string_view id) const;
  // The retained ended and rejected jobs, by id.
  std::vector<JobView> ListEndedJobs() const;
  // Ids whose view changed during the latest Apply with no event naming them
  // (a wait reason recomputed, a retained record dropped): readers re-read
  // them. May hold duplicates.
  const std::vector<std::string>& QuietlyChangedIds() const;
  std::optional<TeamView> GetTeam(std::string_view name) const;
  std::vector<JobView> ListJobs() const;           // every live job, by id.
  std::vector<std::string> TeamNames() const;      // config order.
  std::vector<std::string> ClusterNames() const;   // config order.
  // Capacity and current use of one cluster for one resource (0 if unknown).
  Quantity ClusterCapacity(std::string_view cluster, std::string_view resource) const;
  Quantity ClusterUsed(std::string_view cluster, std::string_view resource) const;
  // Config warnings (e.g. guarantees above capacity), for the operator.
  const std::vector<std::string>& Warnings() const;
  const std::vector<std::string>& ResourceNames() const;
  Quantity TotalCapacity(std::string_view resource) const;
  size_t JobCount() const;  // jobs the core remembers (not ended).
  // Bumped whenever the quota in force changes (a config change or a tide
  // boundary), so readers know to re-read every team.
  uint64_t QuotaGeneration() const;
  // What a reader needs to state a queued job's reason with the numbers of
  // now, which GetJob gives (reasons_now.h); shares what it can with `prev`.
  std::shared_ptr<const WaitPicture> TakeWaitPicture(const WaitPicture* prev) const;

 private:
  explicit Broker(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace tidegate::core

#endif  // TIDEGATE_BROKER_CORE_BROKER_H_
