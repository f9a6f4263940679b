#include "cli/jobs_command.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <utility>

#include "CLI/CLI.hpp"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cli/exit_codes.h"
#include "cli/paging.h"
#include "cli/text_table.h"
#include "cli/value_format.h"
#include "cli/wait_command.h"

namespace tidegate::cli {
namespace {

int64_t NowMs() { return absl::ToUnixMillis(absl::Now()); }

std::string Position(const v1::JobInfo& job) {
  return absl::StrCat("position ", job.queue_position(), " in ", job.team(), "'s queue");
}

std::string Labels(const google::protobuf::Map<std::string, std::string>& labels) {
  std::map<std::string, std::string> sorted(labels.begin(), labels.end());
  std::vector<std::string> parts;
  for (const auto& [key, value] : sorted) parts.push_back(absl::StrCat(key, "=", value));
  return parts.empty() ? "-" : absl::StrJoin(parts, ",");
}

std::string YesNo(bool b) { return b ? "yes" : "no"; }

std::string Seconds(int64_t s) { return absl::StrCat(s, "s"); }

// A time and how long ago it was: "2024-05-01T13:05:12Z (3m ago)".
std::string TimeAndAge(int64_t ms, int64_t now_ms) {
  return absl::StrCat(FormatTime(ms), " (", FormatAge(now_ms - ms), " ago)");
}

}  // namespace

// ---------------------------------------------------------------- pure parts

absl::StatusOr<v1::JobSpec> BuildJobSpec(const AdmitOptions& options) {
  if (options.job.empty()) return absl::InvalidArgumentError("--job is required and not empty");
  if (options.team.empty()) return absl::InvalidArgumentError("--team is required and not empty");
  v1::JobSpec spec;
  spec.set_job(options.job);
  spec.set_team(options.team);
  spec.set_cluster(options.cluster);
  if (!options.elastic.empty()) {
    if (!options.replicas.empty()) return absl::InvalidArgumentError("--elastic and --replicas: give one, not both");
    const size_t colon = options.elastic.find(':');
    if (colon == std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("--elastic '", options.elastic, "': expected MIN:MAX, e.g. 2:8"));
    }
    absl::StatusOr<int64_t> lo = ParsePositiveInt("--elastic MIN", options.elastic.substr(0, colon));
    if (!lo.ok()) return lo.status();
    absl::StatusOr<int64_t> hi = ParsePositiveInt("--elastic MAX", options.elastic.substr(colon + 1));
    if (!hi.ok()) return hi.status();
    if (*hi < *lo) {
      return absl::InvalidArgumentError(absl::StrCat("--elastic '", options.elastic, "': MAX is below MIN"));
    }
    spec.mutable_elastic()->set_min(*lo);
    spec.mutable_elastic()->set_max(*hi);
  }
  if (!options.replicas.empty()) {
    absl::StatusOr<int64_t> replicas = ParsePositiveInt("--replicas", options.replicas);
    if (!replicas.ok()) return replicas.status();
    spec.set_replicas(*replicas);
  }
  absl::StatusOr<std::map<std::string, int64_t>> per_replica =
      ParseQuantities("--per-replica", options.per_replica);
  if (!per_replica.ok()) return per_replica.status();
  spec.mutable_per_replica()->insert(per_replica->begin(), per_replica->end());
  spec.set_priority(options.priority);
  if (!options.grace_s.empty()) {
    // 0 is a valid grace period: evict at once.
    const std::string& text = options.grace_s;
    const bool digits = std::all_of(text.begin(), text.end(), absl::ascii_isdigit);
    int64_t grace = 0;
    if (!digits || !absl::SimpleAtoi(text, &grace)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--grace-s '", text, "': ",
                       digits ? "too large (at most 9223372036854775807 seconds)" : "not a whole number of seconds >= 0"));
    }
    spec.set_grace_s(grace);
  }
  for (const std::string& label : options.labels) {
    absl::StatusOr<std::pair<std::string, std::string>> kv = ParseLabel("--label", label);
    if (!kv.ok()) return kv.status();
    if (!spec.mutable_labels()->insert({kv->first, kv->second}).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("--label '", label, "': ", kv->first, " is given twice"));
    }
  }
  if (!options.wait_timeout.empty()) {
    absl::StatusOr<int64_t> t = ParseDurationSeconds("--wait-timeout", options.wait_timeout);
    if (!t.ok()) return t.status();
  }
  return spec;
}

