#include "cli/elastic_command.h"

#include <algorithm>
#include <map>
#include <memory>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/exit_codes.h"
#include "cli/value_format.h"

namespace tidegate::cli {
namespace {

struct ElasticOptions {
  std::string job;
  std::string team;
  std::string epoch;
  std::string replicas;
  std::string output = "table";
};

const char* DayName(int d) {
  static const char* kNames[] = {"?", "mon", "tue", "wed", "thu", "fri", "sat", "sun"};
  return d >= 1 && d <= 7 ? kNames[d] : "?";
}

int RunWatch(const ElasticOptions& options, const ClientOptions& client_options, const Io& io) {
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(client_options);
  if (!client.ok()) {
    *io.err << "tidegate: " << client.status().message() << "\n";
    return kExitBadInput;
  }
  const bool json = options.output == "json";
  InterruptWatcher watcher;
  bool reconnecting = false;
  int64_t last_epoch = 0;
  for (;;) {
    grpc::ClientContext context;
    context.set_wait_for_ready(reconnecting);
    watcher.Watch(&context);
    v1::WatchResizesRequest request;
    request.set_job(options.job);
    auto reader = (*client)->elastic().WatchResizes(&context, request);
    v1::ResizeRequest r;
    while (reader->Read(&r)) {
      if (reconnecting) {
        *io.err << "tidegate: reconnected to " << (*client)->server() << "\n";
        reconnecting = false;
      }
      if (r.epoch() <= last_epoch) continue;  // seen before the reconnect.
      last_epoch = r.epoch();
      *io.out << (json ? ToJson(r) : DescribeResize(r)) << '\n';
      io.out->flush();
    }
    const grpc::Status status = reader->Finish();
    watcher.Watch(nullptr);
    if (watcher.interrupted()) return kExitInterrupted;
    if (status.ok()) {
      if (!json) *io.err << "tidegate: " << options.job << " ended\n";
      return kExitOk;
    }
    if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
      if (!reconnecting) {
        *io.err << DescribeRpcError(status, (*client)->server()) << "; reconnecting\n";
        reconnecting = true;
      }
      if (watcher.SleepFor(std::chrono::seconds(1))) return kExitInterrupted;
      continue;
    }
    return (*client)->Fail(status, *io.err);
  }
}

int RunAck(const ElasticOptions& options, const ClientOptions& client_options, const Io& io) {
  int64_t epoch = 0, replicas = 0;
  if (!absl::SimpleAtoi(options.epoch, &epoch) || epoch <= 0) {
    *io.err << "tidegate ack: EPOCH: '" << options.epoch << "' is not a positive integer\n";
    return kExitBadInput;
  }
  if (!absl::SimpleAtoi(options.replicas, &replicas) || replicas <= 0) {
    *io.err << "tidegate ack: REPLICAS: '" << options.replicas << "' is not a positive integer\n";
    return kExitBadInput;
  }
  v1::AckResizeRequest request;
  request.set_job(options.job);
  request.set_epoch(epoch);
  request.set_replicas(replicas);
  return CallBroker<v1::AckResizeResponse>(
      client_options, io,
      [&](Client& c, grpc::ClientContext* ctx, v1::AckResizeResponse* r) { return c.elastic().AckResize(ctx, request, r); },
      [&](const v1::AckResizeResponse& r) {
        if (options.output == "json") {
          *io.out << ToJson(r) << '\n';
        } else {
          *io.out << options.job << ": acked epoch " << epoch << " at " << replicas << " replicas (now "
                  << FormatQuantities(r.job().demand()) << (r.job().borrowing() ? ", borrowing" : "") << ")\n";
        }
      });
}

int RunTide(const ElasticOptions& options, const ClientOptions& client_options, const Io& io) {
  v1::GetTeamRequest request;
  request.set_team(options.team);
  return CallBroker<v1::TeamInfo>(
      client_options, io,
      [&](Client& c, grpc::ClientContext* ctx, v1::TeamInfo* r) { return c.quota().GetTeam(ctx, request, r); },
      [&](const v1::TeamInfo& t) {
        if (options.output == "json") {
          *io.out << ToJson(t) << '\n';
          return;
        }
        std::ostream& out = *io.out;
        out << "team " << t.name() << "\n";
        out << "now:      " << DescribeQuota(t.quota()) << "\n";
        if (t.tide().empty()) {
          out << "calendar: no tide rules (the quota changes only with the config)\n";
          return;
        }
        out << "calendar:\n";
        for (const auto& rule : t.tide()) out << "  " << DescribeTideRule(rule) << "\n";
        if (t.next_tide_change_ms() > 0) {
          out << "next:     " << DescribeQuota(t.next_tide_quota()) << "\n";
          out << "change:   " << FormatTime(t.next_tide_change_ms()) << "\n";
          out << "lead:     " << FormatTime(t.next_tide_lead_ms())
              << " (from then the broker frees what the coming quota needs and admits only what fits it)\n";
        }
      });
}

}  // namespace

