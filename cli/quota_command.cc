#include "cli/quota_command.h"

#include <algorithm>
#include <map>
#include <memory>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cli/elastic_command.h"
#include "cli/exit_codes.h"
#include "cli/paging.h"
#include "cli/text_table.h"
#include "cli/value_format.h"

namespace tidegate::cli {
namespace {

using Align = TextTable::Align;

// The resources of `teams`, GPU-like first.
std::vector<std::string> ResourcesOf(const google::protobuf::RepeatedPtrField<v1::TeamInfo>& teams) {
  std::vector<std::string> names;
  for (const v1::TeamInfo& team : teams) {
    for (const v1::TeamResource& r : team.resources()) names.push_back(r.resource());
  }
  return OrderResources(std::move(names));
}

std::string Limit(bool has, int64_t value) { return has ? absl::StrCat(value) : "unlimited"; }

}  // namespace

absl::StatusOr<v1::ListLoansRequest> BuildLoansRequest(const HistoryOptions& options,
                                                       int64_t now_ms) {
  absl::StatusOr<int64_t> since = ParseSince(
      "--since", options.since.empty() ? kLoansDefaultSince : options.since, now_ms);
  if (!since.ok()) return since.status();
  v1::ListLoansRequest request;
  request.set_team(options.team);
  request.set_since_ms(std::max<int64_t>(0, *since));  // the ledger starts at the epoch.
  return request;
}

absl::StatusOr<v1::GetUsageRequest> BuildUsageRequest(const HistoryOptions& options,
                                                      int64_t now_ms) {
  absl::StatusOr<int64_t> since = ParseSince(
      "--since", options.since.empty() ? kUsageDefaultSince : options.since, now_ms);
  if (!since.ok()) return since.status();
  absl::StatusOr<int64_t> step = ParseStepSeconds("--step", options.step);
  if (!step.ok()) return step.status();
  v1::GetUsageRequest request;
  request.set_team(options.team);
  request.set_since_ms(std::max<int64_t>(0, *since));
  request.set_step_s(*step);
  request.set_resource(options.resource);
  return request;
}

void PrintTeamsTable(const google::protobuf::RepeatedPtrField<v1::TeamInfo>& teams,
                     std::ostream& out) {
  const std::vector<std::string> resources = ResourcesOf(teams);
  std::vector<std::string> headers = {"team", "parent"};
  std::vector<Align> align = {Align::kLeft, Align::kLeft};
  for (const std::string& r : resources) {
    for (const char* what : {"guaranteed", "private", "used", "borrowed", "lent", "queued"}) {
      headers.push_back(absl::StrCat(r, " ", what));
      align.push_back(Align::kRight);
    }
  }
  for (const char* h : {"share", "running jobs", "queued jobs"}) {
    headers.push_back(h);
    align.push_back(Align::kRight);
  }
  TextTable table(std::move(headers), std::move(align));
  for (const v1::TeamInfo& team : teams) {
    std::map<std::string, const v1::TeamResource*> by_name;
    for (const v1::TeamResource& r : team.resources()) by_name[r.resource()] = &r;
    std::vector<std::string> row = {team.name(), team.parent().empty() ? "-" : team.parent()};
    for (const std::string& name : resources) {
      auto it = by_name.find(name);
      if (it == by_name.end()) {
        row.insert(row.end(), 6, "-");
        continue;
      }
      const v1::TeamResource& r = *it->second;
      for (int64_t v :
           {r.guaranteed(), r.private_(), r.used(), r.borrowed(), r.lent(), r.queued()}) {
        row.push_back(absl::StrCat(v));
      }
    }
    row.push_back(FormatShare(team.share()));
    row.push_back(absl::StrCat(team.running_jobs()));
    row.push_back(absl::StrCat(team.queued_jobs()));
    table.AddRow(std::move(row));
  }
  table.Print(out);
}

void PrintQuotaTable(const google::protobuf::RepeatedPtrField<v1::TeamInfo>& teams,
                     std::ostream& out) {
  TextTable table({"team", "resource", "guaranteed", "borrow limit", "lend limit", "private",
                   "used", "borrowed", "lent", "queued", "share"},
                  {Align::kLeft, Align::kLeft, Align::kRight, Align::kRight, Align::kRight,
                   Align::kRight, Align::kRight, Align::kRight, Align::kRight, Align::kRight,
                   Align::kRight});
  for (const v1::TeamInfo& team : teams) {
    std::map<std::string, const v1::TeamResource*> by_name;
    std::vector<std::string> names;
    for (const v1::TeamResource& r : team.resources()) {
      by_name[r.resource()] = &r;
      names.push_back(r.resource());
    }
    for (const std::string& name : OrderResources(std::move(names))) {
      const v1::TeamResource& r = *by_name.at(name);
      table.AddRow({team.name(), name, absl::StrCat(r.guaranteed()),
                    Limit(r.has_borrow_limit(), r.borrow_limit()),
                    Limit(r.has_lend_limit(), r.lend_limit()), absl::StrCat(r.private_()),
                    absl::StrCat(r.used()),
                    absl::StrCat(r.borrowed()), absl::StrCat(r.lent()), absl::StrCat(r.queued()),
                    FormatShare(team.share())});
    }
  }
  table.Print(out);
  // The next tide change of each team that has a calendar (docs/design.md §5).
  for (const v1::TeamInfo& team : teams) {
    if (team.next_tide_change_ms() <= 0) continue;
    out << "tide: " << team.name() << " changes at " << FormatTime(team.next_tide_change_ms()) << " to "
        << DescribeQuota(team.next_tide_quota()) << " (capacity freed for it from "
        << FormatTime(team.next_tide_lead_ms()) << "; `tidegate tide " << team.name() << "`)\n";
  }
}

void PrintLoansTable(const google::protobuf::RepeatedPtrField<v1::Loan>& loans, std::ostream& out) {
  TextTable table({"borrower", "lender", "resource", "day", "hours"},
                  {Align::kLeft, Align::kLeft, Align::kLeft, Align::kLeft, Align::kRight});
  for (const v1::Loan& loan : loans) {
    table.AddRow({loan.borrower(), loan.lender(), loan.resource(), loan.day(),
                  FormatHours(loan.hours())});
  }
  table.Print(out);
}

void PrintUsageTable(const google::protobuf::RepeatedPtrField<v1::UsagePoint>& points,
                     std::ostream& out) {
  TextTable table({"time", "resource", "used h", "borrowed h", "lent h", "queued h"},
                  {Align::kLeft, Align::kLeft, Align::kRight, Align::kRight, Align::kRight,
                   Align::kRight});
  for (const v1::UsagePoint& p : points) {
    table.AddRow({FormatStepStart(p.start_ms()), p.resource(), FormatHours(p.used() / 3600.0),
                  FormatHours(p.borrowed() / 3600.0), FormatHours(p.lent() / 3600.0),
                  FormatHours(p.queued() / 3600.0)});
  }
  table.Print(out);
}

namespace {

v1::TeamInfo WithRoundedShare(v1::TeamInfo team) {
  team.set_share(RoundTo(team.share(), 3));
  return team;
}

}  // namespace

std::string TeamsJson(const v1::ListTeamsResponse& response) {
  v1::ListTeamsResponse out = response;
  for (v1::TeamInfo& team : *out.mutable_teams()) team = WithRoundedShare(std::move(team));
  return ToJson(out);
}

std::string TeamJson(const v1::TeamInfo& team) { return ToJson(WithRoundedShare(team)); }

std::string LoansJson(const v1::ListLoansResponse& response) {
  v1::ListLoansResponse out = response;
  for (v1::Loan& loan : *out.mutable_loans()) loan.set_hours(RoundTo(loan.hours(), 2));
  return ToJson(out);
}

std::string UsageJson(const v1::GetUsageResponse& response) {
  std::string out = "{\"points\":[";
  for (int i = 0; i < response.points_size(); ++i) {
    const v1::UsagePoint& p = response.points(i);
    if (i > 0) out += ',';
    absl::StrAppend(&out, "{\"start\":", JsonString(FormatTime(p.start_ms())),
                    ",\"start_ms\":", p.start_ms(), ",\"resource\":", JsonString(p.resource()));
    for (const auto& [name, seconds] : {std::pair<const char*, double>{"used_hours", p.used()},
                                        {"borrowed_hours", p.borrowed()},
                                        {"lent_hours", p.lent()},
                                        {"queued_hours", p.queued()}}) {
      absl::StrAppend(&out, ",\"", name, "\":", JsonNumber(RoundTo(seconds / 3600.0, 2)));
    }
    out += '}';
  }
  out += "]}";
  return out;
}

// ---------------------------------------------------------------- running

namespace {

int64_t NowMs() { return absl::ToUnixMillis(absl::Now()); }

struct TeamOptions {
  std::string team;  // quota [TEAM]; empty = all.
  std::string output = "table";
};

int RunTeams(const TeamOptions& options, const ClientOptions& client, const Io& io) {
  return CallBroker<v1::ListTeamsResponse>(
      client, io,
      [](Client& c, grpc::ClientContext* ctx, v1::ListTeamsResponse* r) {
        return c.quota().ListTeams(ctx, v1::ListTeamsRequest(), r);
      },
      [&](const v1::ListTeamsResponse& r) {
        if (options.output == "json") {
          *io.out << TeamsJson(r) << '\n';
        } else {
          PrintTeamsTable(r.teams(), *io.out);
        }
      });
}

int RunQuota(const TeamOptions& options, const ClientOptions& client, const Io& io) {
  if (options.team.empty()) {
    return CallBroker<v1::ListTeamsResponse>(
        client, io,
        [](Client& c, grpc::ClientContext* ctx, v1::ListTeamsResponse* r) {
          return c.quota().ListTeams(ctx, v1::ListTeamsRequest(), r);
        },
        [&](const v1::ListTeamsResponse& r) {
          if (options.output == "json") {
            *io.out << TeamsJson(r) << '\n';
          } else {
            PrintQuotaTable(r.teams(), *io.out);
          }
        });
  }
  v1::GetTeamRequest request;
  request.set_team(options.team);
  return CallBroker<v1::TeamInfo>(
      client, io,
      [&](Client& c, grpc::ClientContext* ctx, v1::TeamInfo* r) {
        return c.quota().GetTeam(ctx, request, r);
      },
      [&](const v1::TeamInfo& r) {
        if (options.output == "json") {
          *io.out << TeamJson(r) << '\n';
        } else {
          google::protobuf::RepeatedPtrField<v1::TeamInfo> one;
          *one.Add() = r;
          PrintQuotaTable(one, *io.out);
        }
      });
}

int RunLoans(const HistoryOptions& options, const ClientOptions& client, const Io& io) {
  absl::StatusOr<v1::ListLoansRequest> request = BuildLoansRequest(options, NowMs());
  if (!request.ok()) {
    *io.err << "tidegate loans: " << request.status().message() << "\n";
    return kExitBadInput;
  }
  return CallBroker<v1::ListLoansResponse>(
      client, io,
      [&](Client& c, grpc::ClientContext* ctx, v1::ListLoansResponse* r) {
        return FetchAllPages(c, ctx, *request, r,
                             [&](grpc::ClientContext* page_ctx, const v1::ListLoansRequest& page_request,
                                 v1::ListLoansResponse* page) {
                               return c.quota().ListLoans(page_ctx, page_request, page);
                             });
      },
      [&](const v1::ListLoansResponse& r) {
        if (options.output == "json") {
          *io.out << LoansJson(r) << '\n';
        } else {
          PrintLoansTable(r.loans(), *io.out);
        }
      });
}

int RunUsage(const HistoryOptions& options, const ClientOptions& client, const Io& io) {
  absl::StatusOr<v1::GetUsageRequest> request = BuildUsageRequest(options, NowMs());
  if (!request.ok()) {
    *io.err << "tidegate usage: " << request.status().message() << "\n";
    return kExitBadInput;
  }
  return CallBroker<v1::GetUsageResponse>(
      client, io,
      [&](Client& c, grpc::ClientContext* ctx, v1::GetUsageResponse* r) {
        return c.quota().GetUsage(ctx, *request, r);
      },
      [&](const v1::GetUsageResponse& r) {
        if (options.output == "json") {
          *io.out << UsageJson(r) << '\n';
        } else {
          PrintUsageTable(r.points(), *io.out);
        }
      });
}

}  // namespace

void AddQuotaCommands(CLI::App& app, const Io& io, const ClientOptions& client, int* exit_code) {
  const std::string footer = BrokerCommandFooter();
  {
    auto options = std::make_shared<TeamOptions>();
    CLI::App* sub = app.add_subcommand(
        "teams", "One line per team: guaranteed, used, borrowed, lent and queued, and its share");
    AddOutputOption(*sub, &options->output);
    sub->footer(footer);
    sub->callback([options, io, &client, exit_code] { *exit_code = RunTeams(*options, client, io); });
  }
  {
    auto options = std::make_shared<TeamOptions>();
    CLI::App* sub = app.add_subcommand(
        "quota", "Per resource: guaranteed, borrow and lend limits, used, borrowed, lent, "
                 "queued, share");
    sub->add_option("TEAM", options->team, "Only this team (default: every team)");
    AddOutputOption(*sub, &options->output);
    sub->footer(footer);
    sub->callback([options, io, &client, exit_code] { *exit_code = RunQuota(*options, client, io); });
  }
  {
    auto options = std::make_shared<HistoryOptions>();
    CLI::App* sub = app.add_subcommand(
        "loans", "Who borrowed what from whom, in resource-hours per day (UTC)");
    sub->add_option("--team", options->team, "Only loans this team took or gave");
    sub->add_option("--since", options->since,
                    absl::StrCat("From this UTC date (2024-05-01), time (2024-05-01T13:00:00Z) "
                                 "or this long ago (7d) (default ",
                                 kLoansDefaultSince, ")"))
        ->type_name("WHEN");
    AddOutputOption(*sub, &options->output);
    sub->footer(footer);
    sub->callback([options, io, &client, exit_code] { *exit_code = RunLoans(*options, client, io); });
  }
  {
    auto options = std::make_shared<HistoryOptions>();
    CLI::App* sub = app.add_subcommand(
        "usage", "A team's used, borrowed, lent and queued resource-hours over time");
    sub->add_option("TEAM", options->team, "The team")->required();
    sub->add_option("--since", options->since,
                    absl::StrCat("From this UTC date (2024-05-01), time (2024-05-01T13:00:00Z) "
                                 "or this long ago (7d) (default ",
                                 kUsageDefaultSince, ")"))
        ->type_name("WHEN");
    sub->add_option("--step", options->step, "Row size, whole hours: 1h (default), 6h, 1d")
        ->type_name("DURATION");
    sub->add_option("--resource", options->resource, "Only this resource (default: all)");
    AddOutputOption(*sub, &options->output);
    sub->footer(footer);
    sub->callback([options, io, &client, exit_code] { *exit_code = RunUsage(*options, client, io); });
  }
}

}  // namespace tidegate::cli
