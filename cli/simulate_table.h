// `tidegate simulate -o table`: the run for people. A per-team table (GPU-h,
// borrowed GPU-h, wait p50/p95, preemptions, lost GPU-h), utilisation,
// reclaim latency p99, job counts and, when the run made at most
// kMaxLoggedRecords records, the decision log one line per record.
#ifndef TIDEGATE_CLI_SIMULATE_TABLE_H_
#define TIDEGATE_CLI_SIMULATE_TABLE_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "broker/core/events.h"
#include "broker/sim/simulator.h"

namespace tidegate::cli {

inline constexpr int64_t kMaxLoggedRecords = 200;

// `records` holds the run's first records (up to kMaxLoggedRecords + 1; more
// than kMaxLoggedRecords means the log is left out).
void PrintSimulationTable(const std::string& scenario_path, const sim::SimResult& result,
                          const std::vector<core::Event>& records, std::ostream& out);

// One record as a log line: "   100 s  reclaim  s1 (serving): RECLAIMING, victims r2, r3".
std::string DescribeRecord(const core::Event& event, core::Time start_ms);

}  // namespace tidegate::cli

#endif  // TIDEGATE_CLI_SIMULATE_TABLE_H_
