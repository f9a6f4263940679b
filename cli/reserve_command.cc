#include "cli/reserve_command.h"

#include <fstream>
#include <map>
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
#include "forecast/forecaster.h"
#include "yaml-cpp/yaml.h"

namespace tidegate::cli {
namespace {

using forecast::ReservationPlan;
using forecast::ReservationPrices;

// Reads a prices file, remembering each field's line for messages.
class PricesReader {
 public:
  explicit PricesReader(std::string path) : path_(std::move(path)) {}

  absl::StatusOr<ReservationPrices> Read(const std::string& text) {
    YAML::Node root;
    try {
      root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      return absl::InvalidArgumentError(
          absl::StrCat(path_, ":", e.mark.line + 1, ": ", e.msg));
    }
    if (!root.IsMap()) {
      return absl::InvalidArgumentError(absl::StrCat(
          path_, ": expected a map with reserved, on_demand, spot and preemptible_share"));
    }
    ReservationPrices prices;
    bool have_reserved = false, have_on_demand = false;
    for (const auto& kv : root) {
      const std::string key = kv.first.as<std::string>();
      const YAML::Node& v = kv.second;
      absl::Status s;
      if (key == "reserved") {
        have_reserved = true;
        s = Section(key, v, {{"price", &prices.reserved}}, &prices.term_hours);
      } else if (key == "on_demand") {
        have_on_demand = true;
        s = Section(key, v, {{"price", &prices.on_demand}}, nullptr);
      } else if (key == "spot") {
        prices.spot.emplace();
        s = Section(key, v,
                    {{"price", &prices.spot->price},
                     {"interruption_rate", &prices.spot->interruption_rate}},
                    nullptr);
      } else if (key == "preemptible_share") {
        s = Number(key, v, &prices.preemptible_share);
      } else {
        s = Error(kv.first, key, "unknown key (known: reserved, on_demand, spot, preemptible_share)");
      }
      if (!s.ok()) return s;
    }
    if (!have_reserved) return Missing("reserved.price");
    if (!have_on_demand) return Missing("on_demand.price");
    if (absl::Status s = forecast::ValidatePrices(prices); !s.ok()) {
      const std::string message(s.message());
      const std::string field = message.substr(0, message.find(':'));
      auto it = lines_.find(field);
      if (it == lines_.end()) return absl::InvalidArgumentError(absl::StrCat(path_, ": ", message));
      return absl::InvalidArgumentError(absl::StrCat(path_, ":", it->second, ": ", message));
    }
    return prices;
  }

 private:
  absl::Status Error(const YAML::Node& node, const std::string& field, const std::string& what) {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ":", node.Mark().line + 1, ": ", field, ": ", what));
  }

  absl::Status Missing(const std::string& field) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": ", field, ": missing"));
  }

  absl::Status Number(const std::string& field, const YAML::Node& node, double* out) {
    lines_[field] = node.Mark().line + 1;
    const std::string text = node.IsScalar() ? node.Scalar() : "";
    if (!node.IsScalar() || !absl::SimpleAtod(text, out)) {
      return Error(node, field, absl::StrCat("\"", text, "\" is not a number"));
    }
    return absl::OkStatus();
  }

  // A map of numbers (or a bare number: the price); `term` when the section has one.
  absl::Status Section(const std::string& name, const YAML::Node& node,
                       const std::map<std::string, double*>& fields, double* term) {
    if (node.IsScalar()) return Number(name + ".price", node, fields.at("price"));
    if (!node.IsMap()) return Error(node, name, "expected a map like {price: 1.5}");
    bool price = false;
    for (const auto& kv : node) {
      const std::string key = kv.first.as<std::string>();
      const std::string field = absl::StrCat(name, ".", key);
      if (key == "term" && term != nullptr) {
        lines_[field] = kv.second.Mark().line + 1;
        absl::StatusOr<double> hours = forecast::ParseTermHours(kv.second.Scalar());
        if (!hours.ok()) return Error(kv.second, field, "not a term like 1y, 3y, 6mo, 90d or 720h");
        *term = *hours;
        continue;
      }
      auto it = fields.find(key);
      if (it == fields.end()) {
        std::string known;
        for (const auto& [k, unused] : fields) absl::StrAppend(&known, known.empty() ? "" : ", ", k);
        if (term != nullptr) absl::StrAppend(&known, ", term");
        return Error(kv.first, field, absl::StrCat("unknown key (known: ", known, ")"));
      }
      if (key == "price") price = true;
      if (absl::Status s = Number(field, kv.second, it->second); !s.ok()) return s;
    }
    if (!price) return Error(node, name + ".price", "missing");
    return absl::OkStatus();
  }

  std::string path_;
  std::map<std::string, int> lines_;
};

