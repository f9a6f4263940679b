// `tidegate reserve --prices PRICES.yaml --input FILE.csv --column NAME
//  [--horizon 168] [--where COL=VALUE] [-o json|table] [--plot FILE.svg]`
// (docs/design.md §6): how many GPUs to reserve, from a forecast of the
// series' demand (forecast/reservation.h says how).
//
// PRICES.yaml, per GPU-hour:
//   reserved: {price: 1.10, term: 1y}        # term: 1y, 3y, 6mo, 90d, 720h
//   on_demand: {price: 2.50}
//   spot: {price: 0.80, interruption_rate: 0.05}   # optional
//   preemptible_share: 0.25                  # of demand, may run on spot; default 0
//
// `-o json` (default) prints one object: the model, "reserved_gpus", the
// newsvendor's "critical_ratio" and "p_demand_above_reserved", expected GPUs
// per hour on each kind ("per_hour"), expected cost per hour and over the
// term against all on-demand, and "utilisation" of the reservation.
//
// `tidegate reserve --prices PRICES.yaml TEAM [--resource gpu] [--metric
// demand]` (no --input) sizes it on the team's usage in the broker's ledger
// through ForecastService: the same JSON keys, with "input":"ledger" and
// "team".
//
// Exit: 0 ok; 2 bad input (everything `tidegate forecast` rejects, plus a
// prices file that is unreadable, has an unknown key, a missing or negative
// price: "prices.yaml:2: reserved.price: -1 is negative"). Online also 3 no
// such team, 4 too little history, 5 broker unavailable, 6 other.
#ifndef TIDEGATE_CLI_RESERVE_COMMAND_H_
#define TIDEGATE_CLI_RESERVE_COMMAND_H_

#include <string>

#include "absl/status/statusor.h"
#include "cli/command.h"
#include "cli/forecast_command.h"
#include "forecast/reservation.h"

namespace CLI {
class App;
}  // namespace CLI

namespace tidegate::cli {

struct ReserveOptions {
  std::string prices_path;
  SeriesInput series;
  ClientOptions client;  // online: --server, --timeout.
  std::string horizon = "168";
  std::string model = "auto";
  std::string output = "json";  // json | table
  std::string plot;
  bool progress = false;
};

// Parses a prices file's text; `path` is used in messages.
absl::StatusOr<forecast::ReservationPrices> ParsePrices(const std::string& text,
                                                        const std::string& path);

int RunReserve(const ReserveOptions& options, const Io& io);

// Registers `reserve` on `app`; its exit code lands in *exit_code.
void AddReserveCommand(CLI::App& app, const Io& io, int* exit_code);

}  // namespace tidegate::cli

#endif  // TIDEGATE_CLI_RESERVE_COMMAND_H_
