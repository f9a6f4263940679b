// The single writer (docs/design.md §1): one thread owns the broker core and the
// ledger's Store. Handlers Submit() commands; the thread takes everything
// queued as one batch, applies each command to the core, journals the batch
// in one transaction (group commit), publishes a new immutable ReadModel for
// readers, and only then hands the answers to a responder thread, which calls
// each caller's `done` (so replies never hold up the next batch).
//
// Bounds against hostile or runaway clients (docs/limits.md): Submit refuses
// a command past its size limit (INVALID_ARGUMENT) or when the queue is full
// (RESOURCE_EXHAUSTED), and drops unknown protobuf fields before anything is
// journalled. A submit that changes nothing (rejected, a conflicting or an
// identical resubmit) is answered from the core without being journalled.
//
// Threading: Submit, Published and Stop are thread-safe; the core and the
// Store are touched only by the loop's own thread; `done` callbacks and the
// publish hook run on the responder thread.
//
// The implementation is split by concept: core_loop.cc (the queue, the
// threads, answering), core_loop_batch.cc (one batch: apply, journal, job
// rows, commit, publish, the commit-failure path, snapshots),
// core_loop_accounting.cc (usage and loan rows), core_loop_snapshot.cc
// (periodic snapshots, captured in a child process and written in parts).
#ifndef TIDEGATE_BROKER_SERVICE_CORE_LOOP_H_
#define TIDEGATE_BROKER_SERVICE_CORE_LOOP_H_

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/status/statusor.h"
#include "broker/core/broker.h"
#include "broker/service/clock.h"
#include "broker/service/read_model.h"
#include "broker/service/snapshot_capture.h"
#include "broker/ledger_ops/recovery.h"
#include "ledger/accounting.h"
#include "ledger/store.h"
#include "tidegate/internal/v1/journal.pb.h"
#include "tidegate/v1/config.pb.h"

