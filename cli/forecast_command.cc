#include "cli/forecast_command.h"

#include <cmath>
#include <fstream>
#include <memory>
#include <sstream>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "api/text/json_writer.h"
#include "cli/exit_codes.h"
#include "cli/forecast_online.h"
#include "cli/text_table.h"
#include "forecast/svg_plot.h"

namespace tidegate::cli {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open the file"));
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return absl::InvalidArgumentError(absl::StrCat(path, ": cannot read the file"));
  return ss.str();
}

bool HasColumn(const std::string& text, const std::string& name) {
  const std::string header = text.substr(0, text.find('\n'));
  for (std::string cell : forecast::SplitCsvLine(header)) {
    if (!cell.empty() && cell.back() == '\r') cell.pop_back();
    if (cell == name) return true;
  }
  return false;
}

// Forecast numbers, rounded for reading: 3 decimals.
double Round3(double v) { return std::round(v * 1000) / 1000; }

void WriteParams(text::JsonWriter& w, const forecast::ModelParams& p) {
  w.BeginObject()
      .Key("alpha").Double(p.alpha)
      .Key("beta").Double(p.beta)
      .Key("gamma1").Double(p.gamma1)
      .Key("gamma2").Double(p.gamma2)
      .Key("phi").Double(p.phi)
      .EndObject();
}

std::string ForecastJson(const ForecastCommandOptions& options, const LoadedSeries& s,
                         const forecast::ForecastResult& r) {
  const forecast::HourlySeries& series = s.csv.series;
  text::JsonWriter w;
  w.BeginObject();
  w.Key("input").String(options.series.input);
  w.Key("column").String(options.series.column);
  w.Key("time_column").String(options.series.time_column);
  w.Key("rows").Int(series.size());
  w.Key("step").Int(series.step);
  w.Key("gaps_filled").Int(static_cast<int64_t>(series.filled.size()));
  if (!series.filled.empty()) {
    w.Key("filled_times").BeginArray();
    for (int64_t i : series.filled) w.Int(series.TimeAt(i));
    w.EndArray();
  }
  w.Key("model").String(r.model.Name());
  if (r.model.kind == forecast::ModelKind::kHoltWinters) {
    w.Key("params");
    WriteParams(w, r.params);
  } else if (r.model.kind == forecast::ModelKind::kCombination) {
    w.Key("members").BeginArray();
    for (const forecast::ModelSpec& m : forecast::CombinationMembers()) w.String(m.Name());
    w.EndArray();
  }
  w.Key("fit").BeginObject().Key("sse").Double(r.sse).Key("hours").Int(series.size()).EndObject();
  const forecast::CandidateResult& chosen = r.Chosen();
  w.Key("backtest").BeginObject();
  w.Key("mase").Double(chosen.mase);
  w.Key("pinball").Double(chosen.pinball);
  w.Key("mae").Double(chosen.mae);
  w.Key("train_hours").Int(r.split.train);
  w.Key("origins").Int(r.origins);
  w.Key("horizon").Int(r.split.horizon);
  w.Key("scale").Double(r.scale);
  w.Key("candidates").BeginArray();
  for (const forecast::CandidateResult& c : r.candidates) {
    w.BeginObject().Key("model").String(c.spec.Name());
    if (c.skipped) {
      w.Key("skipped").String(c.skip_reason);
    } else {
      w.Key("mase").Double(c.mase).Key("pinball").Double(c.pinball).Key("mae").Double(c.mae);
    }
    w.EndObject();
  }
  w.EndArray().EndObject();
  w.Key("forecast").BeginArray();
  for (size_t h = 0; h < r.point.size(); ++h) {
    const forecast::QuantileForecast& q = r.quantiles[h];
    w.BeginObject()
        .Key("t").Int(series.NextTime() + static_cast<int64_t>(h) * series.step)
        .Key("p10").Double(Round3(q.p10))
        .Key("p50").Double(Round3(q.p50))
        .Key("p90").Double(Round3(q.p90))
        .Key("p99").Double(Round3(q.p99))
        .EndObject();
  }
  w.EndArray();
  w.EndObject();
  return w.Take();
}

