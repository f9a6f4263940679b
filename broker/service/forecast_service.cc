#include "broker/service/forecast_service.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "broker/service/services.h"
#include "forecast/forecaster.h"
#include "forecast/reservation.h"
#include "forecast/tide.h"

namespace tidegate::service {
namespace {

constexpr int64_t kHourMs = 3600 * 1000;
constexpr int kMaxHorizon = 24 * 366;

int64_t FloorHour(int64_t ms) { return ms - (((ms % kHourMs) + kHourMs) % kHourMs); }

// Resource-seconds back to resource units, rounded to 1e-6 (header: why).
double ToUnits(double seconds) { return std::round(seconds / 3600.0 * 1e6) / 1e6; }

double MetricOf(const ledger::UsageRow& row, v1::UsageMetric metric) {
  switch (metric) {
    case v1::USAGE_METRIC_USED: return row.used;
    case v1::USAGE_METRIC_QUEUED: return row.queued;
    case v1::USAGE_METRIC_BORROWED: return row.borrowed;
    case v1::USAGE_METRIC_LENT: return row.lent;
    default: return row.used + row.queued;
  }
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

std::string ResourceOf(const v1::SeriesSelector& s) {
  return s.resource().empty() ? "gpu" : s.resource();
}

// "team vc3sl has 40 hours of gpu demand in the ledger; <what> needs at least 49".
absl::Status TooShort(const v1::SeriesSelector& s, int64_t hours, const std::string& what,
                      int64_t needed) {
  return absl::FailedPreconditionError(absl::StrCat(
      "team ", s.team(), " has ", hours, " hours of ", ResourceOf(s), " ",
      MetricName(s.metric()), " in the ledger; ", what, " needs at least ", needed,
      " (import history with `tidegate ledger import-usage`, or let the broker run longer)"));
}

absl::Status CheckHorizon(int32_t horizon, const std::string& field) {
  if (horizon < 1 || horizon > kMaxHorizon) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", horizon, " is not a number of hours from 1 to ", kMaxHorizon));
  }
  return absl::OkStatus();
}

// Forecast options for a request's model; INVALID_ARGUMENT naming `field`.
absl::StatusOr<forecast::ForecastOptions> OptionsFor(const std::string& model, int horizon,
                                                     const std::string& field) {
  forecast::ForecastOptions options;
  options.horizon = horizon;
  if (!model.empty() && model != "auto") {
    absl::StatusOr<forecast::ModelSpec> spec = forecast::ParseModelName(model);
    if (!spec.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": ", spec.status().message()));
    }
    options.candidates = {*spec};
  }
  return options;
}

// The hours ForecastSeries needs for `options`: two of the shortest season
// among the candidates, plus one hour to score the backtest.
int64_t HoursNeeded(const forecast::ForecastOptions& options) {
  int period = options.candidates.front().LongestPeriod();
  for (const auto& c : options.candidates) period = std::min(period, c.LongestPeriod());
  return 2 * static_cast<int64_t>(period) + 1;
}

// Fits; the library's complaints about the data are FAILED_PRECONDITION.
absl::StatusOr<forecast::ForecastResult> Fit(const v1::SeriesSelector& s, const UsageSeries& series,
                                             const forecast::ForecastOptions& options) {
  const int64_t needed = HoursNeeded(options);
  if (static_cast<int64_t>(series.values.size()) < needed) {
    return TooShort(s, series.values.size(), "a forecast", needed);
  }
  absl::StatusOr<forecast::ForecastResult> result = forecast::ForecastSeries(series.values, options);
  if (!result.ok() && result.status().code() == absl::StatusCode::kInvalidArgument) {
    return absl::FailedPreconditionError(absl::StrCat("team ", s.team(), ": ",
                                                      result.status().message()));
  }
  return result;
}

