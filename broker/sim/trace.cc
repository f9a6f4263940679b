#include "broker/sim/trace.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "forecast/csv_series.h"

namespace tidegate::sim {
namespace {

constexpr int kColumns = 7;

absl::Status RowError(absl::string_view path, int line, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ":", line, ": ", what));
}

// A finite number; `allow_negative` for gpus only.
absl::StatusOr<double> ParseNumber(absl::string_view cell, absl::string_view field,
                                   bool allow_negative, absl::string_view path, int line) {
  double value = 0;
  if (cell.empty()) {
    return RowError(path, line, absl::StrCat(field, ": missing (a number is required)"));
  }
  if (!absl::SimpleAtod(cell, &value) || !std::isfinite(value)) {
    return RowError(path, line, absl::StrCat(field, ": \"", cell, "\" is not a number"));
  }
  if (!allow_negative && value < 0) {
    return RowError(path, line, absl::StrCat(field, ": ", cell, " is negative"));
  }
  return value;
}

}  // namespace

absl::StatusOr<Trace> ParseTrace(std::string_view text_in, std::string_view path_in) {
  // Abseil here is built with its own string_view type.
  const absl::string_view path(path_in.data(), path_in.size());
  const absl::string_view header(kTraceHeader.data(), kTraceHeader.size());
  Trace trace;
  trace.path = std::string(path);
  bool header_seen = false;
  forecast::CsvLines lines(text_in);
  std::string_view text_line;
  while (lines.Next(&text_line)) {
    const int line_no = lines.line_no();
    absl::string_view line(text_line.data(), text_line.size());
    if (!header_seen) {
      if (line_no == 1 && line.substr(0, 3) == "\xEF\xBB\xBF") line.remove_prefix(3);
      if (line != header) {
        return RowError(path, line_no,
                        absl::StrCat("header: expected \"", header, "\", got \"", line,
                                     "\""));
      }
      header_seen = true;
      continue;
    }
    if (line.empty()) continue;
    const std::vector<std::string> cells = forecast::SplitCsvLine(text_line);
    if (static_cast<int>(cells.size()) != kColumns) {
      return RowError(path, line_no,
                      absl::StrCat("expected ", kColumns, " columns (", header, "), got ",
                                   cells.size()));
    }
    TraceRow row;
    row.line = line_no;
    row.job_id = std::string(cells[0]);
    if (row.job_id.empty()) return RowError(path, line_no, "job_id: empty");
    row.team = std::string(cells[1]);
    auto submit = ParseNumber(cells[2], "submit_s", false, path, line_no);
    if (!submit.ok()) return submit.status();
    row.submit_s = *submit;
    if (!cells[3].empty()) {
      auto duration = ParseNumber(cells[3], "duration_s", false, path, line_no);
      if (!duration.ok()) return duration.status();
      row.duration_s = *duration;
    }
    auto gpus = ParseNumber(cells[4], "gpus", true, path, line_no);
    if (!gpus.ok()) return gpus.status();
    row.gpus = *gpus;
    row.gpu_type = std::string(cells[5]);
    row.status = std::string(cells[6]);
    trace.rows.push_back(std::move(row));
  }
  if (!header_seen) {
    return RowError(path, 1, absl::StrCat("header: expected \"", header, "\", got an empty file"));
  }
  return trace;
}

absl::StatusOr<Trace> ReadTraceFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open trace file"));
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) return absl::InvalidArgumentError(absl::StrCat(path, ": cannot read trace file"));
  return ParseTrace(buf.str(), path);
}

TracePlan PlanTrace(const Trace& trace, const absl::flat_hash_set<std::string>& teams,
                    const std::string& cluster) {
  TracePlan plan;
  absl::flat_hash_set<std::string> unknown;
  plan.stats.rows = static_cast<int64_t>(trace.rows.size());
  for (const TraceRow& row : trace.rows) {
    if (row.gpus <= 0) {
      ++plan.stats.zero_gpu;
      continue;
    }
    if (!teams.contains(row.team)) {
      ++plan.stats.unknown_team;
      unknown.insert(row.team);
      continue;
    }
    TraceSubmit submit;
    submit.offset_ms = std::llround(row.submit_s * 1000.0);
    v1::JobSpec& spec = submit.spec;
    spec.set_job(row.job_id);
    spec.set_team(row.team);
    spec.set_cluster(cluster);
    const int64_t gpus = static_cast<int64_t>(std::ceil(row.gpus));
    if (trace.plan.elastic_multi_gpu && gpus > 1) {
      (*spec.mutable_per_replica())["gpu"] = 1;
      spec.mutable_elastic()->set_min((gpus + 1) / 2);
      spec.mutable_elastic()->set_max(gpus);
      ++plan.stats.elastic;
    } else {
      spec.set_replicas(1);
      (*spec.mutable_per_replica())["gpu"] = gpus;
    }
    if (row.duration_s) {
      submit.run_ms = std::llround(*row.duration_s * 1000.0);
      spec.set_run_s(static_cast<int64_t>(std::ceil(*row.duration_s)));
    }
    plan.submits.push_back(std::move(submit));
  }
  plan.stats.submitted = static_cast<int64_t>(plan.submits.size());
  std::stable_sort(plan.submits.begin(), plan.submits.end(),
                   [](const TraceSubmit& a, const TraceSubmit& b) {
                     return a.offset_ms < b.offset_ms;
                   });
  plan.unknown_teams.assign(unknown.begin(), unknown.end());
  std::sort(plan.unknown_teams.begin(), plan.unknown_teams.end());
  return plan;
}

}  // namespace tidegate::sim
