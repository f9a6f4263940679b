// Job traces for `tidegate simulate --trace` (docs/design.md §9, data/README.md):
// a CSV with the header `job_id,team,submit_s,duration_s,gpus,gpu_type,status`,
// one job per row, replayed as rigid submits against the scenario's config,
// or, with `simulate --trace-elastic`, multi-GPU rows as elastic jobs.
//
// Parsing and planning are separate and pure so both can be tested without
// files or a broker: ParseTrace checks the file's shape (a malformed row is an
// error naming FILE:LINE and the field), PlanTrace decides what each valid row
// becomes (a submit, or a counted skip).
#ifndef TIDEGATE_BROKER_SIM_TRACE_H_
#define TIDEGATE_BROKER_SIM_TRACE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "broker/core/types.h"
#include "tidegate/v1/config.pb.h"

namespace tidegate::sim {

inline constexpr std::string_view kTraceHeader =
    "job_id,team,submit_s,duration_s,gpus,gpu_type,status";

struct TraceRow {
  int line = 0;  // 1-based line number in the file.
  std::string job_id;
  std::string team;
  double submit_s = 0;                // >= 0.
  std::optional<double> duration_s;   // >= 0; nullopt when the cell is empty.
  double gpus = 0;                    // may be fractional, zero or negative.
  std::string gpu_type;               // may be empty.
  std::string status;                 // may be empty.
};

// How PlanTrace turns rows into jobs. Kept with the Trace (set by the CLI) so
// the simulator, which only passes the Trace through, needs no new option.
struct TracePlanOptions {
  // `simulate --trace-elastic`: a row with G = ceil(gpus) > 1 becomes an
  // elastic job of one-GPU replicas, elastic {min: ceil(G/2), max: G}: it
  // starts as soon as half its GPUs are free, grows one GPU at a time into
  // free capacity and shrinks (down to half) before it is evicted. It never
  // runs at less than half its recorded size, so it is at most 2x slower
  // than recorded and its per-GPU batch changes by at most 2x (an assumed
  // bound on what a data-parallel job absorbs without re-tuning; a 128-GPU
  // job on one GPU would be another job). Its work is unchanged:
  // run_s = duration_s at full size (the simulator progresses an elastic job
  // at replicas / max). One-GPU rows stay rigid.
  bool elastic_multi_gpu = false;
};

struct Trace {
  std::string path;
  std::vector<TraceRow> rows;  // file order.
  TracePlanOptions plan;       // default: every row a rigid job.
};

// Parses CSV text. `path` is only used in messages. Errors (INVALID_ARGUMENT)
// read "PATH:LINE: FIELD: reason", e.g.
//   "jobs.csv:12: gpus: \"two\" is not a number"
//   "jobs.csv:7: expected 7 columns (job_id,...), got 5"
// A missing or different header is an error at line 1. Blank lines and a
// trailing "\r" are ignored. `duration_s` may be empty (a job with no known
// end); every other number is required. Quoting is not supported: the format
// has no field that needs it.
absl::StatusOr<Trace> ParseTrace(std::string_view text, std::string_view path);

// Reads and parses a file; NOT_FOUND / INVALID_ARGUMENT naming the path.
absl::StatusOr<Trace> ReadTraceFile(const std::string& path);

// What the rows amount to, for stderr and the summary's "trace" object.
struct TraceStats {
  int64_t rows = 0;          // data rows in the file.
  int64_t submitted = 0;     // rows turned into submits.
  int64_t unknown_team = 0;  // rows whose team is not a team of the config.
  int64_t zero_gpu = 0;      // rows with gpus <= 0.
  int64_t elastic = 0;       // submits made elastic (TracePlanOptions).
};

// One trace row as the simulator replays it.
struct TraceSubmit {
  core::Time offset_ms = 0;            // submit time from the scenario start.
  v1::JobSpec spec;                    // rigid: replicas 1, {gpu: ceil(gpus)};
                                       // or elastic, see TracePlanOptions.
  std::optional<core::Time> run_ms;    // the job's work, from duration_s.
};

struct TracePlan {
  std::vector<TraceSubmit> submits;  // stable-sorted by offset_ms.
  TraceStats stats;
  std::vector<std::string> unknown_teams;  // distinct, sorted, for messages.
};

// Turns rows into submits: rows with gpus <= 0 are skipped (zero_gpu), rows
// whose team is not in `teams` are skipped (unknown_team); the rest become a
// submit to `cluster` with per_replica {gpu: ceil(gpus)} and run_s =
// duration_s (with trace.plan.elastic_multi_gpu, rows with more than one GPU
// become elastic jobs instead, see TracePlanOptions). Rows are stable-sorted
// by submit time (file order on ties).
TracePlan PlanTrace(const Trace& trace, const absl::flat_hash_set<std::string>& teams,
                    const std::string& cluster);

}  // namespace tidegate::sim

#endif  // TIDEGATE_BROKER_SIM_TRACE_H_
