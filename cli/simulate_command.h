// `tidegate simulate SCENARIO.yaml [-o jsonl|table] [--check] [--trace CSV
//  [--trace-elastic]] [--progress]` (docs/design.md §9): runs a scenario through the
// broker core on a virtual clock. --trace-elastic replays the trace's
// multi-GPU jobs as elastic jobs (sim::TracePlanOptions).
//
// Output on stdout: `-o jsonl` (default) one JSON object per decision record
// then the summary; `-o table` a per-team table, utilisation, reclaim latency,
// job counts and, up to 200 records, the decision log. On stderr: errors,
// trace statistics, progress (when stderr is a terminal, or with --progress)
// and, with --check, the expectations' report ending in
// "expectations: N passed, M failed". stdout stays machine-readable.
//
// Exit: 0 ok; 1 an expectation failed (--check); 2 bad input (unreadable or
// malformed scenario or trace, refused scenario, bad config).
#ifndef TIDEGATE_CLI_SIMULATE_COMMAND_H_
#define TIDEGATE_CLI_SIMULATE_COMMAND_H_

#include <string>

#include "cli/command.h"

namespace CLI {
class App;
}  // namespace CLI

namespace tidegate::cli {

struct SimulateOptions {
  std::string scenario_path;
  std::string output = "jsonl";  // jsonl | table
  bool check = false;
  std::string trace_path;        // empty = none.
  bool trace_elastic = false;    // multi-GPU trace rows as elastic jobs; needs a trace.
  bool progress = false;         // force progress lines on stderr.
};

// Runs the subcommand; returns the exit code.
int RunSimulate(const SimulateOptions& options, const Io& io);

// Registers `simulate` on `app`; when it is chosen, its exit code lands in
// *exit_code.
void AddSimulateCommand(CLI::App& app, const Io& io, int* exit_code);

}  // namespace tidegate::cli

#endif  // TIDEGATE_CLI_SIMULATE_COMMAND_H_