std::string DescribeAdmit(const std::string& job, const v1::AdmitResponse& response) {
  std::string line = absl::StrCat(job, ": ", DecisionName(response.decision()));
  switch (response.decision()) {
    case v1::DECISION_ADMITTED_BORROWING: {
      std::map<std::string, int64_t> borrowed(response.borrowed().begin(),
                                              response.borrowed().end());
      absl::StrAppend(&line, ": borrowing ", FormatQuantities(borrowed), " (reclaimable)");
      break;
    }
    case v1::DECISION_RECLAIMING:
    case v1::DECISION_PREEMPTING:
      absl::StrAppend(&line, ": waiting for ", response.victims_size(),
                      response.victims_size() == 1 ? " victim" : " victims", " to drain (",
                      absl::StrJoin(response.victims(), ", "), ")");
      break;
    case v1::DECISION_QUEUED:
      if (!response.reason().empty()) absl::StrAppend(&line, ": ", response.reason());
      if (response.has_job() && response.job().queue_position() > 0) {
        absl::StrAppend(&line, " (", Position(response.job()), ")");
      }
      break;
    default:
      if (!response.reason().empty()) absl::StrAppend(&line, ": ", response.reason());
      break;
  }
  return line;
}

std::string DescribeWaitState(const v1::JobInfo& job) {
  std::string text = StateName(job.state());
  if (job.borrowing() &&
      (job.state() == v1::JOB_STATE_ADMITTED || job.state() == v1::JOB_STATE_DRAINING)) {
    absl::StrAppend(&text, ", borrowing");
  }
  if (job.state() == v1::JOB_STATE_QUEUED && job.queue_position() > 0) {
    absl::StrAppend(&text, ", ", Position(job));
  }
  if (!job.reason().empty()) absl::StrAppend(&text, ": ", job.reason());
  return text;
}

void PrintJobsTable(const google::protobuf::RepeatedPtrField<v1::JobInfo>& jobs, int64_t now_ms,
                    std::ostream& out) {
  using Align = TextTable::Align;
  TextTable table({"job", "team", "cluster", "state", "replicas", "demand", "priority", "age",
                   "reason"},
                  {Align::kLeft, Align::kLeft, Align::kLeft, Align::kLeft, Align::kRight,
                   Align::kLeft, Align::kRight, Align::kRight, Align::kLeft});
  for (const v1::JobInfo& job : jobs) {
    std::string reason = job.reason();
    if (job.borrowing()) reason = reason.empty() ? "borrowing" : absl::StrCat("borrowing; ", reason);
    table.AddRow({job.job(), job.team(), job.cluster(), StateName(job.state()),
                  absl::StrCat(job.replicas()), FormatQuantities(job.demand()),
                  absl::StrCat(job.priority()), FormatAge(now_ms - job.created_at_ms()), reason});
  }
  table.Print(out);
}

