// The quota subcommands (docs/design.md §2, §7: QuotaService), for team leads:
// what each team is guaranteed, uses, borrows, lends and waits for.
//
//   tidegate teams [-o table|json]
//   tidegate quota [TEAM] [-o table|json]
//   tidegate loans [--team T] [--since 2024-05-01|7d] [-o table|json]
//   tidegate usage TEAM [--since 2024-05-01|1d] [--step 1h|1d] [--resource R]
//                  [-o table|json]
//
// Tables (resources GPU-like first, then by name; quantities in the
// resource's units; hours are resource-hours, GPU-hours for GPUs):
//   teams: team, parent, then per resource "R guaranteed", "R private",
//          "R used", "R borrowed", "R lent", "R queued", then share, running
//          jobs, queued jobs; one row per team (an inner team: its subtree's
//          totals; the figures are read_model_teams.h's).
//   quota: team, resource, guaranteed, borrow limit, lend limit, private,
//          used, borrowed, lent, queued, share; one row per team and resource.
//   loans: borrower, lender, resource, day, hours; one row per loan and day.
//   usage: time, resource, used h, borrowed h, lent h, queued h; one row per
//          step and resource.
// share is the weighted dominant share of docs/policy.md §5 (per mille of what the
// team may borrow, divided by its weight; "inf" for weight 0), 0 when it does
// not borrow.
// -o json prints one JSON line (docs/accounting.md), numbers as JSON numbers:
// teams/quota the ListTeamsResponse or TeamInfo (quantities in the resource's
// units, share rounded to 3 decimals); loans the ListLoansResponse (`hours`:
// resource-hours, 2 decimals); usage {"points": [{"start", "start_ms",
// "resource", "used_hours", "borrowed_hours", "lent_hours", "queued_hours"}]}
// (resource-hours, 2 decimals; the API's UsagePoint is in resource-seconds).
#ifndef TIDEGATE_CLI_QUOTA_COMMAND_H_
#define TIDEGATE_CLI_QUOTA_COMMAND_H_

#include <cstdint>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "cli/client.h"
#include "cli/command.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "tidegate/v1/service.pb.h"

namespace CLI {
class App;
}  // namespace CLI

namespace tidegate::cli {

// The flags of `loans` and `usage`, as written.
struct HistoryOptions {
  std::string team;
  std::string since;      // empty = the subcommand's default (loans 30d, usage 1d).
  std::string step = "1h";
  std::string resource;   // usage only; empty = all.
  std::string output = "table";
};

inline constexpr char kLoansDefaultSince[] = "30d";
inline constexpr char kUsageDefaultSince[] = "1d";

// The requests `options` describe at `now_ms`; INVALID_ARGUMENT naming the
// flag and value for a malformed --since or --step.
absl::StatusOr<v1::ListLoansRequest> BuildLoansRequest(const HistoryOptions& options,
                                                       int64_t now_ms);
absl::StatusOr<v1::GetUsageRequest> BuildUsageRequest(const HistoryOptions& options,
                                                      int64_t now_ms);

std::string TeamsJson(const v1::ListTeamsResponse& response);
std::string TeamJson(const v1::TeamInfo& team);
std::string LoansJson(const v1::ListLoansResponse& response);
std::string UsageJson(const v1::GetUsageResponse& response);

void PrintTeamsTable(const google::protobuf::RepeatedPtrField<v1::TeamInfo>& teams,
                     std::ostream& out);
void PrintQuotaTable(const google::protobuf::RepeatedPtrField<v1::TeamInfo>& teams,
                     std::ostream& out);
void PrintLoansTable(const google::protobuf::RepeatedPtrField<v1::Loan>& loans, std::ostream& out);
void PrintUsageTable(const google::protobuf::RepeatedPtrField<v1::UsagePoint>& points,
                     std::ostream& out);

// Registers teams, quota, loans and usage on `app`; see AddJobsCommands.
void AddQuotaCommands(CLI::App& app, const Io& io, const ClientOptions& client, int* exit_code);

}  // namespace tidegate::cli

#endif  // TIDEGATE_CLI_QUOTA_COMMAND_H_