v1::ForecastResponse ToResponse(const v1::SeriesSelector& s, const UsageSeries& series,
                                const forecast::ForecastResult& r, int history_hours) {
  v1::ForecastResponse out;
  out.set_team(s.team());
  out.set_resource(ResourceOf(s));
  out.set_metric(s.metric() == v1::USAGE_METRIC_UNSPECIFIED ? v1::USAGE_METRIC_DEMAND : s.metric());
  out.set_start_s(series.start_s);
  const int64_t n = static_cast<int64_t>(series.values.size());
  out.set_hours(n);
  out.set_zero_hours(series.zero_hours);
  out.set_model(r.model.Name());
  if (r.model.kind == forecast::ModelKind::kHoltWinters) {
    v1::ForecastParams* p = out.mutable_params();
    p->set_alpha(r.params.alpha);
    p->set_beta(r.params.beta);
    p->set_gamma1(r.params.gamma1);
    p->set_gamma2(r.params.gamma2);
    p->set_phi(r.params.phi);
  } else if (r.model.kind == forecast::ModelKind::kCombination) {
    for (const auto& m : forecast::CombinationMembers()) out.add_members(m.Name());
  }
  out.set_fit_sse(r.sse);
  v1::ForecastBacktest* bt = out.mutable_backtest();
  const forecast::CandidateResult& chosen = r.Chosen();
  bt->set_mase(chosen.mase);
  bt->set_pinball(chosen.pinball);
  bt->set_mae(chosen.mae);
  bt->set_train_hours(r.split.train);
  bt->set_origins(r.origins);
  bt->set_horizon(r.split.horizon);
  bt->set_scale(r.scale);
  for (const forecast::CandidateResult& c : r.candidates) {
    v1::ForecastCandidate* cand = bt->add_candidates();
    cand->set_model(c.spec.Name());
    if (c.skipped) {
      cand->set_skipped(c.skip_reason);
    } else {
      cand->set_mase(c.mase);
      cand->set_pinball(c.pinball);
      cand->set_mae(c.mae);
    }
  }
  const int64_t next_s = series.start_s + n * 3600;
  for (size_t h = 0; h < r.quantiles.size(); ++h) {
    v1::ForecastPoint* p = out.add_forecast();
    p->set_t(next_s + static_cast<int64_t>(h) * 3600);
    p->set_p10(r.quantiles[h].p10);
    p->set_p50(r.quantiles[h].p50);
    p->set_p90(r.quantiles[h].p90);
    p->set_p99(r.quantiles[h].p99);
  }
  const int64_t keep = std::min<int64_t>(n, history_hours);
  for (int64_t i = n - keep; i < n; ++i) out.add_history(series.values[i]);
  return out;
}

int HourOfWeek(absl::CivilHour when) {
  const int day = (static_cast<int>(absl::GetWeekday(absl::CivilDay(when))) + 7 -
                   static_cast<int>(absl::Weekday::monday)) % 7;
  return day * 24 + when.hour();
}

}  // namespace

std::vector<std::string> LeavesOf(const v1::Config& config, const std::string& team) {
  std::map<std::string, std::string> parent;
  std::set<std::string> inner;
  for (const v1::Team& t : config.teams()) {
    parent[t.name()] = t.parent();
    if (!t.parent().empty()) inner.insert(t.parent());
  }
  std::vector<std::string> leaves;
  if (!parent.count(team)) return leaves;
  for (const auto& [name, unused] : parent) {
    if (inner.count(name)) continue;
    // Walk up; the config compiler has refused cycles, the bound is a guard.
    std::string at = name;
    for (size_t i = 0; i <= parent.size() && !at.empty(); ++i) {
      if (at == team) {
        leaves.push_back(name);
        break;
      }
      auto it = parent.find(at);
      at = it == parent.end() ? "" : it->second;
    }
  }
  return leaves;  // std::map order: sorted.
}

UsageSeries BuildUsageSeries(const std::vector<ledger::UsageRow>& rows,
                             const std::vector<std::string>& leaves, const std::string& resource,
                             const v1::SeriesSelector& selector, int64_t now_ms) {
  const std::set<std::string> wanted(leaves.begin(), leaves.end());
  const int64_t current_hour = FloorHour(now_ms);
  std::map<int64_t, double> by_hour;  // hour start ms -> resource-seconds
  for (const ledger::UsageRow& row : rows) {
    if (row.resource != resource || !wanted.count(row.team)) continue;
    const int64_t hour = FloorHour(row.hour_start_ms);
    if (hour >= current_hour) continue;
    if (hour < selector.since_ms()) continue;
    if (selector.until_ms() > 0 && hour >= selector.until_ms()) continue;
    by_hour[hour] += MetricOf(row, selector.metric());
  }
  UsageSeries series;
  if (by_hour.empty()) return series;
  const int64_t first = by_hour.begin()->first;
  const int64_t last = by_hour.rbegin()->first;
  series.start_s = first / 1000;
  series.values.reserve(static_cast<size_t>((last - first) / kHourMs + 1));
  auto it = by_hour.begin();
  for (int64_t hour = first; hour <= last; hour += kHourMs) {
    if (it != by_hour.end() && it->first == hour) {
      series.values.push_back(ToUnits(it->second));
      ++it;
    } else {
      series.values.push_back(0);
      ++series.zero_hours;
    }
  }
  return series;
}

