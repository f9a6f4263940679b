#include "cli/tide_propose_command.h"

#include <memory>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/civil_time.h"
#include "cli/exit_codes.h"
#include "cli/forecast_online.h"
#include "forecast/tide.h"

namespace tidegate::cli {
namespace {

int HourOfWeek(absl::CivilHour when) {
  int day = 0;
  switch (absl::GetWeekday(absl::CivilDay(when))) {
    case absl::Weekday::monday: day = 0; break;
    case absl::Weekday::tuesday: day = 1; break;
    case absl::Weekday::wednesday: day = 2; break;
    case absl::Weekday::thursday: day = 3; break;
    case absl::Weekday::friday: day = 4; break;
    case absl::Weekday::saturday: day = 5; break;
    case absl::Weekday::sunday: day = 6; break;
  }
  return day * 24 + when.hour();
}

std::string Format(absl::CivilHour h) {
  return absl::StrFormat("%04d-%02d-%02d %02d:00", h.year(), h.month(), h.day(), h.hour());
}

int RunTideOnline(const TideProposeOptions& options, const SeriesInput& input, const Io& io) {
  if (absl::Status st = CheckOnlineFlags(input); !st.ok()) {
    *io.err << "tidegate tide propose: " << st.message() << "\n";
    return kExitBadInput;
  }
  v1::ProposeTideRequest request;
  SeriesInput selected = input;
  selected.resource = options.resource;
  *request.mutable_series() = SelectorOf(selected);
  request.set_max_windows(options.max_windows);
  request.set_quantile(options.quantile);
  request.set_timezone(options.timezone);
  v1::ProposeTideResponse response;
  const int code = CallForecastService(
      options.client, io, [&](v1::ForecastService::Stub& stub, grpc::ClientContext* ctx) {
        return stub.ProposeTide(ctx, request, &response);
      });
  if (code != kExitOk) return code;
  *io.out << response.yaml();
  io.out->flush();
  return kExitOk;
}

}  // namespace

int RunTidePropose(const TideProposeOptions& options, const Io& io) {
  std::ostream& err = *io.err;
  SeriesInput input = options.series;
  if (!options.team_flag.empty()) {
    if (!input.team.empty() && input.team != options.team_flag) {
      err << "tidegate tide propose: TEAM " << input.team << " and --team " << options.team_flag
          << " differ\n";
      return kExitBadInput;
    }
    input.team = options.team_flag;
  }
  if (input.team.empty()) {
    err << "tidegate tide propose: --team T is required (the team the rules are for)\n";
    return kExitBadInput;
  }
  if (IsOnline(input)) return RunTideOnline(options, input, io);
  absl::StatusOr<LoadedSeries> series = LoadSeries(input, "tide propose");
  if (!series.ok()) {
    err << "tidegate tide propose: " << series.status().message() << "\n";
    return kExitBadInput;
  }
  const forecast::HourlySeries& s = series->csv.series;
  std::optional<absl::CivilHour> start = series->start;
  std::string placed_by = start ? (input.start.empty() ? "the wallclock column" : "--start") : "";
  if (!start && s.step == 3600) {
    // Times in seconds with no calendar: Unix time.
    start = absl::CivilHour(1970, 1, 1, 0) + s.start / 3600;
    placed_by = absl::StrCat(input.time_column, " read as Unix seconds");
  }
  if (!start) {
    err << "tidegate tide propose: " << input.input
        << ": cannot place the hours in the week: no wallclock column and "
        << input.time_column << " is not in seconds; pass --start \"YYYY-MM-DD HH:MM\"\n";
    return kExitBadInput;
  }
  forecast::TideOptions tide;
  tide.max_windows = options.max_windows;
  tide.quantile = options.quantile;
  absl::StatusOr<forecast::TideProposal> proposal =
      forecast::ProposeTide(s.values, HourOfWeek(*start), tide);
  if (!proposal.ok()) {
    err << "tidegate tide propose: " << input.input << ": " << input.column << ": "
        << proposal.status().message() << "\n";
    return kExitBadInput;
  }
  if (!s.filled.empty()) {
    err << "tide propose: " << input.input << ": filled " << s.filled.size()
        << " missing hours by linear interpolation\n";
  }
  forecast::TideYamlOptions yaml;
  yaml.team = input.team;
  yaml.resource = options.resource;
  yaml.timezone = options.timezone;
  yaml.comment = absl::StrCat(
      "Proposed by `tidegate tide propose` from ", s.size(), " hours of ", input.column, " in ",
      input.input, " (", Format(*start), " onwards, placed by ", placed_by, ", taken as ",
      options.timezone, ")", s.filled.empty() ? "" : absl::StrCat("; ", s.filled.size(), " missing hours filled"),
      ".\nGuarantees at the P", absl::StrFormat("%g", 100 * options.quantile),
      " of the demand seen in each window; the base is the quietest window's.\n",
      "Guaranteed GPU-hours per week: ", proposal->weekly_gpu_hours, " with these rules, ",
      proposal->flat_weekly_gpu_hours, " with a flat guarantee of ",
      proposal->flat_weekly_gpu_hours / 168, ".");
  *io.out << forecast::TideYaml(*proposal, yaml);
  io.out->flush();
  return kExitOk;
}

void AddTideProposeCommand(CLI::App& app, const Io& io, int* exit_code) {
  CLI::App* tide = nullptr;
  for (CLI::App* sub : app.get_subcommands([](CLI::App* a) { return a->get_name() == "tide"; })) {
    tide = sub;
  }
  if (tide == nullptr) {
    tide = app.add_subcommand("tide", "Tide rules: calendar windows over a team's guarantee");
    tide->require_subcommand(1);
  }
  auto options = std::make_shared<TideProposeOptions>();
  CLI::App* sub = tide->add_subcommand(
      "propose", "Propose tide rules (YAML) from a team's hour-of-week demand profile");
  sub->add_option("TEAM", options->series.team, "The team the rules are for (or --team)");
  sub->add_option("--team", options->team_flag, "The team the rules are for");
  AddSeriesInputOptions(sub, &options->series);
  AddOnlineSeriesOptions(sub, &options->series, /*with_resource=*/false);
  sub->add_option("--max-windows", options->max_windows, "At most this many rules (default 4)")
      ->check(CLI::Range(1, 12));
  sub->add_option("--quantile", options->quantile,
                  "Guarantee at this quantile of each window's demand (default 0.9)")
      ->check(CLI::Range(0.01, 0.99));
  sub->add_option("--timezone", options->timezone,
                  "IANA time zone the data's hours are in, written into the rules (default UTC)");
  sub->add_option("--resource", options->resource,
                  "Quota resource name (default gpu); online, also the ledger's resource");
  sub->footer(ForecastCommandFooter());
  sub->callback([options, io, exit_code, sub] {
    options->client = ForecastClientOptions(sub);
    *exit_code = RunTidePropose(*options, io);
  });
}

}  // namespace tidegate::cli
