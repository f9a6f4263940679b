#include "cli/wait_command.h"

#include <chrono>
#include <memory>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cli/exit_codes.h"
#include "cli/jobs_command.h"
#include "cli/value_format.h"

namespace tidegate::cli {

bool ExceedsMax(const v1::JobInfo& job) {
  return job.state() == v1::JOB_STATE_QUEUED && absl::StartsWith(job.reason(), "exceeds_max");
}

// About 90 lines: one loop over WaitAdmission streams; how each stream ended
// (admitted, gone, timed out, interrupted, the broker away) decides whether to
// return or reconnect, and the cases share the last state seen.
int WaitForAdmission(Client& client, const std::string& job, std::string last_line,
                     std::optional<int64_t> wait_timeout_s, bool json, const Io& io) {
  std::ostream& out = *io.out;
  std::ostream& err = *io.err;
  InterruptWatcher watcher;
  const auto started = std::chrono::system_clock::now();
  std::optional<std::chrono::system_clock::time_point> deadline;
  if (wait_timeout_s) deadline = started + std::chrono::seconds(*wait_timeout_s);
  if (!json) {
    err << "tidegate: waiting for " << job
        << " to be admitted (Ctrl-C stops waiting; the job stays queued)\n";
  }
  std::optional<v1::JobInfo> last;
  auto interrupted = [&] {
    err << "tidegate: interrupted; " << job << " stays "
        << (last ? StateName(last->state()) : "queued") << " (`tidegate release " << job
        << "` withdraws it)\n";
    return kExitInterrupted;
  };
  bool reconnecting = false;
  for (;;) {
    grpc::ClientContext context;
    if (deadline) context.set_deadline(*deadline);
    context.set_wait_for_ready(reconnecting);
    watcher.Watch(&context);
    v1::WaitAdmissionRequest request;
    request.set_job(job);
    std::unique_ptr<grpc::ClientReader<v1::WaitAdmissionResponse>> reader =
        client.admission().WaitAdmission(&context, request);
    v1::WaitAdmissionResponse response;
    while (reader->Read(&response)) {
      if (reconnecting) {
        if (!json) err << "tidegate: reconnected to " << client.server() << "\n";
        reconnecting = false;
      }
      last = response.job();
      if (json) {
        out << ToJson(response) << '\n';
      } else {
        std::string line = absl::StrCat(job, ": ", DescribeWaitState(response.job()));
        if (line != last_line) out << line << '\n';
        last_line = std::move(line);
      }
      out.flush();
      if (ExceedsMax(response.job())) {
        context.TryCancel();
        reader->Finish();
        watcher.Watch(nullptr);
        err << "tidegate: " << job << " cannot be admitted under today's config; it stays queued until the "
            << "config changes\n";
        return kExitNotAdmitted;
      }
    }
    const grpc::Status status = reader->Finish();
    watcher.Watch(nullptr);
    if (watcher.interrupted()) return interrupted();
    if (status.ok()) {
      if (last && last->state() == v1::JOB_STATE_ADMITTED) return kExitOk;
      if (last && (last->state() == v1::JOB_STATE_ENDED || last->state() == v1::JOB_STATE_REJECTED)) {
        err << "tidegate: " << job << " was not admitted: " << DescribeWaitState(*last) << "\n";
        return kExitNotAdmitted;
      }
      // The broker ends the stream on admission, or when the job is gone
      // (released, or ended) while it still waited.
      const bool gone = !last || last->state() == v1::JOB_STATE_QUEUED;
      err << "tidegate: " << job << " was not admitted: "
          << (gone ? "it was released or ended while it waited" : DescribeWaitState(*last))
          << "\n";
      return kExitNotAdmitted;
    }
    // gRPC's timer may fire a little before the system clock reaches the
    // deadline, so DEADLINE_EXCEEDED with a --wait-timeout set is the timeout.
    if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED && deadline) {
      err << "tidegate: " << job << " is not admitted after --wait-timeout "
          << FormatAge(*wait_timeout_s * 1000) << ": "
          << (last ? DescribeWaitState(*last) : "queued") << "\n";
      return kExitNotAdmitted;
    }
    // CANCELLED that we did not ask for is a broker that went away mid-call
    // (an older broker's shutdown): the same as UNAVAILABLE.
    if (status.error_code() == grpc::StatusCode::UNAVAILABLE || status.error_code() == grpc::StatusCode::CANCELLED) {
      // The job is in the broker's ledger; wait for the broker to come back.
      if (!reconnecting) {
        err << DescribeRpcError(status, client.server()) << "; reconnecting\n";
        reconnecting = true;
      }
      if (watcher.SleepFor(std::chrono::seconds(1))) return interrupted();
      continue;
    }
    return client.Fail(status, err);
  }
}

}  // namespace tidegate::cli