void PrintJobDetails(const v1::JobInfo& job, int64_t now_ms, std::ostream& out) {
  const v1::JobSpec& spec = job.spec();
  std::vector<std::pair<std::string, std::string>> fields = {
      {"job", job.job()},
      {"team", job.team()},
      {"cluster", job.cluster().empty() ? "-" : job.cluster()},
      {"state", StateName(job.state())},
  };
  const bool retained = job.state() == v1::JOB_STATE_ENDED || job.state() == v1::JOB_STATE_REJECTED;
  if (retained) {
    fields.emplace_back(job.state() == v1::JOB_STATE_ENDED ? "ended" : "rejected",
                        job.ended_at_ms() > 0 ? TimeAndAge(job.ended_at_ms(), now_ms) : "-");
    fields.emplace_back(job.state() == v1::JOB_STATE_ENDED ? "how" : "why", job.reason().empty() ? "-" : job.reason());
  } else if (job.state() == v1::JOB_STATE_QUEUED) {
    fields.emplace_back("waits for", job.reason().empty() ? "-" : job.reason());
    fields.emplace_back("queue position",
                        job.queue_position() > 0
                            ? absl::StrCat(job.queue_position(), " in ", job.team(), "'s queue")
                            : "-");
  } else if (!job.reason().empty()) {
    fields.emplace_back("reason", job.reason());
  }
  if (job.borrowing() && !job.borrowed().empty()) {
    fields.emplace_back("borrowing", absl::StrCat("yes, ", FormatQuantities(job.borrowed()), " (reclaimable)"));
  } else {
    fields.emplace_back("borrowing", YesNo(job.borrowing()));
  }
  fields.emplace_back("replicas", absl::StrCat(job.replicas()));
  if (job.has_resize()) {
    // A resize request the framework has not acked yet: its size now and the
    // size asked for.
    const v1::ResizeRequest& r = job.resize();
    fields.emplace_back("resize pending",
                        absl::StrCat("epoch ", r.epoch(), ": ", r.current_replicas(), " -> ", r.target_replicas(),
                                     " replicas (", r.reason().empty() ? "-" : r.reason(), "), ack by ",
                                     r.deadline_ms() > 0 ? FormatTime(r.deadline_ms()) : "-"));
  }
  fields.emplace_back("per replica", FormatQuantities(spec.per_replica()));
  fields.emplace_back("demand", FormatQuantities(job.demand()));
  fields.emplace_back("priority", absl::StrCat(job.priority()));
  fields.emplace_back("gang", YesNo(!spec.has_gang() || spec.gang()));
  if (spec.has_elastic()) {
    fields.emplace_back("elastic",
                        absl::StrCat(spec.elastic().min(), " to ", spec.elastic().max(), " replicas"));
  }
  fields.emplace_back("grace", spec.has_grace_s() ? Seconds(spec.grace_s()) : "policy default");
  if (spec.has_checkpoint_interval_s()) {
    fields.emplace_back("checkpoint every", Seconds(spec.checkpoint_interval_s()));
  }
  fields.emplace_back("requeue", YesNo(!spec.has_requeue() || spec.requeue()));
  fields.emplace_back("labels", Labels(spec.labels()));
  fields.emplace_back("created", TimeAndAge(job.created_at_ms(), now_ms));
  if (job.admitted_at_ms() > 0) {
    fields.emplace_back("admitted", TimeAndAge(job.admitted_at_ms(), now_ms));
  } else {
    // Requeued or ended: when it last held capacity, if ever.
    fields.emplace_back("admitted", job.last_admitted_at_ms() > 0
                                        ? absl::StrCat("last at ", TimeAndAge(job.last_admitted_at_ms(), now_ms))
                                        : "never");
  }
  PrintFields(fields, out);
}

// ---------------------------------------------------------------- running