namespace tidegate::service {

// What a command did: the core's events, and the read model that includes
// them (so the caller can look its job up).
struct Applied {
  std::vector<core::Event> events;
  std::shared_ptr<const ReadModel> model;
};
using Done = std::function<void(absl::StatusOr<Applied>)>;

// What a published batch changed, for the streams that follow the model:
// the jobs whose published JobInfo may differ from the previous model's.
struct PublishedChange {
  std::vector<std::string> jobs;
};

// What one batch did, for metrics (broker/http): handed to the batch
// observer on the loop thread after the commit (or its failure).
struct BatchStats {
  int64_t commands = 0;         // commands taken from the queue (0: a lone tick)
  bool committed = false;       // false: the ledger refused the batch
  double commit_seconds = 0;    // time spent in Store::Commit
  core::Time now_ms = 0;        // the batch's time
  const std::vector<std::vector<core::Event>>* events = nullptr;  // of journalled commands
  const ReadModel* model = nullptr;  // the model published for it (null when refused)
};

struct CoreLoopOptions {
  // Journal entries between snapshots. A periodic snapshot is captured by a
  // forked child right after a commit (snapshot_capture.h) and written in
  // parts of snapshot_part_bytes, one part per commit, so no batch waits for
  // the whole state; the snapshot at Open and at Stop is written at once.
  int64_t snapshot_every = 10000;
  // ...and the journal committed since the last snapshot reaches this many
  // times that snapshot's size in bytes (both must hold), so the bytes
  // written for snapshots stay at most 1/ratio of the journal's however big
  // the state grows (as Redis' auto-aof-rewrite-percentage), while a
  // restart's replay stays within about ratio × the snapshot's size. 0:
  // entries only. A restarted writer counts from the snapshot it recovered
  // from (its size, the journal replayed); on a new ledger, entries only
  // until the first periodic snapshot. Why 0.5: docs/performance-service.md, "Snapshot interval that
  // grows with the state".
  double snapshot_journal_ratio = 0.5;
  int64_t snapshot_part_bytes = 256 * 1024;
  // A capture still running after this long is killed and counted as
  // failed: a child that hangs must not hold back every later snapshot
  // (the journal, and so a restart's replay, would grow without bound).
  int64_t snapshot_capture_timeout_ms = 10 * 60 * 1000;
  int64_t max_batch = 1024;         // commands per group commit.
  int64_t accounting_every_ms = 1000;
  // After a failed commit, writes are refused at once for this long; then
  // the next batch (or a tick) tries the ledger again.
  int64_t retry_commit_after_ms = 1000;
  // Commands waiting for the writer; past it Submit answers
  // RESOURCE_EXHAUSTED at once instead of queueing unbounded latency.
  int64_t max_queued = 10000;
  // Serialized size of one command (submit, finish, checkpoint, ack_resize,
  // vacate): a job spec is small.
  int64_t max_command_bytes = 64 * 1024;
  // Serialized size of a config-sized command (apply_config, set_quota,
  // set_capacity, adopt from an agent's view).
  int64_t max_config_bytes = 4 * 1024 * 1024;
};

class CoreLoop {
 public:
  // Recovers the core from the store (latest snapshot + journal tail). A
  // store with no snapshot and no journal gets a new core from `config` only
  // with `init` (tidegated --init); without it FAILED_PRECONDITION, since
  // such a file is not a ledger a broker wrote (e.g. one made by `tidegate
  // ledger import-usage`) and starting empty would silently drop every job.
  // If the store's config
  // differs from `config`, `config` is applied as a journalled command and
  // the field-by-field diff is logged (docs/config.md: the file given at
  // start-up is the config in force).
  // `warm`: a core a standby kept up to date (broker/service/leader_tail.h),
  // caught up with the journal's tail instead of recovered from scratch.
  static absl::StatusOr<std::unique_ptr<CoreLoop>> Open(const v1::Config& config, std::unique_ptr<ledger::Store> store,
                                                        Clock* clock, CoreLoopOptions options, bool init,
                                                        std::optional<ledger_ops::RecoveredCore> warm = std::nullopt);
  ~CoreLoop();  // Stop()s.

  void Start();
  // Queues a command; `done` runs on the responder thread after the batch
  // holding it is durable. When the ledger cannot be written (a commit
  // failed: disk full, read-only, I/O error) `done` gets UNAVAILABLE; after
  // disk full or read-only the command changed nothing, after another I/O
  // error the WAL may hold it (the message says it may have been applied and
  // a retry is safe). The core is reloaded from the ledger, writes are
  // refused until a retry commits (CoreLoopOptions::retry_commit_after_ms),
  // reads keep the last acknowledged state. After Stop() began, `done` gets
  // UNAVAILABLE at once; past the size limit INVALID_ARGUMENT and with the
  // queue full RESOURCE_EXHAUSTED, at once on the caller's thread.
  void Submit(internal::v1::Command command, Done done);
  // Like Submit (the same size limit, unknown-field scrubbing and queue
  // bound), but the command is applied to a copy of the core (restored from
  // its snapshot, so O(state)) and neither journalled nor kept: `done` gets
  // the events the real command would cause now. For dry runs.
  void DryRun(internal::v1::Command command, Done done);
  // Finishes what is queued, writes a snapshot (none when the ledger lost
  // acknowledged commits), stops the thread.
  void Stop();