double Round2(double v) { return std::round(v * 100) / 100; }
double Round4(double v) { return std::round(v * 10000) / 10000; }

// What a plan was sized on, for reports: the same for a file and the ledger.
struct PlanSource {
  std::string input;    // the file, or "ledger".
  std::string team;     // online only.
  std::string column;   // the column, or the ledger metric.
  std::string model;
  double mase = 0, pinball = 0;
};

PlanSource SourceOf(const ReserveOptions& options, const forecast::ForecastResult& forecast) {
  return PlanSource{options.series.input, "", options.series.column, forecast.model.Name(),
                    forecast.Chosen().mase, forecast.Chosen().pinball};
}

std::string PlanJson(const PlanSource& source, const ReservationPrices& prices,
                     const ReservationPlan& plan, int horizon) {
  text::JsonWriter w;
  w.BeginObject();
  w.Key("input").String(source.input);
  if (!source.team.empty()) w.Key("team").String(source.team);
  w.Key("column").String(source.column);
  w.Key("model").String(source.model);
  w.Key("backtest").BeginObject()
      .Key("mase").Double(source.mase)
      .Key("pinball").Double(source.pinball)
      .EndObject();
  w.Key("horizon_hours").Int(horizon);
  w.Key("term_hours").Double(prices.term_hours);
  w.Key("reserved_gpus").Int(plan.reserved_gpus);
  w.Key("critical_ratio").Double(Round4(plan.critical_ratio));
  w.Key("p_demand_above_reserved").Double(Round4(plan.p_demand_above));
  w.Key("utilisation").Double(Round4(plan.utilisation));
  w.Key("per_hour").BeginObject()
      .Key("demand_gpus").Double(Round4(plan.demand))
      .Key("reserved_used_gpus").Double(Round4(plan.reserved_used))
      .Key("on_demand_gpus").Double(Round4(plan.on_demand))
      .Key("spot_gpus").Double(Round4(plan.spot))
      .Key("cost").Double(Round4(plan.cost))
      .Key("cost_all_on_demand").Double(Round4(plan.cost_all_on_demand))
      .EndObject();
  w.Key("over_term").BeginObject()
      .Key("cost").Double(Round2(plan.cost * prices.term_hours))
      .Key("cost_all_on_demand").Double(Round2(plan.cost_all_on_demand * prices.term_hours))
      .Key("savings").Double(Round2((plan.cost_all_on_demand - plan.cost) * prices.term_hours))
      .EndObject();
  w.EndObject();
  return w.Take();
}

