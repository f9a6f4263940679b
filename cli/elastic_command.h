// Elastic jobs and the tide (docs/design.md §5; ElasticService and QuotaService):
//
//   tidegate watch JOB [-o table|json]
//   tidegate ack JOB EPOCH REPLICAS [-o table|json]
//   tidegate tide TEAM [-o table|json]
//
// watch prints the job's resize requests as they arrive, one line each, for
// scripts and restart hooks: "JOB epoch 3: 6 -> 2 (tide:serving), ack by
// 2026-01-05T07:51:00Z" (-o json: one ResizeRequest per line). A pending
// request comes first; if the broker restarts, watch reconnects. It exits 0
// when the job ends, 3 for an unknown job, 4 for a rigid one, 130 on Ctrl-C.
//
// ack tells the broker the job now runs REPLICAS for request EPOCH. A stale
// epoch exits 4 (FAILED_PRECONDITION), replicas outside the request 2.
//
// tide prints a team's calendar, the guarantee in force and the next one,
// when the next change comes and when the broker starts freeing capacity for
// it (tide_lead_s before).
#ifndef TIDEGATE_CLI_ELASTIC_COMMAND_H_
#define TIDEGATE_CLI_ELASTIC_COMMAND_H_

#include <string>

#include "cli/client.h"
#include "cli/command.h"
#include "tidegate/v1/service.pb.h"

namespace CLI {
class App;
}  // namespace CLI

namespace tidegate::cli {

void AddElasticCommands(CLI::App& app, const Io& io, const ClientOptions& client, int* exit_code);

// "JOB epoch 3: 6 -> 2 (reclaim), ack by 2026-01-05T07:51:00Z".
std::string DescribeResize(const v1::ResizeRequest& r);

// One line per tide rule: "mon-fri 08:00-20:00 UTC: gpu guaranteed 12, lend_limit 0".
std::string DescribeTideRule(const v1::TideRule& rule);

// "gpu guaranteed 12, borrow_limit 4, lend_limit 0" (entries sorted by resource).
std::string DescribeQuota(const google::protobuf::Map<std::string, v1::ResourceQuota>& quota);

}  // namespace tidegate::cli

#endif  // TIDEGATE_CLI_ELASTIC_COMMAND_H_