void PrintTable(const ForecastCommandOptions& options, const LoadedSeries& s,
                const forecast::ForecastResult& r, std::ostream& out) {
  const forecast::HourlySeries& series = s.csv.series;
  out << options.series.input << ": " << options.series.column << ", " << series.size()
      << " hours";
  if (!series.filled.empty()) out << " (" << series.filled.size() << " filled)";
  out << "; model " << r.model.Name();
  if (r.model.kind == forecast::ModelKind::kHoltWinters) {
    out << absl::StrFormat(" (alpha %.3f, beta %.3f, gamma %.3f/%.3f, phi %.3f)", r.params.alpha,
                           r.params.beta, r.params.gamma1, r.params.gamma2, r.params.phi);
  } else if (r.model.kind == forecast::ModelKind::kCombination) {
    out << " (mean of seasonal_naive_168, holt_winters_24_damped, holt_winters_24_168_damped)";
  }
  out << "\n";
  out << "backtest: " << r.split.train << " hours to fit, " << r.origins << " origins, up to "
      << r.split.horizon << " hours ahead; MASE scale " << absl::StrFormat("%.3f", r.scale)
      << "\n\n";
  using Align = TextTable::Align;
  TextTable models({"model", "MASE", "MAE", "pinball", ""},
                   {Align::kLeft, Align::kRight, Align::kRight, Align::kRight, Align::kLeft});
  for (const forecast::CandidateResult& c : r.candidates) {
    if (c.skipped) {
      models.AddRow({c.spec.Name(), "-", "-", "-", "skipped: " + c.skip_reason});
      continue;
    }
    models.AddRow({c.spec.Name(), absl::StrFormat("%.3f", c.mase), absl::StrFormat("%.3f", c.mae),
                   absl::StrFormat("%.3f", c.pinball),
                   c.spec.Name() == r.model.Name() ? "chosen" : ""});
  }
  models.Print(out);
  out << "\n";
  TextTable rows({options.series.time_column, "P10", "P50", "P90", "P99"},
                 {Align::kRight, Align::kRight, Align::kRight, Align::kRight, Align::kRight});
  for (size_t h = 0; h < r.point.size(); ++h) {
    const forecast::QuantileForecast& q = r.quantiles[h];
    rows.AddRow({absl::StrCat(series.NextTime() + static_cast<int64_t>(h) * series.step),
                 absl::StrFormat("%.2f", q.p10), absl::StrFormat("%.2f", q.p50),
                 absl::StrFormat("%.2f", q.p90), absl::StrFormat("%.2f", q.p99)});
  }
  rows.Print(out);
}

}  // namespace

void AddSeriesInputOptions(CLI::App* sub, SeriesInput* input) {
  sub->add_option("--input", input->input, "Hourly series CSV with a header row");
  sub->add_option("--time-column", input->time_column,
                  "Column of integer times, one hour apart (default hour_start_s)");
  sub->add_option("--column", input->column, "Column to forecast, e.g. demand_gpus");
  sub->add_option("--where", input->where,
                  "Keep rows whose COLUMN equals VALUE (COLUMN=VALUE; repeatable), e.g. "
                  "team=vc3sl");
  sub->add_flag("--fill-gaps", input->fill_gaps,
                "Fill missing hours by linear interpolation (reported) instead of failing");
  sub->add_option("--start", input->start,
                  "Wallclock time of the first row, \"YYYY-MM-DD HH:MM\" (default: the file's "
                  "wallclock column)");
}

void AddOnlineSeriesOptions(CLI::App* sub, SeriesInput* input, bool with_resource) {
  if (with_resource) {
    sub->add_option("--resource", input->resource,
                    "Online: the ledger's resource to forecast (default gpu)");
  }
  sub->add_option("--metric", input->metric,
                  "Online: demand (used + queued, default), used, queued, borrowed or lent");
  sub->fallthrough();  // --server and --timeout after the subcommand.
}

