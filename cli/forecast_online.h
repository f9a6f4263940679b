// The online modes of `tidegate forecast|reserve|tide propose TEAM` (docs/design.md
// §6-7): the series is the team's hourly usage in the broker's
// ledger, and the broker's ForecastService fits it
// (api/tidegate/v1/forecast.proto). A command is online when it names a TEAM
// and no --input FILE.csv.
//
// Output keeps the offline modes' shape, so scripts read both the same way:
// the forecast JSON has the same keys (plus "team", "resource" and
// "zero_hours"; "input" is "ledger", "column" the metric, "t" Unix seconds).
//
// --server and --timeout are the top-level app's (cli/client.h); a forecast
// waits 60 s by default, since fitting a long history takes seconds.
#ifndef TIDEGATE_CLI_FORECAST_ONLINE_H_
#define TIDEGATE_CLI_FORECAST_ONLINE_H_

#include <functional>
#include <optional>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "cli/client.h"
#include "cli/command.h"
#include "tidegate/v1/forecast.grpc.pb.h"

namespace CLI {
class App;
}  // namespace CLI

namespace tidegate::cli {

// --server and --timeout as given to the top-level app above `sub` (timeout
// 60s when not given).
ClientOptions ForecastClientOptions(const CLI::App* sub);

// The --help footer of the three commands: the online mode, then
// BrokerCommandFooter().
std::string ForecastCommandFooter();

// "demand" (default), "used", "queued", "borrowed", "lent". INVALID_ARGUMENT
// naming --metric otherwise.
absl::StatusOr<v1::UsageMetric> ParseMetric(const std::string& text);
std::string MetricName(v1::UsageMetric metric);

// Makes the client (a bad --timeout: exit 2) and a ForecastService stub, and
// runs `call` with the --timeout deadline. On failure prints
// "tidegate: CODE: message" and returns the exit code (ExitCodeFor); 0 on
// success.
int CallForecastService(
    const ClientOptions& options, const Io& io,
    const std::function<grpc::Status(v1::ForecastService::Stub&, grpc::ClientContext*)>& call);

// The forecast as `tidegate forecast --input` prints it (see the header).
std::string OnlineForecastJson(const v1::ForecastResponse& r);
void PrintOnlineForecastTable(const v1::ForecastResponse& r, std::ostream& out);

// An SVG chart of the response's history and forecast; `reserved` draws a line.
absl::Status WriteOnlinePlot(const std::string& path, const v1::ForecastResponse& r,
                             std::optional<double> reserved);

}  // namespace tidegate::cli

#endif  // TIDEGATE_CLI_FORECAST_ONLINE_H_
