#include "cli/forecast_online.h"

#include <cmath>
#include <fstream>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "api/text/json_writer.h"
#include "cli/exit_codes.h"
#include "cli/text_table.h"
#include "forecast/svg_plot.h"

namespace tidegate::cli {
namespace {

// As the offline JSON: forecast numbers rounded to 3 decimals.
double Round3(double v) { return std::round(v * 1000) / 1000; }

absl::CivilHour UtcHour(int64_t unix_s) {
  return absl::ToCivilHour(absl::FromUnixSeconds(unix_s), absl::UTCTimeZone());
}

std::string FormatHour(int64_t unix_s) {
  const absl::CivilHour h = UtcHour(unix_s);
  return absl::StrFormat("%04d-%02d-%02d %02d:00", h.year(), h.month(), h.day(), h.hour());
}

}  // namespace

ClientOptions ForecastClientOptions(const CLI::App* sub) {
  const CLI::App* top = sub;
  while (top->get_parent() != nullptr) top = top->get_parent();
  ClientOptions options;
  options.timeout = "60s";
  if (const CLI::Option* o = top->get_option_no_throw("--server"); o && o->count() > 0) {
    options.server = o->as<std::string>();
  }
  if (const CLI::Option* o = top->get_option_no_throw("--timeout"); o && o->count() > 0) {
    options.timeout = o->as<std::string>();
  }
  return options;
}

std::string ForecastCommandFooter() {
  return absl::StrCat(
      "With a TEAM and no --input, the team's hourly usage in the broker's ledger is used, "
      "through its ForecastService (--timeout defaults to 60s here); `tidegate ledger "
      "import-usage` bootstraps that history.\n\n",
      BrokerCommandFooter());
}

absl::StatusOr<v1::UsageMetric> ParseMetric(const std::string& text) {
  if (text.empty() || text == "demand") return v1::USAGE_METRIC_DEMAND;
  if (text == "used") return v1::USAGE_METRIC_USED;
  if (text == "queued") return v1::USAGE_METRIC_QUEUED;
  if (text == "borrowed") return v1::USAGE_METRIC_BORROWED;
  if (text == "lent") return v1::USAGE_METRIC_LENT;
  return absl::InvalidArgumentError(absl::StrCat(
      "--metric: \"", text, "\" is not one of demand, used, queued, borrowed, lent"));
}

std::string MetricName(v1::UsageMetric metric) {
  switch (metric) {
    case v1::USAGE_METRIC_USED: return "used";
    case v1::USAGE_METRIC_QUEUED: return "queued";
    case v1::USAGE_METRIC_BORROWED: return "borrowed";
    case v1::USAGE_METRIC_LENT: return "lent";
    default: return "demand";
  }
}

int CallForecastService(
    const ClientOptions& options, const Io& io,
    const std::function<grpc::Status(v1::ForecastService::Stub&, grpc::ClientContext*)>& call) {
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(options);
  if (!client.ok()) {
    *io.err << "tidegate: " << client.status().message() << "\n";
    return kExitBadInput;
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  std::unique_ptr<v1::ForecastService::Stub> stub = v1::ForecastService::NewStub(
      grpc::CreateCustomChannel((*client)->server(), grpc::InsecureChannelCredentials(), args));
  grpc::ClientContext context;
  (*client)->SetDeadline(&context);
  const grpc::Status status = call(*stub, &context);
  if (!status.ok()) return (*client)->Fail(status, *io.err);
  return kExitOk;
}

std::string OnlineForecastJson(const v1::ForecastResponse& r) {
  text::JsonWriter w;
  w.BeginObject();
  w.Key("input").String("ledger");
  w.Key("team").String(r.team());
  w.Key("resource").String(r.resource());
  w.Key("column").String(MetricName(r.metric()));
  w.Key("time_column").String("hour_start_s");
  w.Key("rows").Int(r.hours());
  w.Key("step").Int(3600);
  w.Key("gaps_filled").Int(0);
  w.Key("zero_hours").Int(r.zero_hours());
  w.Key("model").String(r.model());
  if (r.has_params()) {
    w.Key("params").BeginObject()
        .Key("alpha").Double(r.params().alpha())
        .Key("beta").Double(r.params().beta())
        .Key("gamma1").Double(r.params().gamma1())
        .Key("gamma2").Double(r.params().gamma2())
        .Key("phi").Double(r.params().phi())
        .EndObject();
  } else if (r.members_size() > 0) {
    w.Key("members").BeginArray();
    for (const std::string& m : r.members()) w.String(m);
    w.EndArray();
  }
  w.Key("fit").BeginObject().Key("sse").Double(r.fit_sse()).Key("hours").Int(r.hours()).EndObject();
  const v1::ForecastBacktest& bt = r.backtest();
  w.Key("backtest").BeginObject();
  w.Key("mase").Double(bt.mase());
  w.Key("pinball").Double(bt.pinball());
  w.Key("mae").Double(bt.mae());
  w.Key("train_hours").Int(bt.train_hours());
  w.Key("origins").Int(bt.origins());
  w.Key("horizon").Int(bt.horizon());
  w.Key("scale").Double(bt.scale());
  w.Key("candidates").BeginArray();
  for (const v1::ForecastCandidate& c : bt.candidates()) {
    w.BeginObject().Key("model").String(c.model());
    if (!c.skipped().empty()) {
      w.Key("skipped").String(c.skipped());
    } else {
      w.Key("mase").Double(c.mase()).Key("pinball").Double(c.pinball()).Key("mae").Double(c.mae());
    }
    w.EndObject();
  }
  w.EndArray().EndObject();
  w.Key("forecast").BeginArray();
  for (const v1::ForecastPoint& p : r.forecast()) {
    w.BeginObject()
        .Key("t").Int(p.t())
        .Key("p10").Double(Round3(p.p10()))
        .Key("p50").Double(Round3(p.p50()))
        .Key("p90").Double(Round3(p.p90()))
        .Key("p99").Double(Round3(p.p99()))
        .EndObject();
  }
  w.EndArray();
  w.EndObject();
  return w.Take();
}

void PrintOnlineForecastTable(const v1::ForecastResponse& r, std::ostream& out) {
  out << "team " << r.team() << ": " << r.resource() << " " << MetricName(r.metric()) << ", "
      << r.hours() << " hours from the ledger (" << FormatHour(r.start_s()) << " UTC onwards";
  if (r.zero_hours() > 0) out << "; " << r.zero_hours() << " without usage, taken as 0";
  out << "); model " << r.model();
  if (r.has_params()) {
    out << absl::StrFormat(" (alpha %.3f, beta %.3f, gamma %.3f/%.3f, phi %.3f)",
                           r.params().alpha(), r.params().beta(), r.params().gamma1(),
                           r.params().gamma2(), r.params().phi());
  } else if (r.members_size() > 0) {
    std::string members;
    for (const std::string& m : r.members()) absl::StrAppend(&members, members.empty() ? "" : ", ", m);
    out << " (mean of " << members << ")";
  }
  out << "\n";
  const v1::ForecastBacktest& bt = r.backtest();
  out << "backtest: " << bt.train_hours() << " hours to fit, " << bt.origins()
      << " origins, up to " << bt.horizon() << " hours ahead; MASE scale "
      << absl::StrFormat("%.3f", bt.scale()) << "\n\n";
  using Align = TextTable::Align;
  TextTable models({"model", "MASE", "MAE", "pinball", ""},
                   {Align::kLeft, Align::kRight, Align::kRight, Align::kRight, Align::kLeft});
  for (const v1::ForecastCandidate& c : bt.candidates()) {
    if (!c.skipped().empty()) {
      models.AddRow({c.model(), "-", "-", "-", "skipped: " + c.skipped()});
      continue;
    }
    models.AddRow({c.model(), absl::StrFormat("%.3f", c.mase()), absl::StrFormat("%.3f", c.mae()),
                   absl::StrFormat("%.3f", c.pinball()), c.model() == r.model() ? "chosen" : ""});
  }
  models.Print(out);
  out << "\n";
  TextTable rows({"hour (UTC)", "P10", "P50", "P90", "P99"},
                 {Align::kLeft, Align::kRight, Align::kRight, Align::kRight, Align::kRight});
  for (const v1::ForecastPoint& p : r.forecast()) {
    rows.AddRow({FormatHour(p.t()), absl::StrFormat("%.2f", p.p10()),
                 absl::StrFormat("%.2f", p.p50()), absl::StrFormat("%.2f", p.p90()),
                 absl::StrFormat("%.2f", p.p99())});
  }
  rows.Print(out);
}

absl::Status WriteOnlinePlot(const std::string& path, const v1::ForecastResponse& r,
                             std::optional<double> reserved) {
  forecast::PlotInput plot;
  plot.title = absl::StrCat("team ", r.team(), ": ", r.resource(), " ", MetricName(r.metric()),
                            " (", r.model(), ")");
  plot.history.assign(r.history().begin(), r.history().end());
  for (const v1::ForecastPoint& p : r.forecast()) {
    plot.forecast.push_back(forecast::QuantileForecast{p.p10(), p.p50(), p.p90(), p.p99()});
  }
  if (r.forecast_size() > 0) plot.forecast_start = UtcHour(r.forecast(0).t());
  plot.reserved = reserved;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return absl::InvalidArgumentError(absl::StrCat(path, ": cannot write the plot"));
  out << forecast::RenderForecastSvg(plot);
  out.close();
  if (!out) return absl::InvalidArgumentError(absl::StrCat(path, ": cannot write the plot"));
  return absl::OkStatus();
}

}  // namespace tidegate::cli