bool IsOnline(const SeriesInput& input) { return input.input.empty() && !input.team.empty(); }

absl::Status CheckOnlineFlags(const SeriesInput& input) {
  if (!input.column.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--column ", input.column, " needs --input FILE.csv; from the ledger use --metric"));
  }
  if (!input.where.empty()) return absl::InvalidArgumentError("--where needs --input FILE.csv");
  if (input.fill_gaps) return absl::InvalidArgumentError("--fill-gaps needs --input FILE.csv");
  if (!input.start.empty()) return absl::InvalidArgumentError("--start needs --input FILE.csv");
  return ParseMetric(input.metric).status();
}

// A ledger SeriesSelector from the flags; CheckOnlineFlags has passed.
v1::SeriesSelector SelectorOf(const SeriesInput& input) {
  v1::SeriesSelector selector;
  selector.set_team(input.team);
  selector.set_resource(input.resource);
  selector.set_metric(*ParseMetric(input.metric));
  return selector;
}

namespace {

int RunForecastOnline(const ForecastCommandOptions& options, const Io& io) {
  std::ostream& err = *io.err;
  if (absl::Status st = CheckOnlineFlags(options.series); !st.ok()) {
    err << "tidegate forecast: " << st.message() << "\n";
    return kExitBadInput;
  }
  absl::StatusOr<int> horizon = ParseHorizon(options.horizon.empty() ? "168" : options.horizon);
  if (!horizon.ok()) {
    err << "tidegate forecast: " << horizon.status().message() << "\n";
    return kExitBadInput;
  }
  v1::ForecastRequest request;
  *request.mutable_series() = SelectorOf(options.series);
  request.set_horizon_hours(*horizon);
  request.set_model(options.model);
  v1::ForecastResponse response;
  const int code = CallForecastService(
      options.client, io, [&](v1::ForecastService::Stub& stub, grpc::ClientContext* ctx) {
        return stub.Forecast(ctx, request, &response);
      });
  if (code != kExitOk) return code;
  if (!options.plot.empty()) {
    if (absl::Status st = WriteOnlinePlot(options.plot, response, std::nullopt); !st.ok()) {
      err << "tidegate forecast: " << st.message() << "\n";
      return kExitBadInput;
    }
  }
  if (options.output == "table") {
    PrintOnlineForecastTable(response, *io.out);
  } else {
    *io.out << OnlineForecastJson(response) << "\n";
  }
  io.out->flush();
  return kExitOk;
}

}  // namespace

absl::StatusOr<LoadedSeries> LoadSeries(const SeriesInput& input, const std::string& command) {
  if (input.input.empty()) {
    return absl::InvalidArgumentError(
        "--input FILE.csv is required (or name a TEAM to read the broker's ledger)");
  }
  if (input.column.empty()) return absl::InvalidArgumentError("--column NAME is required");
  absl::StatusOr<std::string> text = ReadFile(input.input);
  if (!text.ok()) return text.status();

  forecast::CsvSeriesOptions options;
  options.source = input.input;
  options.time_column = input.time_column;
  options.value_column = input.column;
  options.fill_gaps = input.fill_gaps;
  bool where_team = false;
  for (const std::string& w : input.where) {
    const size_t eq = w.find('=');
    if (eq == std::string::npos || eq == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--where: \"", w, "\" is not COLUMN=VALUE"));
    }
    options.where.emplace_back(w.substr(0, eq), w.substr(eq + 1));
    if (w.substr(0, eq) == "team") where_team = true;
  }
  // A team named on the command line selects its rows in a long table.
  if (!input.team.empty() && !where_team && HasColumn(*text, "team")) {
    options.where.emplace_back("team", input.team);
  }
  absl::StatusOr<forecast::CsvSeries> csv = forecast::ParseCsvSeries(*text, options);
  if (!csv.ok()) return csv.status();
  LoadedSeries loaded;
  loaded.csv = *std::move(csv);
  loaded.start = loaded.csv.start_wallclock;
  if (!input.start.empty()) {
    std::string s = input.start;
    for (char& c : s) {
      if (c == ' ') c = 'T';
    }
    absl::CivilHour hour;
    if (!absl::ParseLenientCivilTime(s, &hour)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--start: \"", input.start, "\" is not a time like 2020-05-01 00:00"));
    }
    loaded.start = hour;
  }
  return loaded;
}