  std::shared_ptr<const ReadModel> Published() const;
  // Runs on the responder thread after the answers of batches that changed
  // some job (e.g. to wake the WaitAdmission streams of those jobs); batches
  // that the responder could not keep up with arrive merged. Set before Start().
  void SetPublishHook(std::function<void(const PublishedChange&)> hook) { publish_hook_ = std::move(hook); }
  // OK while commits succeed; the failed commit's error while writes are
  // refused.
  absl::Status LedgerHealth() const;
  // The published model for looking a job up, and whether the ledger may
  // hold jobs it lacks: from a failed commit that may have been applied (an
  // I/O error, a lost answer) until a reload has read the ledger and
  // published what it holds. The flag is read first and cleared only after
  // that publication, so a lookup that finds it clear reads a model that
  // has the jobs the ledger has.
  struct Lookup {
    std::shared_ptr<const ReadModel> model;
    bool outcome_unknown = false;
    absl::Status ledger_health;  // why, when outcome_unknown
  };
  Lookup PublishedForLookup() const;
  // Runs on the loop thread whenever LedgerHealth() changes (e.g. to report
  // NOT_SERVING on gRPC health). Set before Start().
  void SetHealthHook(std::function<void(const absl::Status&)> hook) { health_hook_ = std::move(hook); }
  // Runs on the loop thread after every commit attempt; must be cheap. Set
  // before Start().
  void SetBatchObserver(std::function<void(const BatchStats&)> observer) { batch_observer_ = std::move(observer); }
  // Wall time (ms) the loop thread last woke up; with it, /healthz tells a
  // stuck or dead writer from an idle one (it wakes at least every tick).
  // 0 once the thread has ended.
  int64_t LastLoopWakeMs() const { return last_wake_ms_.load(std::memory_order_relaxed); }
  // Periodic snapshots whose capture failed (the child failed or died, fork
  // failed) or whose parts could not be written; each is retried after
  // another snapshot_every entries, and nothing is lost meanwhile: the
  // journal holds every entry since the previous snapshot.
  int64_t SnapshotFailures() const { return snapshot_failures_.load(std::memory_order_relaxed); }
  // The next `n` snapshot children exit with an error (or hang) before writing.
  void FailSnapshotChildrenForTests(int n, SnapshotChildFault fault = SnapshotChildFault::kExit) {
    snapshot_child_fault_.store(fault);
    fail_snapshot_children_.store(n);
  }
  ledger::Store& store_for_tests() { return *store_; }
  // The seq of the latest published model: what callers have been answered
  // from. Safe from any thread (seq_ itself is the writer's own).
  int64_t last_seq() const { return Published()->seq(); }
  const CoreLoopOptions& options() const { return options_; }
  int64_t queued_for_tests() const;

