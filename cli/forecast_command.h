// `tidegate forecast --input FILE.csv --column NAME --horizon HOURS
//  [--time-column hour_start_s] [--where COL=VALUE] [--fill-gaps]
//  [--model auto|NAME] [-o json|table] [--plot FILE.svg] [--start TIME] [--progress]`
// (docs/design.md §6): forecasts one hourly series offline with the
// forecast/ library: every candidate model is backtested, the best is refitted
// and its P10/P50/P90/P99 printed per hour.
//
// `-o json` (default) prints one object:
//   {"input":…, "column":…, "rows":…, "step":3600, "gaps_filled":0,
//    "model":"holt_winters_24_damped", "params":{…} (Holt–Winters; a combination
//    lists its "members"), "fit":{"sse":…,"hours":…},
//    "backtest":{"mase":…, "pinball":…, "mae":…, "train_hours":…, "origins":…,
//                "horizon":…, "candidates":[{"model":…, "mase":…, …}, …]},
//    "forecast":[{"t":…, "p10":…, "p50":…, "p90":…, "p99":…}, …]}
// where `t` is in the input's time unit, starting one step after the last row.
// `-o table` prints the same for people. stderr: errors, filled gaps, progress
// (when stderr is a terminal or with --progress).
//
// `tidegate forecast TEAM [--resource gpu] [--metric demand] [--horizon 7d]
//  [--model auto] [--plot FILE.svg] [-o json|table]` (no --input) forecasts
// the team's hourly usage in the broker's ledger through ForecastService
// (cli/forecast_online.h): the same JSON keys, "input":"ledger", "t" in Unix
// seconds; --horizon defaults to 168 hours.
//
// Exit: 0 ok; 2 bad input (unreadable file, missing column, non-numeric value,
// unsorted/duplicate times, a gap without --fill-gaps, too short a series,
// unknown model) with "FILE:LINE: FIELD: reason" on stderr and nothing on stdout.
// Online: 2 bad flag or INVALID_ARGUMENT, 3 no such team, 4 too little
// history in the ledger (FAILED_PRECONDITION: how many hours it has and
// needs), 5 broker unavailable, 6 other.
#ifndef TIDEGATE_CLI_FORECAST_COMMAND_H_
#define TIDEGATE_CLI_FORECAST_COMMAND_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/civil_time.h"
#include "cli/client.h"
#include "cli/command.h"
#include "forecast/csv_series.h"
#include "forecast/forecaster.h"
#include "tidegate/v1/forecast.pb.h"

namespace CLI {
class App;
}  // namespace CLI

namespace tidegate::cli {

// Where a series comes from: shared by forecast, reserve and tide propose.
struct SeriesInput {
  std::string team;                     // positional TEAM: online without --input.
  std::string input;                    // --input FILE.csv
  std::string time_column = "hour_start_s";
  std::string column;                   // --column NAME
  std::vector<std::string> where;       // --where COL=VALUE, repeatable.
  bool fill_gaps = false;
  std::string start;                    // --start "YYYY-MM-DD HH:MM": wallclock of the first row.
  // Online only: which of the ledger's series.
  std::string resource = "gpu";         // --resource
  std::string metric = "demand";        // --metric demand|used|queued|borrowed|lent
};

// Adds --input, --time-column, --column, --where, --fill-gaps, --start.
void AddSeriesInputOptions(CLI::App* sub, SeriesInput* input);
// Adds --metric and, when `with_resource`, --resource (online mode), and lets
// --server/--timeout after the subcommand fall through to the top-level app.
void AddOnlineSeriesOptions(CLI::App* sub, SeriesInput* input, bool with_resource);
// True when the command reads the ledger: a TEAM and no --input.
bool IsOnline(const SeriesInput& input);
// INVALID_ARGUMENT when a file-only flag is given without --input.
absl::Status CheckOnlineFlags(const SeriesInput& input);
// The ledger series the flags select; call after CheckOnlineFlags passed.
v1::SeriesSelector SelectorOf(const SeriesInput& input);

struct LoadedSeries {
  forecast::CsvSeries csv;
  // Wallclock of the first row: --start, else the file's wallclock column.
  std::optional<absl::CivilHour> start;
};

// Reads and checks the series from --input (INVALID_ARGUMENT / NOT_FOUND with
// "FILE:LINE: FIELD: reason"); offline only (IsOnline is false). `command`
// names the subcommand.
absl::StatusOr<LoadedSeries> LoadSeries(const SeriesInput& input, const std::string& command);

// The last week (168 hours) of a series whose mean is below this fraction of
// the mean of the hours before it, or above its inverse, is "unlike the
// rest": a forecast fitted to it follows that stretch (Philly's trace ends in
// two nearly idle weeks, so its P50 was 0 for the whole next week).
inline constexpr double kUnlikeTailRatio = 0.25;
// The warning the offline forecast prints on stderr for such a series, naming
// `column` and both means; "" when the series is shorter than 3 weeks or its
// last week is like the rest.
std::string UnlikeTailWarning(const std::vector<double>& values, const std::string& column);

// "168", "168h", "7d", "2w" -> hours. INVALID_ARGUMENT naming --horizon.
absl::StatusOr<int> ParseHorizon(const std::string& text);

// Fits and forecasts; progress lines go to io.err when asked.
absl::StatusOr<forecast::ForecastResult> RunForecastModel(const LoadedSeries& series,
                                                          const std::string& model, int horizon,
                                                          bool progress, const Io& io);

// Writes an SVG chart of `result` to `path`.
absl::Status WritePlot(const std::string& path, const std::string& title,
                       const LoadedSeries& series, const forecast::ForecastResult& result,
                       std::optional<double> reserved);

struct ForecastCommandOptions {
  SeriesInput series;
  ClientOptions client;                 // online: --server, --timeout.
  std::string horizon;                  // required with --input; online default 168.
  std::string model = "auto";
  std::string output = "json";          // json | table
  std::string plot;                     // SVG path; empty = none.
  bool progress = false;
};

int RunForecast(const ForecastCommandOptions& options, const Io& io);

// Registers `forecast` on `app`; its exit code lands in *exit_code.
void AddForecastCommand(CLI::App& app, const Io& io, int* exit_code);

}  // namespace tidegate::cli

#endif  // TIDEGATE_CLI_FORECAST_COMMAND_H_