std::string DescribeResize(const v1::ResizeRequest& r) {
  return absl::StrCat(r.job(), " epoch ", r.epoch(), ": ", r.current_replicas(), " -> ", r.target_replicas(), " (",
                      r.reason(), "), ack by ", FormatTime(r.deadline_ms()));
}

std::string DescribeQuota(const google::protobuf::Map<std::string, v1::ResourceQuota>& quota) {
  std::map<std::string, v1::ResourceQuota> sorted(quota.begin(), quota.end());
  std::vector<std::string> parts;
  for (const auto& [res, q] : sorted) {
    std::string p = absl::StrCat(res, " guaranteed ", q.guaranteed());
    if (q.has_borrow_limit()) absl::StrAppend(&p, ", borrow_limit ", q.borrow_limit());
    if (q.has_lend_limit()) absl::StrAppend(&p, ", lend_limit ", q.lend_limit());
    parts.push_back(std::move(p));
  }
  return parts.empty() ? "no quota entries" : absl::StrJoin(parts, "; ");
}

std::string DescribeTideRule(const v1::TideRule& rule) {
  std::vector<int> days(rule.days().begin(), rule.days().end());
  std::sort(days.begin(), days.end());
  // Runs of consecutive days read as ranges: "mon-fri", "sat,sun".
  std::vector<std::string> runs;
  for (size_t i = 0; i < days.size();) {
    size_t k = i;
    while (k + 1 < days.size() && days[k + 1] == days[k] + 1) ++k;
    runs.push_back(k - i >= 2 ? absl::StrCat(DayName(days[i]), "-", DayName(days[k]))
                              : absl::StrJoin(std::vector<std::string>(
                                                  {DayName(days[i]), k > i ? DayName(days[k]) : ""}),
                                              k > i ? "," : ""));
    i = k + 1;
  }
  return absl::StrCat(absl::StrJoin(runs, ","), " ", rule.from(), "-", rule.to(), " ",
                      rule.timezone().empty() ? "UTC" : rule.timezone(), ": ", DescribeQuota(rule.quota()));
}

void AddElasticCommands(CLI::App& app, const Io& io, const ClientOptions& client, int* exit_code) {
  const std::string footer = BrokerCommandFooter();
  {
    auto options = std::make_shared<ElasticOptions>();
    CLI::App* sub = app.add_subcommand("watch", "Print an elastic job's resize requests as they arrive (for scripts)");
    sub->add_option("JOB", options->job, "The elastic job")->required();
    AddOutputOption(*sub, &options->output);
    sub->footer(footer);
    sub->callback([options, io, &client, exit_code] { *exit_code = RunWatch(*options, client, io); });
  }
  {
    auto options = std::make_shared<ElasticOptions>();
    CLI::App* sub = app.add_subcommand("ack", "Tell the broker an elastic job re-formed at a new size");
    sub->add_option("JOB", options->job, "The elastic job")->required();
    sub->add_option("EPOCH", options->epoch, "The epoch of the request answered")->required();
    sub->add_option("REPLICAS", options->replicas, "The replicas the job now runs")->required();
    AddOutputOption(*sub, &options->output);
    sub->footer(footer);
    sub->callback([options, io, &client, exit_code] { *exit_code = RunAck(*options, client, io); });
  }
  {
    // `tide TEAM` shows the calendar; `tide propose TEAM` (tide_propose_command)
    // is a subcommand of the same word, registered after this one.
    auto options = std::make_shared<ElasticOptions>();
    CLI::App* sub = app.add_subcommand(
        "tide", "A team's tide calendar and its quota now and at the next change; `tide propose` proposes rules");
    sub->add_option("TEAM", options->team, "The team");
    sub->require_subcommand(0, 1);
    AddOutputOption(*sub, &options->output);
    sub->footer(footer);
    sub->callback([options, io, &client, exit_code, sub] {
      if (!sub->get_subcommands().empty()) return;  // `tide propose` ran.
      if (options->team.empty()) {
        *io.err << "tidegate tide: TEAM is required (or `tidegate tide propose TEAM`)\n";
        *exit_code = kExitBadInput;
        return;
      }
      *exit_code = RunTide(*options, client, io);
    });
  }
}

}  // namespace tidegate::cli