ForecastServiceImpl::ForecastServiceImpl(CoreLoop* loop, std::unique_ptr<ledger::Store> reader,
                                         Clock* clock, ForecastServiceOptions options)
    : loop_(loop), clock_(clock), options_(options), reader_(std::move(reader)) {
  for (int i = 0; i < std::max(1, options_.workers); ++i) {
    workers_.emplace_back([this] { WorkerMain(); });
  }
}

ForecastServiceImpl::~ForecastServiceImpl() {
  {
    absl::MutexLock lock(&queue_mu_);
    stopping_ = true;
  }
  for (std::thread& t : workers_) t.join();
}

bool ForecastServiceImpl::HasWorkOrStopping() const { return stopping_ || !queue_.empty(); }

void ForecastServiceImpl::WorkerMain() {
  for (;;) {
    std::function<void()> job;
    {
      absl::MutexLock lock(&queue_mu_);
      queue_mu_.Await(absl::Condition(this, &ForecastServiceImpl::HasWorkOrStopping));
      // Queued requests are answered even when stopping.
      if (queue_.empty()) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    job();
  }
}

void ForecastServiceImpl::Enqueue(grpc::CallbackServerContext* ctx,
                                  grpc::ServerUnaryReactor* reactor,
                                  std::function<grpc::Status()> work) {
  {
    absl::MutexLock lock(&queue_mu_);
    if (!stopping_ && static_cast<int>(queue_.size()) < options_.max_queued) {
      queue_.push_back([ctx, reactor, work = std::move(work)] {
        // A caller that gave up is not worth a fit.
        if (ctx->IsCancelled()) {
          reactor->Finish(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled by the caller"));
          return;
        }
        reactor->Finish(work());
      });
      return;
    }
  }
  reactor->Finish(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                               absl::StrCat("more than ", options_.max_queued,
                                            " forecast requests are waiting; retry later")));
}

absl::StatusOr<UsageSeries> ForecastServiceImpl::LoadSeries(const v1::SeriesSelector& s) {
  if (s.team().empty()) return absl::InvalidArgumentError("series.team: required");
  if (!v1::UsageMetric_IsValid(s.metric())) {
    return absl::InvalidArgumentError(
        absl::StrCat("series.metric: ", static_cast<int>(s.metric()), " is not a UsageMetric"));
  }
  if (s.since_ms() < 0) {
    return absl::InvalidArgumentError(absl::StrCat("series.since_ms: ", s.since_ms(), " is negative"));
  }
  if (s.until_ms() < 0 || (s.until_ms() > 0 && s.until_ms() <= s.since_ms())) {
    return absl::InvalidArgumentError(absl::StrCat("series.until_ms: ", s.until_ms(),
                                                   " is not after since_ms (", s.since_ms(), ")"));
  }
  const std::vector<std::string> leaves = LeavesOf(loop_->Published()->config(), s.team());
  if (leaves.empty()) {
    return absl::NotFoundError(absl::StrCat("team '", s.team(), "' is not a team"));
  }
  std::vector<ledger::UsageRow> rows;
  {
    absl::MutexLock lock(&reader_mu_);
    for (const std::string& leaf : leaves) {
      absl::StatusOr<std::vector<ledger::UsageRow>> got = reader_->Usage(leaf, s.since_ms());
      if (!got.ok()) return got.status();
      rows.insert(rows.end(), got->begin(), got->end());
    }
  }
  return BuildUsageSeries(rows, leaves, ResourceOf(s), s, clock_->NowMs());
}

absl::StatusOr<v1::ForecastResponse> ForecastServiceImpl::RunForecast(const v1::ForecastRequest& req) {
  if (absl::Status st = CheckHorizon(req.horizon_hours(), "horizon_hours"); !st.ok()) return st;
  if (req.history_hours() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("history_hours: ", req.history_hours(), " is negative"));
  }
  absl::StatusOr<forecast::ForecastOptions> options =
      OptionsFor(req.model(), req.horizon_hours(), "model");
  if (!options.ok()) return options.status();
  absl::StatusOr<UsageSeries> series = LoadSeries(req.series());
  if (!series.ok()) return series.status();
  absl::StatusOr<forecast::ForecastResult> result = Fit(req.series(), *series, *options);
  if (!result.ok()) return result.status();
  const int history = req.history_hours() > 0 ? req.history_hours()
                                              : std::max(2 * req.horizon_hours(), 336);
  return ToResponse(req.series(), *series, *result, history);
}