 private:
  struct Pending {
    internal::v1::Command command;
    Done done;
    bool dry_run = false;
  };
  // Where the count towards the next periodic snapshot starts: the snapshot
  // the state was recovered from and the journal replayed on it, as if the
  // writer had never stopped (zeros on a new ledger: entries only until the
  // first periodic snapshot).
  struct SnapshotCount {
    int64_t seq = 0;
    int64_t bytes = 0;
    int64_t journal_bytes = 0;
  };
  CoreLoop(std::unique_ptr<core::Broker> broker, std::unique_ptr<ledger::Store> store, Clock* clock,
           CoreLoopOptions options, int64_t seq, SnapshotCount since);
  void Run();
  // Answers a command too large for its kind; OK when it fits.
  absl::Status CheckSize(const internal::v1::Command& command) const;
  bool TickDue(core::Time now) const;
  void ApplyBatch(std::vector<Pending> batch);
  // The query-table row of every job in `touched`, from the core's view, or
  // for a job that ended or was rejected in this batch, from its last event
  // and what readers knew of it (`before`); each row's team joins
  // `changed_teams`. The read-model record of each job the core still
  // knows goes to `records` (the next model takes it, so each job's view is
  // read and its spec serialized once per batch).
  void AddJobRows(const std::vector<std::string>& touched,
                  const absl::flat_hash_map<std::string, const core::Event*>& last_event, const ReadModel& before,
                  core::Time now, std::vector<ledger::JobRow>* rows, std::vector<std::string>* changed_teams,
                  ReadModel::Records* records) const;
  // The commit-failure path: answers the batch UNAVAILABLE, keeps its usage
  // rows for the next commit, reloads the core from the ledger. `touched`:
  // the batch's jobs.
  void CommitFailed(const absl::Status& failure, std::vector<Pending> batch, ledger::Batch refused,
                    const std::vector<std::string>& touched, core::Time now);
  // Reloads the core from the ledger; false (logged) when the ledger cannot
  // be read either, so the core stays unusable until a later retry. A ledger
  // ahead of the published model (a failed commit that was applied) is
  // published: readers, and retries answered without a commit, see it. A
  // ledger behind it has lost acknowledged commits: false, and writes are
  // refused for good (`ledger_lost_`).
  bool ReloadCore();
  void SetLedgerHealth(absl::Status health);
  // Answers UNAVAILABLE (writes refused until the retry); `surely_unwritten`
  // says whether the answer may promise that nothing was changed.
  void Refuse(std::vector<Pending> batch, bool surely_unwritten = true);
  // Submit and DryRun: the same size limit, field scrubbing and queue bound.
  void Enqueue(internal::v1::Command command, Done done, bool dry_run);
  // The final snapshot at a stop, with the usage rows refused batches left
  // held; none (OK) on a ledger that lost acknowledged commits.
  absl::Status Snapshot();
  // Periodic snapshots (core_loop_snapshot.cc), all on the loop thread:
  // the parts (and at the end the row) of a captured snapshot, added to a
  // batch about to commit; what a committed batch advances; starting a
  // capture of the state just committed when one is due; taking a finished
  // capture and writing a part alone when no batch carried one.
  void AddSnapshotParts(ledger::Batch* out);
  void SnapshotPartsCommitted(const ledger::Batch& committed);
  void MaybeStartSnapshot(core::Time now);
  bool SnapshotDue() const;
  // A capture or its parts failed: the journal it would have covered counts
  // again, so the retry waits only for another snapshot_every entries.
  void SnapshotNotTaken();
  void CollectSnapshot();
  void WriteSnapshotPartAlone();
  bool SnapshotPartsPending() const { return snapshot_parts_.has_value(); }
  void AbandonSnapshot(const std::string& why);
  std::vector<core::Event> DryRunEvents(const internal::v1::Command& command, core::Time now) const;

  // Usage and loans: observes the leaves of `changed_teams` (every team when
  // null or after a config change) at `now`; with take_rows, moves the
  // accumulated hourly usage and loans into the batch.
  void Account(core::Time now, bool take_rows, std::vector<ledger::UsageRow>* usage,
               std::vector<ledger::LoanRow>* loans, const std::vector<std::string>* changed_teams = nullptr);
  // Re-reads every team into observed_ (after a config change or a reload).
  void ObserveAllTeams();
  // Adds the usage and loan rows of refused batches to `out`, merged by key.
  void AddUnwrittenRows(ledger::Batch* out) const;

  // Loop thread only (and Open, before the threads start).
  std::unique_ptr<core::Broker> broker_;
  std::unique_ptr<ledger::Store> store_;
  Clock* clock_;
  CoreLoopOptions options_;
  int64_t seq_;
  int64_t last_snapshot_seq_ = 0;
  core::Time last_accounting_ = 0;
  core::Time last_tick_ = 0;
  ledger::Accountant accountant_;
  std::vector<std::string> accounting_problems_;  // the latest reported
  // The tree as last observed, and where each leaf's rows are in it, so a
  // batch re-reads only the teams its jobs are in, not every team.
  ledger::Observation observed_;
  absl::flat_hash_map<std::string, std::vector<size_t>> observed_leaf_rows_;
  bool observed_valid_ = false;
  std::function<void(const PublishedChange&)> publish_hook_;
  std::function<void(const absl::Status&)> health_hook_;
  std::function<void(const BatchStats&)> batch_observer_;
  std::atomic<int64_t> last_wake_ms_{0};
  // The core holds a batch the ledger refused; when to try the ledger again;
  // usage rows of refused batches, for the next commit.
  bool core_dirty_ = false;
  core::Time retry_commit_at_ = 0;
  // The refused batch, until a reload tells whether the ledger holds it all
  // the same: when it was refused (the accountant observed its state then)
  // and its jobs (woken if it was applied).
  struct Refused {
    core::Time at = 0;
    std::vector<std::string> jobs;
  };
  std::optional<Refused> refused_;
  // The ledger was found behind what was acknowledged (a database failed
  // over to a replica that missed commits). Writing on would reuse the lost
  // seqs for other commands and serve an older state as current, so the
  // broker refuses writes until an operator restarts it, as a standby
  // refuses to take over from such a ledger.
  bool ledger_lost_ = false;
  std::atomic<bool> commit_outcome_unknown_{false};
  std::vector<ledger::UsageRow> unwritten_usage_;
  std::vector<ledger::LoanRow> unwritten_loans_;