namespace {

int RunAdmit(const AdmitOptions& options, const ClientOptions& client_options, const Io& io) {
  absl::StatusOr<v1::JobSpec> spec = BuildJobSpec(options);
  if (!spec.ok()) {
    *io.err << "tidegate admit: " << spec.status().message() << "\n";
    return kExitBadInput;
  }
  std::optional<int64_t> wait_timeout_s;
  if (!options.wait_timeout.empty()) {
    wait_timeout_s = *ParseDurationSeconds("--wait-timeout", options.wait_timeout);
  }
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(client_options);
  if (!client.ok()) {
    *io.err << "tidegate: " << client.status().message() << "\n";
    return kExitBadInput;
  }
  const bool json = options.output == "json";

  v1::AdmitRequest request;
  *request.mutable_job() = *spec;
  v1::AdmitResponse response;
  grpc::ClientContext context;
  (*client)->SetDeadline(&context);
  const grpc::Status status = (*client)->admission().Admit(&context, request, &response);
  if (!status.ok()) return (*client)->Fail(status, *io.err);
  if (response.decision() == v1::DECISION_QUEUED && response.job().queue_position() == 0) {
    // Admit answers without the queue position (it is not free for the
    // broker to compute on the hot path); ask for it, best effort.
    v1::GetJobRequest get;
    get.set_job(spec->job());
    v1::JobInfo job;
    grpc::ClientContext get_context;
    (*client)->SetDeadline(&get_context);
    if ((*client)->admission().GetJob(&get_context, get, &job).ok() &&
        job.state() == v1::JOB_STATE_QUEUED) {
      response.mutable_job()->set_queue_position(job.queue_position());
    }
  }

  const std::string line = DescribeAdmit(spec->job(), response);
  *io.out << (json ? ToJson(response) : line) << '\n';
  io.out->flush();
  switch (response.decision()) {
    case v1::DECISION_REJECTED:
      return kExitBadInput;
    case v1::DECISION_ENDED:
      return kExitNotAdmitted;  // a retry of finished work: nothing starts again.
    case v1::DECISION_ADMITTED:
    case v1::DECISION_ADMITTED_BORROWING:
      return kExitOk;
    default:
      if (!options.wait) return kExitOk;
      if (ExceedsMax(response.job())) {
        // Waiting cannot help: only a config change can make room for it.
        *io.err << "tidegate: " << spec->job() << " cannot be admitted under today's config ("
                << response.reason() << "); it stays queued until the config changes (`tidegate release "
                << spec->job() << "` withdraws it)\n";
        return kExitNotAdmitted;
      }
      return WaitForAdmission(**client, spec->job(), line, wait_timeout_s, json, io);
  }
}

struct JobsOptions {
  std::string team;
  std::string state;
  std::string job;  // job ID / release ID.
  std::string output = "table";
};

int RunJobs(const JobsOptions& options, const ClientOptions& client_options, const Io& io) {
  v1::ListJobsRequest request;
  request.set_team(options.team);
  if (!options.state.empty()) {
    absl::StatusOr<v1::JobState> state = ParseState("--state", options.state);
    if (!state.ok()) {
      *io.err << "tidegate jobs: " << state.status().message() << "\n";
      return kExitBadInput;
    }
    request.set_state(*state);
  }
  return CallBroker<v1::ListJobsResponse>(
      client_options, io,
      [&](Client& c, grpc::ClientContext* ctx, v1::ListJobsResponse* r) {
        return FetchAllPages(c, ctx, request, r,
                             [&](grpc::ClientContext* page_ctx, const v1::ListJobsRequest& page_request,
                                 v1::ListJobsResponse* page) {
                               return c.admission().ListJobs(page_ctx, page_request, page);
                             });
      },
      [&](const v1::ListJobsResponse& r) {
        if (options.output == "json") {
          *io.out << ToJson(r) << '\n';
        } else {
          PrintJobsTable(r.jobs(), NowMs(), *io.out);
        }
      });
}

int RunJob(const JobsOptions& options, const ClientOptions& client_options, const Io& io) {
  v1::GetJobRequest request;
  request.set_job(options.job);
  return CallBroker<v1::JobInfo>(
      client_options, io,
      [&](Client& c, grpc::ClientContext* ctx, v1::JobInfo* r) {
        return c.admission().GetJob(ctx, request, r);
      },
      [&](const v1::JobInfo& r) {
        if (options.output == "json") {
          *io.out << ToJson(r) << '\n';
        } else {
          PrintJobDetails(r, NowMs(), *io.out);
        }
      });
}

int RunRelease(const JobsOptions& options, const ClientOptions& client_options, const Io& io) {
  v1::ReleaseRequest request;
  request.set_job(options.job);
  return CallBroker<v1::ReleaseResponse>(
      client_options, io,
      [&](Client& c, grpc::ClientContext* ctx, v1::ReleaseResponse* r) {
        return c.admission().Release(ctx, request, r);
      },
      [&](const v1::ReleaseResponse& r) {
        if (options.output == "json") {
          *io.out << ToJson(r) << '\n';
        } else {
          if (r.job().state() == v1::JOB_STATE_ENDED || r.job().state() == v1::JOB_STATE_REJECTED) {
            *io.out << options.job << ": already " << StateName(r.job().state()) << " ("
                    << (r.job().reason().empty() ? "-" : r.job().reason()) << "); nothing to release\n";
          } else {
            *io.out << options.job << ": released (was " << StateName(r.job().state()) << ", "
                    << FormatQuantities(r.job().demand()) << ")\n";
          }
        }
      });
}

}  // namespace