absl::StatusOr<v1::RecommendReservationsResponse> ForecastServiceImpl::RunReserve(
    const v1::RecommendReservationsRequest& req) {
  const int horizon = req.horizon_hours() == 0 ? 168 : req.horizon_hours();
  if (absl::Status st = CheckHorizon(horizon, "horizon_hours"); !st.ok()) return st;
  if (!req.has_prices() || !req.prices().has_reserved()) {
    return absl::InvalidArgumentError("prices.reserved.price: missing");
  }
  if (!req.prices().has_on_demand()) {
    return absl::InvalidArgumentError("prices.on_demand.price: missing");
  }
  forecast::ReservationPrices prices;
  prices.reserved = req.prices().reserved().price();
  if (req.prices().reserved().term_hours() != 0) prices.term_hours = req.prices().reserved().term_hours();
  prices.on_demand = req.prices().on_demand().price();
  if (req.prices().has_spot()) {
    prices.spot = forecast::SpotPrice{req.prices().spot().price(),
                                      req.prices().spot().interruption_rate()};
  }
  prices.preemptible_share = req.prices().preemptible_share();
  if (absl::Status st = forecast::ValidatePrices(prices); !st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("prices.", st.message()));
  }
  absl::StatusOr<forecast::ForecastOptions> options = OptionsFor(req.model(), horizon, "model");
  if (!options.ok()) return options.status();
  absl::StatusOr<UsageSeries> series = LoadSeries(req.series());
  if (!series.ok()) return series.status();
  absl::StatusOr<forecast::ForecastResult> result = Fit(req.series(), *series, *options);
  if (!result.ok()) return result.status();
  absl::StatusOr<forecast::ReservationPlan> plan =
      forecast::PlanReservation(forecast::DemandScenarios(*result), prices);
  if (!plan.ok()) return plan.status();

  v1::RecommendReservationsResponse out;
  out.set_team(req.series().team());
  out.set_resource(ResourceOf(req.series()));
  out.set_horizon_hours(horizon);
  out.set_term_hours(prices.term_hours);
  out.set_reserved_gpus(plan->reserved_gpus);
  out.set_critical_ratio(plan->critical_ratio);
  out.set_p_demand_above_reserved(plan->p_demand_above);
  out.set_utilisation(plan->utilisation);
  out.set_demand_gpus(plan->demand);
  out.set_reserved_used_gpus(plan->reserved_used);
  out.set_on_demand_gpus(plan->on_demand);
  out.set_spot_gpus(plan->spot);
  out.set_cost(plan->cost);
  out.set_cost_all_on_demand(plan->cost_all_on_demand);
  *out.mutable_forecast() =
      ToResponse(req.series(), *series, *result, std::max(2 * horizon, 336));
  return out;
}