absl::StatusOr<int> ParseHorizon(const std::string& text) {
  int multiplier = 1;
  std::string digits = text;
  if (!digits.empty()) {
    const char unit = digits.back();
    if (unit == 'h' || unit == 'd' || unit == 'w') {
      multiplier = unit == 'h' ? 1 : unit == 'd' ? 24 : 168;
      digits.pop_back();
    }
  }
  int value = 0;
  if (!absl::SimpleAtoi(digits, &value) || value < 1 || value > 24 * 366 / multiplier) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--horizon: \"", text, "\" is not a number of hours from 1 to 8784 (or 7d, 2w)"));
  }
  return value * multiplier;
}

absl::StatusOr<forecast::ForecastResult> RunForecastModel(const LoadedSeries& series,
                                                          const std::string& model, int horizon,
                                                          bool progress, const Io& io) {
  forecast::ForecastOptions options;
  options.horizon = horizon;
  if (model != "auto") {
    absl::StatusOr<forecast::ModelSpec> spec = forecast::ParseModelName(model);
    if (!spec.ok()) return absl::InvalidArgumentError(absl::StrCat("--model: ", spec.status().message()));
    options.candidates = {*spec};
  }
  if (progress) {
    std::ostream* err = io.err;
    options.on_progress = [err](const std::string& name, int i, int total) {
      *err << "forecast: fitting " << name << " (" << i + 1 << "/" << total << ")\n";
      err->flush();
    };
  }
  const forecast::HourlySeries& s = series.csv.series;
  return forecast::ForecastSeries(s.values, options);
}

absl::Status WritePlot(const std::string& path, const std::string& title,
                       const LoadedSeries& series, const forecast::ForecastResult& result,
                       std::optional<double> reserved) {
  forecast::PlotInput plot;
  plot.title = title;
  plot.history = series.csv.series.values;
  plot.forecast = result.quantiles;
  plot.reserved = reserved;
  if (series.start) plot.forecast_start = *series.start + series.csv.series.size();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return absl::InvalidArgumentError(absl::StrCat(path, ": cannot write the plot"));
  out << forecast::RenderForecastSvg(plot);
  out.close();
  if (!out) return absl::InvalidArgumentError(absl::StrCat(path, ": cannot write the plot"));
  return absl::OkStatus();
}

std::string UnlikeTailWarning(const std::vector<double>& values, const std::string& column) {
  constexpr size_t kWeek = 168;
  if (values.size() < 3 * kWeek) return "";
  const size_t body_size = values.size() - kWeek;
  double body = 0, tail = 0;
  for (size_t i = 0; i < body_size; ++i) body += values[i];
  for (size_t i = body_size; i < values.size(); ++i) tail += values[i];
  body /= static_cast<double>(body_size);
  tail /= static_cast<double>(kWeek);
  if (!(body > 0) || !std::isfinite(body) || !std::isfinite(tail)) return "";
  const double ratio = tail / body;
  if (ratio >= kUnlikeTailRatio && ratio <= 1 / kUnlikeTailRatio) return "";
  return absl::StrFormat(
      "%s: the last %d hours average %.1f, %.2fx the %.1f of the %d hours before them: the "
      "history ends in a stretch unlike the rest, and the forecast follows its latest hours; "
      "leave that stretch out (--where, or a shorter file) unless it is what comes next",
      column, kWeek, tail, ratio, body, body_size);
}