void PrintPlan(const PlanSource& source, const ReservationPrices& prices,
               const ReservationPlan& plan, int horizon, std::ostream& out) {
  if (source.team.empty()) {
    out << source.input << ": ";
  } else {
    out << "team " << source.team << " (ledger): ";
  }
  out << source.column << ", forecast " << source.model
      << absl::StrFormat(" (backtest MASE %.3f)", source.mase) << " over " << horizon
      << " hours\n";
  out << "reserve " << plan.reserved_gpus << " GPUs for "
      << absl::StrFormat("%.0f", prices.term_hours) << " hours: P(demand > reserved) = "
      << absl::StrFormat("%.3f", plan.p_demand_above) << " (reserved/on-demand price "
      << absl::StrFormat("%.3f", plan.critical_ratio) << "), expected utilisation "
      << absl::StrFormat("%.1f%%", 100 * plan.utilisation) << "\n\n";
  using Align = TextTable::Align;
  TextTable t({"per hour", "GPUs", "cost"}, {Align::kLeft, Align::kRight, Align::kRight});
  t.AddRow({"reserved", absl::StrCat(plan.reserved_gpus),
            absl::StrFormat("%.2f", prices.reserved * static_cast<double>(plan.reserved_gpus))});
  t.AddRow({"  of which used", absl::StrFormat("%.2f", plan.reserved_used), ""});
  t.AddRow({"on-demand", absl::StrFormat("%.2f", plan.on_demand),
            absl::StrFormat("%.2f", prices.on_demand * plan.on_demand)});
  if (prices.spot) {
    t.AddRow({"spot", absl::StrFormat("%.2f", plan.spot),
              absl::StrFormat("%.2f", plan.spot * prices.spot->price /
                                          (1 - prices.spot->interruption_rate))});
  }
  t.AddRow({"total", absl::StrFormat("%.2f", plan.demand), absl::StrFormat("%.2f", plan.cost)});
  t.AddRow({"all on-demand", absl::StrFormat("%.2f", plan.demand),
            absl::StrFormat("%.2f", plan.cost_all_on_demand)});
  t.Print(out);
  out << "\nover the term: " << absl::StrFormat("%.0f", plan.cost * prices.term_hours)
      << " against " << absl::StrFormat("%.0f", plan.cost_all_on_demand * prices.term_hours)
      << " all on-demand\n";
}

v1::ReservationPrices ToProto(const ReservationPrices& p) {
  v1::ReservationPrices out;
  out.mutable_reserved()->set_price(p.reserved);
  out.mutable_reserved()->set_term_hours(p.term_hours);
  out.mutable_on_demand()->set_price(p.on_demand);
  if (p.spot) {
    out.mutable_spot()->set_price(p.spot->price);
    out.mutable_spot()->set_interruption_rate(p.spot->interruption_rate);
  }
  out.set_preemptible_share(p.preemptible_share);
  return out;
}

int RunReserveOnline(const ReserveOptions& options, const ReservationPrices& prices, int horizon,
                     const Io& io) {
  std::ostream& err = *io.err;
  if (absl::Status st = CheckOnlineFlags(options.series); !st.ok()) {
    err << "tidegate reserve: " << st.message() << "\n";
    return kExitBadInput;
  }
  v1::RecommendReservationsRequest request;
  *request.mutable_series() = SelectorOf(options.series);
  *request.mutable_prices() = ToProto(prices);
  request.set_horizon_hours(horizon);
  request.set_model(options.model);
  v1::RecommendReservationsResponse r;
  const int code = CallForecastService(
      options.client, io, [&](v1::ForecastService::Stub& stub, grpc::ClientContext* ctx) {
        return stub.RecommendReservations(ctx, request, &r);
      });
  if (code != kExitOk) return code;
  ReservationPlan plan;
  plan.reserved_gpus = r.reserved_gpus();
  plan.critical_ratio = r.critical_ratio();
  plan.p_demand_above = r.p_demand_above_reserved();
  plan.demand = r.demand_gpus();
  plan.reserved_used = r.reserved_used_gpus();
  plan.on_demand = r.on_demand_gpus();
  plan.spot = r.spot_gpus();
  plan.cost = r.cost();
  plan.cost_all_on_demand = r.cost_all_on_demand();
  plan.utilisation = r.utilisation();
  const PlanSource source{"ledger", r.team(), MetricName(r.forecast().metric()),
                          r.forecast().model(), r.forecast().backtest().mase(),
                          r.forecast().backtest().pinball()};
  if (!options.plot.empty()) {
    if (absl::Status st = WriteOnlinePlot(options.plot, r.forecast(),
                                          static_cast<double>(r.reserved_gpus()));
        !st.ok()) {
      err << "tidegate reserve: " << st.message() << "\n";
      return kExitBadInput;
    }
  }
  if (options.output == "table") {
    PrintPlan(source, prices, plan, r.horizon_hours(), *io.out);
  } else {
    *io.out << PlanJson(source, prices, plan, r.horizon_hours()) << "\n";
  }
  io.out->flush();
  return kExitOk;
}

}  // namespace

absl::StatusOr<ReservationPrices> ParsePrices(const std::string& text, const std::string& path) {
  return PricesReader(path).Read(text);
}

