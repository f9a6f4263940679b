// The tidegate command's exit codes, the same for every subcommand. They are
// part of the CLI's contract (printed by `tidegate --help`): scripts and CI
// rely on them. A broker's gRPC status maps onto them in cli/client.h
// (ExitCodeFor).
#ifndef TIDEGATE_CLI_EXIT_CODES_H_
#define TIDEGATE_CLI_EXIT_CODES_H_

namespace tidegate::cli {

inline constexpr int kExitOk = 0;
// The command ran, but the answer is no: what it checked did not hold
// (simulate --check), or the job it waited for was not admitted (admit --wait:
// the job ended or was rejected, or --wait-timeout passed first).
inline constexpr int kExitCheckFailed = 1;
inline constexpr int kExitNotAdmitted = 1;
// Bad input: an unknown flag or subcommand, a malformed value, an unreadable
// or malformed file, a refused scenario, or a request the broker refused as
// invalid (INVALID_ARGUMENT, OUT_OF_RANGE, an Admit answered REJECTED). The
// message is on stderr and nothing was done.
inline constexpr int kExitBadInput = 2;
// The job or team named does not exist (NOT_FOUND).
inline constexpr int kExitNotFound = 3;
// The request conflicts with the broker's state: the same job id with another
// spec (ALREADY_EXISTS), or a state that does not allow it
// (FAILED_PRECONDITION, ABORTED).
inline constexpr int kExitConflict = 4;
// The broker could not be reached or did not answer in time (UNAVAILABLE,
// DEADLINE_EXCEEDED). A timed-out request may still have been applied;
// retrying is safe because Admit with the same id and spec is idempotent.
inline constexpr int kExitUnavailable = 5;
// Any other error the broker or the RPC layer reported (INTERNAL, UNKNOWN,
// UNIMPLEMENTED, ...).
inline constexpr int kExitServerError = 6;
// The broker does not know who is asking (UNAUTHENTICATED: no certificate or
// token, or a revoked token) or the caller lacks the role (PERMISSION_DENIED).
// Its own code because retrying cannot help and a script should not treat it
// as a broker fault: fix the credentials or the roles file.
inline constexpr int kExitNotAllowed = 7;
// Interrupted by Ctrl-C (SIGINT) or SIGTERM, as shells report it (128 + 2).
inline constexpr int kExitInterrupted = 130;

inline constexpr char kExitCodesHelp[] =
    "Exit codes:\n"
    "    0  ok (admit: any decision but REJECTED or ENDED; admit --wait:\n"
    "       admitted)\n"
    "    1  the answer is no: expectations failed (simulate --check), admit of\n"
    "       a job that already ended, or the job was not admitted (admit --wait:\n"
    "       it ended, was rejected or exceeds its team's maximum, or\n"
    "       --wait-timeout passed)\n"
    "    2  bad input: an unknown flag or subcommand, a malformed value or file,\n"
    "       a scenario the simulator refuses, or a request the broker refused\n"
    "       as invalid (INVALID_ARGUMENT, admit answered REJECTED)\n"
    "    3  not found: no such job or team (NOT_FOUND)\n"
    "    4  conflict: the same job id with another spec (ALREADY_EXISTS), or a\n"
    "       state that does not allow it (FAILED_PRECONDITION)\n"
    "    5  broker unavailable: unreachable, shutting down or too slow\n"
    "       (UNAVAILABLE, DEADLINE_EXCEEDED); retrying is safe (admit is\n"
    "       idempotent: the same id and spec returns the same decision)\n"
    "    6  any other broker error (INTERNAL, UNIMPLEMENTED, ...)\n"
    "    7  not allowed: no identity or an unknown token (UNAUTHENTICATED), or\n"
    "       a role is missing (PERMISSION_DENIED, naming it)\n"
    "  130  interrupted (Ctrl-C)\n"
    "Errors go to stderr; a broker's as `tidegate: CODE: message`.";

}  // namespace tidegate::cli

#endif  // TIDEGATE_CLI_EXIT_CODES_H_
