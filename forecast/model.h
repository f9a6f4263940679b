// The forecasting models' common vocabulary (docs/design.md §6): which model, and
// a fitted model's state that can absorb observations and forecast from where
// it stands. The backtest (backtest.h) walks a state through the hold-out
// hours, forecasting from every origin, without refitting.
//
// Models:
//   seasonal naive, period 24 or 168:  y(t+h) = the last y at the same phase.
//   additive Holt–Winters (holt_winters.h): level, optional (damped) trend,
//   one seasonal period (24) or two (24 and 168).
//   combination: the mean of the forecasts of CombinationMembers(), each
//   fitted on its own. Averaging a model that repeats last week with ones
//   that track the level is a well-known robust choice (forecast
//   combination); the backtest decides whether it helps on a series.
//
// Threading: value types; a ModelState is used by one thread at a time.
#ifndef TIDEGATE_FORECAST_MODEL_H_
#define TIDEGATE_FORECAST_MODEL_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tidegate::forecast {

inline constexpr int kDay = 24;
inline constexpr int kWeek = 168;

enum class ModelKind { kSeasonalNaive, kHoltWinters, kCombination };
enum class Trend { kNone, kAdditive, kDamped };

struct ModelSpec {
  ModelKind kind = ModelKind::kHoltWinters;
  int period = kDay;   // seasonal naive: its period; Holt–Winters: the first season.
  int period2 = 0;     // Holt–Winters only: a second season (168), or 0.
  Trend trend = Trend::kDamped;  // Holt–Winters only.

  static ModelSpec SeasonalNaive(int period);
  static ModelSpec HoltWinters(int period, int period2, Trend trend);
  static ModelSpec Combination();

  // "seasonal_naive_24", "holt_winters_24", "holt_winters_24_168_damped",
  // "holt_winters_24_notrend", "combination". Stable: used in JSON and on
  // the command line.
  std::string Name() const;
  // The longest seasonal period: the series needs two of them to fit.
  int LongestPeriod() const;
};

// The members of ModelSpec::Combination(), averaged with equal weights.
std::vector<ModelSpec> CombinationMembers();

// Parses a Name() back. INVALID_ARGUMENT naming the known names otherwise.
absl::StatusOr<ModelSpec> ParseModelName(const std::string& name);

// The candidates model choice tries, simplest first (ties go to the earlier).
std::vector<ModelSpec> DefaultCandidates();

// A model with fixed parameters, positioned after the observations it has
// absorbed. Forecast() does not change the state.
class ModelState {
 public:
  virtual ~ModelState() = default;
  // Absorbs the next hour's observation.
  virtual void Observe(double y) = 0;
  // out[h - 1] = the forecast h hours after the last observation, h = 1..horizon.
  virtual void Forecast(int horizon, double* out) const = 0;
  virtual std::unique_ptr<ModelState> Clone() const = 0;
};

// The fitted parameters, for reports (zero where a model has none).
struct ModelParams {
  double alpha = 0;   // level smoothing.
  double beta = 0;    // trend smoothing (error-correction form).
  double gamma1 = 0;  // first season.
  double gamma2 = 0;  // second season.
  double phi = 1;     // trend damping; 1 = undamped.
};

// Holt–Winters' states before the first observation (s1[j] is used for
// t ≡ j mod m1; holt_winters.h).
struct HoltWintersInit {
  double level = 0;
  double trend = 0;
  std::vector<double> season1;  // m1 values.
  std::vector<double> season2;  // m2 values, or empty.
};

struct FittedModel {
  ModelSpec spec;
  ModelParams params;
  HoltWintersInit init;                // Holt–Winters only.
  // Combination only: the members' fits, without states (for warm starts).
  std::vector<FittedModel> members;
  // Sum of squared one-step errors over the fitting data (seasonal naive:
  // from its first full season on).
  double sse = 0;
  int evaluations = 0;                 // objective evaluations spent fitting.
  std::unique_ptr<ModelState> state;   // after the fitting data.
};

struct FitOptions {
  int max_evaluations = 300;   // per Nelder–Mead run.
  // Holt–Winters: rounds of (initial states by least squares, then parameters
  // again) after the first parameter fit; at most 1 with two seasons.
  int init_rounds = 2;
  // Warm start (a refit on more data of the same series, from the same first
  // hour): start from these parameters and initial states instead of the
  // heuristic ones (and, with two seasons, skip the least-squares rounds).
  // Holt–Winters and combinations (whose members carry their own) only.
  const FittedModel* warm_start = nullptr;
};

// Fits `spec` to y (hourly). INVALID_ARGUMENT when y is shorter than two of
// the model's longest season.
absl::StatusOr<FittedModel> FitModel(const ModelSpec& spec, const std::vector<double>& y,
                                     const FitOptions& options = {});

// The combination of already fitted members (in CombinationMembers() order):
// a state whose forecast is the mean of theirs. Takes ownership.
std::unique_ptr<ModelState> MakeMeanState(std::vector<std::unique_ptr<ModelState>> members);

}  // namespace tidegate::forecast

#endif  // TIDEGATE_FORECAST_MODEL_H_
