#include "cli/simulate_command.h"

#include <memory>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/yaml_loader.h"
#include "broker/sim/records.h"
#include "broker/sim/simulator.h"
#include "broker/sim/trace.h"
#include "cli/exit_codes.h"
#include "cli/simulate_table.h"
#include "tidegate/v1/config.pb.h"

namespace tidegate::cli {
namespace {

// Errors from the simulator start with a field path ("events[3].at: ...");
// put the file and line in front when the source map knows the path.
std::string LocateError(const absl::Status& status, const api::SourceMap& where) {
  const absl::string_view message = status.message();
  const size_t colon = message.find(": ");
  if (colon == absl::string_view::npos) return absl::StrCat(where.filename(), ": ", message);
  const absl::string_view path = message.substr(0, colon);
  if (path.find(' ') != absl::string_view::npos) {
    return absl::StrCat(where.filename(), ": ", message);
  }
  return absl::StrCat(where.Locate(std::string_view(path.data(), path.size())),
                      message.substr(colon));
}

void ReportTrace(const sim::SimResult& result, const std::string& path, std::ostream& err) {
  const sim::TraceStats& t = *result.summary.trace;
  err << "trace " << path << ": " << t.rows << " rows, " << t.submitted << " submitted";
  if (t.elastic > 0) err << " (" << t.elastic << " multi-GPU jobs elastic)";
  if (t.zero_gpu > 0) err << ", " << t.zero_gpu << " skipped with no GPUs";
  if (t.unknown_team > 0) {
    err << ", " << t.unknown_team << " rejected for a team the scenario does not have";
    std::vector<std::string> names = result.unknown_trace_teams;
    constexpr size_t kShown = 10;
    const size_t more = names.size() > kShown ? names.size() - kShown : 0;
    if (more > 0) names.resize(kShown);
    for (std::string& name : names) {
      if (name.empty()) name = "\"\"";
    }
    err << " (" << absl::StrJoin(names, ", ") << (more > 0 ? absl::StrCat(", ", more, " more") : "")
        << ")";
  }
  err << "\n";
}

}  // namespace

int RunSimulate(const SimulateOptions& options, const Io& io) {
  std::ostream& out = *io.out;
  std::ostream& err = *io.err;

  v1::Scenario scenario;
  api::SourceMap where;
  if (absl::Status s = api::LoadYamlFile(options.scenario_path, &scenario, &where); !s.ok()) {
    err << "tidegate simulate: " << s.message() << "\n";
    return kExitBadInput;
  }
  if (options.trace_elastic && options.trace_path.empty()) {
    err << "tidegate simulate: --trace-elastic needs --trace\n";
    return kExitBadInput;
  }
  std::optional<sim::Trace> trace;
  if (!options.trace_path.empty()) {
    absl::StatusOr<sim::Trace> loaded = sim::ReadTraceFile(options.trace_path);
    if (!loaded.ok()) {
      err << "tidegate simulate: " << loaded.status().message() << "\n";
      return kExitBadInput;
    }
    trace = *std::move(loaded);
    trace->plan.elastic_multi_gpu = options.trace_elastic;
  }

  const bool table = options.output == "table";
  std::vector<core::Event> kept;  // for the table's decision log.
  int64_t seen = 0;
  sim::SimOptions sim_options;
  if (trace) sim_options.trace = &*trace;
  sim_options.on_record = [&](const core::Event& event, core::Time start_ms) {
    if (table) {
      if (++seen <= kMaxLoggedRecords + 1) kept.push_back(event);
    } else {
      out << sim::RecordJson(event, start_ms) << '\n';
    }
  };
  if (options.progress || io.err_is_tty) {
    sim_options.on_progress = [&](double fraction, int64_t records) {
      err << "simulate: " << static_cast<int>(fraction * 100 + 0.5) << "% of simulated time, "
          << records << " records\n";
    };
  }

  absl::StatusOr<sim::SimResult> result = sim::Simulate(scenario, sim_options);
  if (!result.ok()) {
    err << "tidegate simulate: " << LocateError(result.status(), where) << "\n";
    return kExitBadInput;
  }
  if (result->summary.trace) ReportTrace(*result, options.trace_path, err);
  if (result->events_after_until > 0) {
    err << "simulate: " << result->events_after_until
        << " events after `until` were not run\n";
  }

  if (table) {
    PrintSimulationTable(options.scenario_path, *result, kept, out);
  } else {
    out << sim::SummaryJson(result->summary) << '\n';
  }
  out.flush();

  if (!options.check) return kExitOk;
  int passed = 0;
  int failed = 0;
  for (const sim::ExpectationResult& r : result->expectations) {
    if (r.passed) {
      ++passed;
    } else {
      ++failed;
      err << r.message << "\n";
    }
  }
  err << "expectations: " << passed << " passed, " << failed << " failed\n";
  return failed == 0 ? kExitOk : kExitCheckFailed;
}

void AddSimulateCommand(CLI::App& app, const Io& io, int* exit_code) {
  auto options = std::make_shared<SimulateOptions>();
  CLI::App* sub = app.add_subcommand(
      "simulate", "Run a scenario (config + events + expectations) on a virtual clock");
  sub->add_option("SCENARIO", options->scenario_path, "Scenario file (YAML, docs/design.md §9)")
      ->required();
  sub->add_option("-o,--output", options->output,
                  "jsonl: one JSON object per decision, then a summary (default); "
                  "table: for people")
      ->check(CLI::IsMember({"jsonl", "table"}));
  sub->add_flag("--check", options->check,
                "Compare the run with the scenario's `expect` list; report on stderr; "
                "exit 1 if any fails");
  sub->add_option("--trace", options->trace_path,
                  "Replay a job trace CSV (job_id,team,submit_s,duration_s,gpus,gpu_type,"
                  "status) against the scenario's config");
  sub->add_flag("--trace-elastic", options->trace_elastic,
                "With --trace: replay each job of G > 1 GPUs as an elastic job of one-GPU "
                "replicas, elastic {min: ceil(G/2), max: G}, with the same work");
  sub->add_flag("--progress", options->progress,
                "Print progress on stderr even when it is not a terminal");
  sub->footer(kExitCodesHelp);
  sub->callback([options, io, exit_code] { *exit_code = RunSimulate(*options, io); });
}

}  // namespace tidegate::cli
