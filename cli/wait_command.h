// `tidegate admit --wait` (the rest of admit: cli/jobs_command.h): after a
// decision that is not yet an admission, follow the job on WaitAdmission and
// print one line per change of its state until it is admitted or cannot be.
#ifndef TIDEGATE_CLI_WAIT_COMMAND_H_
#define TIDEGATE_CLI_WAIT_COMMAND_H_

#include <cstdint>
#include <optional>
#include <string>

#include "cli/client.h"
#include "cli/command.h"
#include "tidegate/v1/service.pb.h"

namespace tidegate::cli {

// A queued job that cannot fit under today's config at all (docs/policy.md §2
// step 2): waiting does not help.
bool ExceedsMax(const v1::JobInfo& job);

// Waits for `job`: one line per change of its state (DescribeWaitState, not
// repeating `last_line`; with `json` one WaitAdmissionResponse per line).
// Exits 0 once admitted; 1 when it ends, is rejected, cannot fit
// (ExceedsMax) or `wait_timeout_s` passes; 130 on Ctrl-C (the job stays
// queued). A broker that goes away is waited for: the wait resumes when it
// is back.
int WaitForAdmission(Client& client, const std::string& job, std::string last_line,
                     std::optional<int64_t> wait_timeout_s, bool json, const Io& io);

}  // namespace tidegate::cli

#endif  // TIDEGATE_CLI_WAIT_COMMAND_H_
