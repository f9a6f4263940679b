// The job subcommands (docs/design.md §3, §7: AdmissionService), for team leads,
// scripts and scheduler hooks:
//
//   tidegate admit --job ID --team T [--cluster C] [--replicas N | --elastic MIN:MAX]
//                  --per-replica gpu=8[,cpu=4000] [--priority P] [--grace-s S]
//                  [--label K=V]... [--wait [--wait-timeout D]] [-o table|json]
//   tidegate release ID [-o table|json]
//   tidegate jobs [--team T] [--state S] [-o table|json]
//   tidegate job ID [-o table|json]
//
// admit prints the decision, one line: "ID: ADMITTED_BORROWING: borrowing
// gpu=8 (reclaimable)", "ID: QUEUED: REASON (position 2 in research's
// queue)"; -o json prints the AdmitResponse. Admit does not compute the queue
// position, so for QUEUED the CLI asks GetJob for it (best effort). It exits 0 for every
// decision but REJECTED (2). With --wait, a decision that is not yet an
// admission (QUEUED, RECLAIMING, PREEMPTING) is followed by WaitAdmission: one
// line per change of the job's state ("ID: queued, position 2 in research's
// queue: REASON"; -o json: one WaitAdmissionResponse per line) until it is
// admitted (exit 0), ends or is rejected while waiting (exit 1), --wait-timeout passes
// (exit 1) or Ctrl-C (exit 130; the job stays queued). If the broker goes away
// during the wait, the wait resumes when it is back (cli/wait_command.h).
//
// jobs prints one row per job: job, team, cluster, state, replicas, demand,
// priority, age, reason. job prints every field of one job and, while it is
// queued, what it waits for and its queue position.
#ifndef TIDEGATE_CLI_JOBS_COMMAND_H_
#define TIDEGATE_CLI_JOBS_COMMAND_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/client.h"
#include "cli/command.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "tidegate/v1/service.pb.h"

namespace CLI {
class App;
}  // namespace CLI

namespace tidegate::cli {

// The flags of `tidegate admit`, as written (parsed by BuildJobSpec).
struct AdmitOptions {
  std::string job;
  std::string team;
  std::string cluster;                 // empty = the broker's default.
  std::string replicas;                // empty = the broker's default (1).
  std::string elastic;                 // "MIN:MAX": an elastic job.
  std::string per_replica;             // "gpu=8,cpu=4000"
  int32_t priority = 0;
  std::string grace_s;                 // empty = the policy's default_grace_s.
  std::vector<std::string> labels;     // "KEY=VALUE" each.
  bool wait = false;
  std::string wait_timeout;            // empty = wait until admitted.
  std::string output = "table";
};

// The JobSpec that `options` describe; INVALID_ARGUMENT naming the flag and
// its value when one is malformed (--per-replica, --replicas, --grace-s,
// --label, --wait-timeout) or a required one is empty.
absl::StatusOr<v1::JobSpec> BuildJobSpec(const AdmitOptions& options);

// One line, no newline: "ID: DECISION" and what goes with it: the borrowed
// amount, the victims, the reason and the queue position.
std::string DescribeAdmit(const std::string& job, const v1::AdmitResponse& response);

// A job's state for the --wait log, no job id, no newline: "admitted",
// "admitted, borrowing gpu=8", "queued, position 2 in research's queue:
// REASON", "ended".
std::string DescribeWaitState(const v1::JobInfo& job);

// The `jobs` table.
void PrintJobsTable(const google::protobuf::RepeatedPtrField<v1::JobInfo>& jobs, int64_t now_ms,
                    std::ostream& out);

// The `job ID` view: "field:  value" lines.
void PrintJobDetails(const v1::JobInfo& job, int64_t now_ms, std::ostream& out);

// Registers admit, release, jobs and job on `app`. `client` is read when a
// subcommand runs (after parsing); the chosen one's exit code lands in
// *exit_code.
void AddJobsCommands(CLI::App& app, const Io& io, const ClientOptions& client, int* exit_code);

}  // namespace tidegate::cli

#endif  // TIDEGATE_CLI_JOBS_COMMAND_H_