int RunReserve(const ReserveOptions& options, const Io& io) {
  std::ostream& err = *io.err;
  if (options.prices_path.empty()) {
    err << "tidegate reserve: --prices FILE is required\n";
    return kExitBadInput;
  }
  std::ifstream in(options.prices_path, std::ios::binary);
  if (!in) {
    err << "tidegate reserve: " << options.prices_path << ": cannot open the file\n";
    return kExitBadInput;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  absl::StatusOr<ReservationPrices> prices = ParsePrices(ss.str(), options.prices_path);
  if (!prices.ok()) {
    err << "tidegate reserve: " << prices.status().message() << "\n";
    return kExitBadInput;
  }
  if (options.model != "auto" && !forecast::ParseModelName(options.model).ok()) {
    err << "tidegate reserve: --model: " << forecast::ParseModelName(options.model).status().message()
        << "\n";
    return kExitBadInput;
  }
  absl::StatusOr<int> horizon = ParseHorizon(options.horizon);
  if (!horizon.ok()) {
    err << "tidegate reserve: " << horizon.status().message() << "\n";
    return kExitBadInput;
  }
  if (IsOnline(options.series)) return RunReserveOnline(options, *prices, *horizon, io);
  absl::StatusOr<LoadedSeries> series = LoadSeries(options.series, "reserve");
  if (!series.ok()) {
    err << "tidegate reserve: " << series.status().message() << "\n";
    return kExitBadInput;
  }
  absl::StatusOr<forecast::ForecastResult> result = RunForecastModel(
      *series, options.model, *horizon, options.progress || io.err_is_tty, io);
  if (!result.ok()) {
    err << "tidegate reserve: " << options.series.input << ": " << options.series.column << ": "
        << result.status().message() << "\n";
    return kExitBadInput;
  }
  absl::StatusOr<ReservationPlan> plan =
      forecast::PlanReservation(forecast::DemandScenarios(*result), *prices);
  if (!plan.ok()) {
    err << "tidegate reserve: " << plan.status().message() << "\n";
    return kExitBadInput;
  }
  if (!options.plot.empty()) {
    const std::string title = absl::StrCat(options.series.input, ": ", options.series.column,
                                           " (", result->model.Name(), ")");
    if (absl::Status st = WritePlot(options.plot, title, *series, *result,
                                    static_cast<double>(plan->reserved_gpus));
        !st.ok()) {
      err << "tidegate reserve: " << st.message() << "\n";
      return kExitBadInput;
    }
  }
  if (options.output == "table") {
    PrintPlan(SourceOf(options, *result), *prices, *plan, *horizon, *io.out);
  } else {
    *io.out << PlanJson(SourceOf(options, *result), *prices, *plan, *horizon) << "\n";
  }
  io.out->flush();
  return kExitOk;
}

void AddReserveCommand(CLI::App& app, const Io& io, int* exit_code) {
  auto options = std::make_shared<ReserveOptions>();
  CLI::App* sub = app.add_subcommand(
      "reserve", "Size a GPU reservation from a demand forecast and reserved/on-demand/spot prices");
  sub->add_option("TEAM", options->series.team,
                  "Team whose usage in the broker's ledger to size for (ForecastService), or "
                  "the team's rows in --input");
  sub->add_option("--prices", options->prices_path,
                  "Prices YAML: reserved {price, term}, on_demand {price}, spot {price, "
                  "interruption_rate}, preemptible_share");
  AddSeriesInputOptions(sub, &options->series);
  AddOnlineSeriesOptions(sub, &options->series, /*with_resource=*/true);
  sub->add_option("--horizon", options->horizon,
                  "Hours of forecast demand to size over (default 168; 7d, 2w accepted)");
  sub->add_option("--model", options->model, "auto (default) or one model name");
  sub->add_option("-o,--output", options->output, "json (default) or table")
      ->check(CLI::IsMember({"json", "table"}));
  sub->add_option("--plot", options->plot, "Also write an SVG chart with the reserved level");
  sub->add_flag("--progress", options->progress,
                "Print progress on stderr even when it is not a terminal");
  sub->footer(ForecastCommandFooter());
  sub->callback([options, io, exit_code, sub] {
    options->client = ForecastClientOptions(sub);
    *exit_code = RunReserve(*options, io);
  });
}

}  // namespace tidegate::cli
