// The simulator's JSON-lines output (docs/design.md §9): one object per core
// Event, then one summary object. Field order is fixed, so the same run always
// prints the same bytes.
//
//   {"at":0,"type":"admit","job":"r1","team":"research","replicas":4,"borrowed":{"gpu":0}}
//   {"at":0,"type":"admit",...,"adopted":true}                  (adopt only)
//   {"at":31,"type":"queue","job":"x","team":"t","reason":"..."}  (+ "requeued":true)
//   {"at":30,"type":"preempt","job":"r7","team":"research","by":"s2","reason":"reclaim"}
//   {"at":30,"type":"reclaim","job":"s2","team":"serving","decision":"RECLAIMING","victims":["r7"]}
//   {"at":30,"type":"resize","job":"r1","from":6,"to":4,"borrowed":{"gpu":0},"reason":"reclaim"}
//   {"at":40,"type":"end","job":"r1"}
//   {"at":0,"type":"reject","job":"x1","reason":"..."}            (also "error")
//
// `at` is seconds from the scenario start: an integer when whole, else the
// shortest decimal ("130", "130.5").
#ifndef TIDEGATE_BROKER_SIM_RECORDS_H_
#define TIDEGATE_BROKER_SIM_RECORDS_H_

#include <string>

#include "broker/core/events.h"
#include "broker/core/types.h"
#include "broker/sim/summary.h"

namespace tidegate::sim {

// One record, without a trailing newline.
std::string RecordJson(const core::Event& event, core::Time start_ms);

// The summary object, without a trailing newline:
// {"type":"summary","utilization":..,"teams":{...},"reclaim_latency_p99_s":..,
//  "jobs":{...},"duration_s":..[,"trace":{...}]}
std::string SummaryJson(const Summary& summary);

// "130" or "130.5": `ms` milliseconds as seconds.
std::string FormatSeconds(core::Time ms);

}  // namespace tidegate::sim

#endif  // TIDEGATE_BROKER_SIM_RECORDS_H_