absl::StatusOr<v1::ProposeTideResponse> ForecastServiceImpl::RunTide(const v1::ProposeTideRequest& req) {
  forecast::TideOptions tide;
  if (req.max_windows() != 0) tide.max_windows = req.max_windows();
  if (req.quantile() != 0) tide.quantile = req.quantile();
  if (tide.max_windows < 1 || tide.max_windows > 12) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_windows: ", req.max_windows(), " is not from 1 to 12"));
  }
  if (!(tide.quantile >= 0.01 && tide.quantile <= 0.99)) {
    return absl::InvalidArgumentError(
        absl::StrCat("quantile: ", req.quantile(), " is not from 0.01 to 0.99"));
  }
  const std::string zone_name = req.timezone().empty() ? "UTC" : req.timezone();
  absl::TimeZone zone;
  if (!absl::LoadTimeZone(zone_name, &zone)) {
    return absl::InvalidArgumentError(
        absl::StrCat("timezone: \"", zone_name, "\" is not a known IANA time zone"));
  }
  absl::StatusOr<UsageSeries> series = LoadSeries(req.series());
  if (!series.ok()) return series.status();
  const int64_t n = static_cast<int64_t>(series->values.size());
  if (n < 2 * forecast::kWeek) return TooShort(req.series(), n, "a tide proposal", 2 * forecast::kWeek);
  // Hours are placed in the week in `zone` from the first one on; a DST
  // change inside the history shifts later hours by one (docs/decisions.md).
  const absl::CivilHour first = absl::ToCivilHour(absl::FromUnixSeconds(series->start_s), zone);
  absl::StatusOr<forecast::TideProposal> proposal =
      forecast::ProposeTide(series->values, HourOfWeek(first), tide);
  if (!proposal.ok()) return proposal.status();

  const v1::SeriesSelector& s = req.series();
  forecast::TideYamlOptions yaml;
  yaml.team = s.team();
  yaml.resource = ResourceOf(s);
  yaml.timezone = zone_name;
  yaml.comment = absl::StrCat(
      "Proposed by ForecastService from ", n, " hours of ", yaml.resource, " ",
      MetricName(s.metric()), " of team ", s.team(), " in the broker's ledger (",
      absl::StrFormat("%04d-%02d-%02d %02d:00", first.year(), first.month(), first.day(),
                      first.hour()),
      " ", zone_name, " onwards", series->zero_hours > 0
          ? absl::StrCat("; ", series->zero_hours, " hours without usage rows taken as 0")
          : std::string(),
      ").\nGuarantees at the P", absl::StrFormat("%g", 100 * tide.quantile),
      " of the demand seen in each window; the base is the quietest window's.\n",
      "Guaranteed GPU-hours per week: ", proposal->weekly_gpu_hours, " with these rules, ",
      proposal->flat_weekly_gpu_hours, " with a flat guarantee of ",
      proposal->flat_weekly_gpu_hours / 168, ".");

  v1::ProposeTideResponse out;
  out.set_team(s.team());
  out.set_resource(yaml.resource);
  out.set_start_s(series->start_s);
  out.set_hours(n);
  out.set_base_guaranteed(proposal->base_guaranteed);
  for (const forecast::TideWindow& w : proposal->windows) {
    v1::TideWindowProposal* pw = out.add_windows();
    for (int d : w.days) pw->add_days(d);
    pw->set_from_hour(w.from_hour);
    pw->set_to_hour(w.to_hour);
    pw->set_level(w.level);
    pw->set_guaranteed(w.guaranteed);
  }
  out.set_flat_level(proposal->flat_level);
  out.set_weekly_gpu_hours(proposal->weekly_gpu_hours);
  out.set_flat_weekly_gpu_hours(proposal->flat_weekly_gpu_hours);
  out.set_yaml(forecast::TideYaml(*proposal, yaml));
  return out;
}

grpc::ServerUnaryReactor* ForecastServiceImpl::Forecast(grpc::CallbackServerContext* ctx,
                                                        const v1::ForecastRequest* req,
                                                        v1::ForecastResponse* resp) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  Enqueue(ctx, reactor, [this, req, resp] {
    absl::StatusOr<v1::ForecastResponse> r = RunForecast(*req);
    if (!r.ok()) return ToGrpc(r.status());
    *resp = *std::move(r);
    return grpc::Status::OK;
  });
  return reactor;
}

grpc::ServerUnaryReactor* ForecastServiceImpl::RecommendReservations(
    grpc::CallbackServerContext* ctx, const v1::RecommendReservationsRequest* req,
    v1::RecommendReservationsResponse* resp) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  Enqueue(ctx, reactor, [this, req, resp] {
    absl::StatusOr<v1::RecommendReservationsResponse> r = RunReserve(*req);
    if (!r.ok()) return ToGrpc(r.status());
    *resp = *std::move(r);
    return grpc::Status::OK;
  });
  return reactor;
}

grpc::ServerUnaryReactor* ForecastServiceImpl::ProposeTide(grpc::CallbackServerContext* ctx,
                                                           const v1::ProposeTideRequest* req,
                                                           v1::ProposeTideResponse* resp) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  Enqueue(ctx, reactor, [this, req, resp] {
    absl::StatusOr<v1::ProposeTideResponse> r = RunTide(*req);
    if (!r.ok()) return ToGrpc(r.status());
    *resp = *std::move(r);
    return grpc::Status::OK;
  });
  return reactor;
}

}  // namespace tidegate::service