  mutable absl::Mutex mu_;
  std::deque<Pending> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::shared_ptr<const ReadModel> published_ ABSL_GUARDED_BY(mu_);
  absl::Status ledger_health_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;

  // Answers wait here for the responder thread (see Respond()).
  void Respond() ABSL_LOCKS_EXCLUDED(answers_mu_);
  void AnswerNow() ABSL_LOCKS_EXCLUDED(answers_mu_);  // before Start(): run queued answers on the caller's thread.
  // Queues answers (and the jobs whose streams to wake) for the responder.
  void QueueAnswers(std::vector<std::pair<Done, absl::StatusOr<Applied>>> answers,
                    const std::vector<std::string>* changed_jobs) ABSL_LOCKS_EXCLUDED(answers_mu_);
  absl::Mutex answers_mu_;
  std::deque<std::pair<Done, absl::StatusOr<Applied>>> answers_ ABSL_GUARDED_BY(answers_mu_);
  bool answers_hook_pending_ ABSL_GUARDED_BY(answers_mu_) = false;
  PublishedChange answers_change_ ABSL_GUARDED_BY(answers_mu_);
  bool answers_done_ ABSL_GUARDED_BY(answers_mu_) = false;
  std::thread responder_;

  // Periodic snapshots (loop thread only, besides the capture's own thread).
  // The seq of the newest snapshot row committed (or at Open, the recovered
  // seq): the final snapshot is skipped when nothing came after it.
  int64_t snapshot_row_seq_ = 0;
  // Payload bytes of the journal committed since the seq of the last
  // snapshot started (what a restart would replay on top of it); the count
  // before that start, restored if it fails; the newest captured snapshot's
  // size (0: none yet, so only snapshot_every counts).
  int64_t journal_bytes_since_snapshot_ = 0;
  int64_t journal_bytes_before_capture_ = 0;
  int64_t snapshot_bytes_ = 0;
  struct SnapshotInParts {
    int64_t seq = 0;
    core::Time at_ms = 0;
    MappedBytes payload;
    uint32_t checksum = 0;
    int64_t parts = 0;
    int64_t next = 0;       // the first part not yet committed
    int64_t capture_ms = 0;  // fork to bytes, for the log
    int64_t fork_us = 0;     // the writer's time in fork(), for the log
  };
  std::optional<SnapshotInParts> snapshot_parts_;
  bool parts_in_last_batch_ = false;
  std::atomic<int64_t> snapshot_failures_{0};
  std::atomic<int> fail_snapshot_children_{0};
  std::atomic<SnapshotChildFault> snapshot_child_fault_{SnapshotChildFault::kExit};
  int64_t capture_seq_ = 0;
  int64_t capture_fork_us_ = 0;
  core::Time capture_at_ms_ = 0;
  bool snapshot_captured_ ABSL_GUARDED_BY(mu_) = false;  // wakes the loop
  // Last: destroyed first, its thread (which takes mu_) joined before the rest.
  std::unique_ptr<SnapshotCapture> capture_;
};

}  // namespace tidegate::service

#endif  // TIDEGATE_BROKER_SERVICE_CORE_LOOP_H_
