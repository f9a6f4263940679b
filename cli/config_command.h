// `tidegate config apply FILE [--dry-run] [-o table|json]` (docs/design.md §8):
// changes the broker's quota tree and policy live.
//
// The file (tidegate.v1.Config in YAML, like deploy/examples/tidegate.yaml) is
// loaded locally first: a file that cannot be read or does not match the
// schema exits 2 with "FILE:LINE: field: reason" and sends nothing. Then
// ApplyConfig: the broker validates the whole config (a refusal exits 2; its
// message gets the file and line of the team or field it names when they can
// be found) and, unless --dry-run, replaces its config in one journalled
// command. A dry run runs the same checks on a copy of the broker's state and
// exits as the apply would (a change that would strand jobs: exit 4).
// Printed: the broker's diff, one changed field per line ("research gpu
// guaranteed 16 -> 8", docs/config.md), then "applied N changes", "dry run: N
// changes, nothing applied" or "no changes"; warnings on stderr (e.g. the
// new config contradicts the file tidegated was started from). -o json
// prints the ApplyConfigResponse.
#ifndef TIDEGATE_CLI_CONFIG_COMMAND_H_
#define TIDEGATE_CLI_CONFIG_COMMAND_H_

#include <ostream>
#include <string>

#include "api/yaml_loader.h"
#include "cli/client.h"
#include "cli/command.h"
#include "tidegate/v1/config.pb.h"
#include "tidegate/v1/service.pb.h"

namespace CLI {
class App;
}  // namespace CLI

namespace tidegate::cli {

// `message`, from the broker's refusal of `config`, with "FILE:LINE: " in
// front when it starts with something the file locates: a field path
// ("policy.tick_s: ..."), a section ("clusters: ...", "teams: ...") or a team
// ("team 'research': ..." -> the line of that team's entry). Otherwise
// "FILE: message".
std::string LocateConfigError(const std::string& message, const v1::Config& config,
                              const api::SourceMap& where);

// The table view of an ApplyConfig answer: the diff lines, then the summary
// line; warnings go to `err` as "tidegate: warning: ...".
void PrintApplyResult(const v1::ApplyConfigResponse& response, bool dry_run, std::ostream& out,
                      std::ostream& err);

// Registers `config` (with its `apply` subcommand) on `app`; see
// AddJobsCommands.
void AddConfigCommand(CLI::App& app, const Io& io, const ClientOptions& client, int* exit_code);

}  // namespace tidegate::cli

#endif  // TIDEGATE_CLI_CONFIG_COMMAND_H_
