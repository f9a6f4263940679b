#include "cli/simulate_table.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "api/text/enum_names.h"
#include "broker/sim/records.h"
#include "cli/text_table.h"

namespace tidegate::cli {
namespace {

std::string Hours(double h) { return absl::StrFormat("%.2f", h); }

std::string Secs(const std::optional<double>& s) {
  if (!s) return "-";
  return absl::StrCat(sim::FormatSeconds(static_cast<core::Time>(*s * 1000 + 0.5)), " s");
}

std::string Borrowed(const core::NamedQuantities& borrowed) {
  std::vector<std::string> parts;
  for (const auto& [name, quantity] : borrowed) {
    if (quantity > 0) parts.push_back(absl::StrCat(quantity, " ", name));
  }
  return parts.empty() ? "" : absl::StrCat(", borrowing ", absl::StrJoin(parts, " + "));
}

}  // namespace

std::string DescribeRecord(const core::Event& e, core::Time start_ms) {
  using core::EventType;
  std::string what;
  switch (e.type) {
    case EventType::kAdmit:
      what = absl::StrCat(e.job, " (", e.team, "): ", e.replicas,
                          e.replicas == 1 ? " replica" : " replicas", Borrowed(e.borrowed),
                          e.adopted ? ", adopted" : "");
      break;
    case EventType::kQueue:
      what = absl::StrCat(e.job, " (", e.team, "): ", e.requeued ? "requeued" : e.reason);
      if (e.requeued && !e.reason.empty() && e.reason != "requeued") {
        absl::StrAppend(&what, " (", e.reason, ")");
      }
      break;
    case EventType::kPreempt:
      what = absl::StrCat(e.job, " (", e.team, "): for ", e.by, ", ", e.reason);
      break;
    case EventType::kReclaim:
      what = absl::StrCat(e.job, " (", e.team, "): ", text::DecisionName(e.decision), ", victims ",
                          absl::StrJoin(e.victims, ", "));
      break;
    case EventType::kResize:
      what = absl::StrCat(e.job, ": ", e.from, " -> ", e.to, " replicas", Borrowed(e.borrowed),
                          " (", e.reason, ")");
      break;
    case EventType::kEnd:
      what = e.job;
      break;
    case EventType::kReject:
    case EventType::kError:
      what = absl::StrCat(e.job.empty() ? "-" : e.job, ": ", e.reason);
      break;
  }
  return absl::StrFormat("%8s s  %-7s  %s", sim::FormatSeconds(e.at - start_ms),
                         core::EventTypeName(e.type), what);
}

void PrintSimulationTable(const std::string& scenario_path, const sim::SimResult& result,
                          const std::vector<core::Event>& records, std::ostream& out) {
  const sim::Summary& s = result.summary;
  out << "scenario " << scenario_path << ": " << sim::FormatSeconds(result.end_ms - result.start_ms)
      << " s simulated, " << result.records << " decision records\n\n";

  using Align = TextTable::Align;
  TextTable teams({"team", "GPU-h", "borrowed GPU-h", "wait p50", "wait p95", "preemptions",
                   "lost GPU-h", "grown GPU-h"},
                  {Align::kLeft, Align::kRight, Align::kRight, Align::kRight, Align::kRight,
                   Align::kRight, Align::kRight, Align::kRight});
  for (const sim::TeamSummary& t : s.teams) {
    teams.AddRow({t.name, Hours(t.gpu_hours), Hours(t.borrowed_gpu_hours), Secs(t.wait_p50_s),
                  Secs(t.wait_p95_s), absl::StrCat(t.preemptions), Hours(t.lost_gpu_hours),
                  Hours(t.grown_gpu_hours)});
  }
  teams.Print(out);
  out << "\n";
  out << "utilisation:          "
      << (s.utilization ? absl::StrFormat("%.1f%% of GPU capacity", *s.utilization * 100)
                        : std::string("- (no GPU capacity)"))
      << "\n";
  out << "reclaim latency p99:  " << Secs(s.reclaim_latency_p99_s) << "\n";
  out << "elastic growth:       " << Hours(s.grown_gpu_hours) << " GPU-h gained; "
      << Hours(s.lost_gpu_hours) << " GPU-h of work lost to preemption\n";
  out << "jobs:                 " << s.jobs.submitted << " submitted, " << s.jobs.adopted
      << " adopted, " << s.jobs.admitted << " admitted, " << s.jobs.rejected << " rejected, "
      << s.jobs.queued_at_end << " queued at the end\n";
  if (s.trace) {
    out << "trace:                " << s.trace->rows << " rows, " << s.trace->submitted
        << " submitted, " << s.trace->unknown_team << " unknown team, " << s.trace->zero_gpu
        << " without GPUs\n";
  }
  out << "\n";
  if (static_cast<int64_t>(records.size()) > kMaxLoggedRecords) {
    out << "decisions: " << result.records << " records, too many to list (use -o jsonl)\n";
    return;
  }
  out << "decisions:\n";
  for (const core::Event& e : records) out << DescribeRecord(e, result.start_ms) << "\n";
}

}  // namespace tidegate::cli