int RunForecast(const ForecastCommandOptions& options, const Io& io) {
  std::ostream& err = *io.err;
  if (options.model != "auto") {
    if (absl::StatusOr<forecast::ModelSpec> spec = forecast::ParseModelName(options.model);
        !spec.ok()) {
      err << "tidegate forecast: --model: " << spec.status().message() << "\n";
      return kExitBadInput;
    }
  }
  if (IsOnline(options.series)) return RunForecastOnline(options, io);
  absl::StatusOr<LoadedSeries> series = LoadSeries(options.series, "forecast");
  if (!series.ok()) {
    err << "tidegate forecast: " << series.status().message() << "\n";
    return kExitBadInput;
  }
  if (options.horizon.empty()) {
    err << "tidegate forecast: --horizon HOURS is required\n";
    return kExitBadInput;
  }
  absl::StatusOr<int> horizon = ParseHorizon(options.horizon);
  if (!horizon.ok()) {
    err << "tidegate forecast: " << horizon.status().message() << "\n";
    return kExitBadInput;
  }
  const forecast::HourlySeries& s = series->csv.series;
  if (!s.filled.empty()) {
    err << "forecast: " << options.series.input << ": filled " << s.filled.size()
        << " missing hours by linear interpolation (first at " << s.TimeAt(s.filled.front())
        << ")\n";
  }
  if (std::string w = UnlikeTailWarning(s.values, options.series.column); !w.empty()) {
    err << "tidegate forecast: warning: " << w << "\n";
  }
  absl::StatusOr<forecast::ForecastResult> result = RunForecastModel(
      *series, options.model, *horizon, options.progress || io.err_is_tty, io);
  if (!result.ok()) {
    err << "tidegate forecast: " << options.series.input << ": " << options.series.column << ": "
        << result.status().message() << "\n";
    return kExitBadInput;
  }
  if (!options.plot.empty()) {
    const std::string title = absl::StrCat(options.series.input, ": ", options.series.column,
                                           " (", result->model.Name(), ")");
    if (absl::Status st = WritePlot(options.plot, title, *series, *result, std::nullopt);
        !st.ok()) {
      err << "tidegate forecast: " << st.message() << "\n";
      return kExitBadInput;
    }
  }
  if (options.output == "table") {
    PrintTable(options, *series, *result, *io.out);
  } else {
    *io.out << ForecastJson(options, *series, *result) << "\n";
  }
  io.out->flush();
  return kExitOk;
}

void AddForecastCommand(CLI::App& app, const Io& io, int* exit_code) {
  auto options = std::make_shared<ForecastCommandOptions>();
  CLI::App* sub = app.add_subcommand(
      "forecast", "Forecast an hourly series (P10/P50/P90/P99) with backtested model choice");
  sub->add_option("TEAM", options->series.team,
                  "Team whose usage in the broker's ledger to forecast (ForecastService), or "
                  "the team's rows in --input");
  AddSeriesInputOptions(sub, &options->series);
  AddOnlineSeriesOptions(sub, &options->series, /*with_resource=*/true);
  sub->add_option("--horizon", options->horizon,
                  "Hours to forecast: 168, 168h, 7d or 2w (required with --input; online "
                  "default 168)");
  sub->add_option("--model", options->model,
                  "auto (default: lowest backtest MASE) or one model, e.g. "
                  "holt_winters_24_168_damped, seasonal_naive_168");
  sub->add_option("-o,--output", options->output, "json (default) or table")
      ->check(CLI::IsMember({"json", "table"}));
  sub->add_option("--plot", options->plot, "Also write an SVG chart to this file");
  sub->add_flag("--progress", options->progress,
                "Print progress on stderr even when it is not a terminal");
  sub->footer(ForecastCommandFooter());
  sub->callback([options, io, exit_code, sub] {
    options->client = ForecastClientOptions(sub);
    *exit_code = RunForecast(*options, io);
  });
}

}  // namespace tidegate::cli