void AddJobsCommands(CLI::App& app, const Io& io, const ClientOptions& client, int* exit_code) {
  const std::string footer = BrokerCommandFooter();
  {
    auto options = std::make_shared<AdmitOptions>();
    CLI::App* sub = app.add_subcommand(
        "admit", "Ask the broker to admit a job; prints the decision (for scripts and hooks)");
    sub->add_option("--job", options->job, "The job's id, e.g. slurm:123 or k8s:ns/name")
        ->required();
    sub->add_option("--team", options->team, "The leaf team it runs for")->required();
    sub->add_option("--cluster", options->cluster,
                    "The cluster it runs on (may be omitted when there is one)");
    sub->add_option("--replicas", options->replicas, "How many replicas (default 1)")
        ->type_name("N");
    sub->add_option("--elastic", options->elastic,
                    "An elastic job: admitted with MIN replicas, grows toward MAX (instead of --replicas)")
        ->type_name("MIN:MAX");
    sub->add_option("--per-replica", options->per_replica,
                    "What one replica needs: NAME=COUNT[,NAME=COUNT...], e.g. gpu=8,cpu=4000")
        ->required()
        ->type_name("RESOURCES");
    sub->add_option("--priority", options->priority, "Priority, higher first (default 0)");
    sub->add_option("--grace-s", options->grace_s,
                    "Seconds it may take to drain when evicted (default: the policy's)")
        ->type_name("S");
    sub->add_option("--label", options->labels, "A label KEY=VALUE (repeatable)")
        ->type_name("KEY=VALUE");
    sub->add_flag("--wait", options->wait,
                  "If not admitted at once, stream its state until it is admitted (exit 0), "
                  "ends or is rejected while waiting (exit 1); rejected at once, it exits 2 as without --wait");
    sub->add_option("--wait-timeout", options->wait_timeout,
                    "With --wait: give up after this long (exit 1), e.g. 30m")
        ->type_name("DURATION");
    AddOutputOption(*sub, &options->output);
    sub->footer(footer);
    sub->callback([options, io, &client, exit_code] { *exit_code = RunAdmit(*options, client, io); });
  }
  {
    auto options = std::make_shared<JobsOptions>();
    CLI::App* sub = app.add_subcommand(
        "release", "Tell the broker a job has ended (or withdraw a queued one)");
    sub->add_option("ID", options->job, "The job's id")->required();
    AddOutputOption(*sub, &options->output);
    sub->footer(footer);
    sub->callback(
        [options, io, &client, exit_code] { *exit_code = RunRelease(*options, client, io); });
  }
  {
    auto options = std::make_shared<JobsOptions>();
    CLI::App* sub = app.add_subcommand("jobs", "List jobs: state, demand, age and why they wait");
    sub->add_option("--team", options->team, "Only this team's jobs");
    sub->add_option("--state", options->state,
                    "Only jobs in this state: queued, admitted, draining, ended, rejected");
    AddOutputOption(*sub, &options->output);
    sub->footer(footer);
    sub->callback([options, io, &client, exit_code] { *exit_code = RunJobs(*options, client, io); });
  }
  {
    auto options = std::make_shared<JobsOptions>();
    CLI::App* sub = app.add_subcommand(
        "job", "Show one job; for a queued one, what it waits for and its queue position");
    sub->add_option("ID", options->job, "The job's id")->required();
    AddOutputOption(*sub, &options->output);
    sub->footer(footer);
    sub->callback([options, io, &client, exit_code] { *exit_code = RunJob(*options, client, io); });
  }
}

}  // namespace tidegate::cli
