#include "forecast/model.h"

#include <algorithm>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "forecast/holt_winters.h"

namespace tidegate::forecast {
namespace {

// The last `period` observations; forecasts repeat them.
class SeasonalNaiveState final : public ModelState {
 public:
  explicit SeasonalNaiveState(std::vector<double> last) : buf_(std::move(last)) {}

  void Observe(double y) override {
    buf_[head_] = y;
    if (++head_ == buf_.size()) head_ = 0;
  }

  void Forecast(int horizon, double* out) const override {
    size_t j = head_;  // the oldest value: the same phase as the next hour.
    for (int h = 0; h < horizon; ++h) {
      out[h] = buf_[j];
      if (++j == buf_.size()) j = 0;
    }
  }

  std::unique_ptr<ModelState> Clone() const override {
    return std::make_unique<SeasonalNaiveState>(*this);
  }

 private:
  std::vector<double> buf_;
  size_t head_ = 0;
};

class MeanState final : public ModelState {
 public:
  explicit MeanState(std::vector<std::unique_ptr<ModelState>> members)
      : members_(std::move(members)) {}

  void Observe(double y) override {
    for (auto& m : members_) m->Observe(y);
  }

  void Forecast(int horizon, double* out) const override {
    std::vector<double> one(static_cast<size_t>(horizon));
    std::fill(out, out + horizon, 0.0);
    for (const auto& m : members_) {
      m->Forecast(horizon, one.data());
      for (int h = 0; h < horizon; ++h) out[h] += one[h] / static_cast<double>(members_.size());
    }
  }

  std::unique_ptr<ModelState> Clone() const override {
    std::vector<std::unique_ptr<ModelState>> copies;
    for (const auto& m : members_) copies.push_back(m->Clone());
    return std::make_unique<MeanState>(std::move(copies));
  }

 private:
  std::vector<std::unique_ptr<ModelState>> members_;
};

std::vector<std::string> KnownNames() {
  std::vector<std::string> names;
  for (const ModelSpec& s : DefaultCandidates()) names.push_back(s.Name());
  names.push_back("holt_winters_24");
  names.push_back("holt_winters_24_168");
  names.push_back("holt_winters_24_168_notrend");
  names.push_back("holt_winters_24_notrend");
  names.push_back("holt_winters_168_damped");
  return names;
}

}  // namespace

ModelSpec ModelSpec::SeasonalNaive(int period) {
  ModelSpec s;
  s.kind = ModelKind::kSeasonalNaive;
  s.period = period;
  s.period2 = 0;
  s.trend = Trend::kNone;
  return s;
}

ModelSpec ModelSpec::HoltWinters(int period, int period2, Trend trend) {
  ModelSpec s;
  s.kind = ModelKind::kHoltWinters;
  s.period = period;
  s.period2 = period2;
  s.trend = trend;
  return s;
}

ModelSpec ModelSpec::Combination() {
  ModelSpec s;
  s.kind = ModelKind::kCombination;
  s.period = kWeek;
  s.period2 = 0;
  s.trend = Trend::kNone;
  return s;
}

int ModelSpec::LongestPeriod() const {
  if (kind == ModelKind::kCombination) {
    int m = 0;
    for (const ModelSpec& s : CombinationMembers()) m = std::max(m, s.LongestPeriod());
    return m;
  }
  return period2 > period ? period2 : period;
}

std::vector<ModelSpec> CombinationMembers() {
  return {
      ModelSpec::SeasonalNaive(kWeek),
      ModelSpec::HoltWinters(kDay, 0, Trend::kDamped),
      ModelSpec::HoltWinters(kDay, kWeek, Trend::kDamped),
  };
}

std::unique_ptr<ModelState> MakeMeanState(std::vector<std::unique_ptr<ModelState>> members) {
  return std::make_unique<MeanState>(std::move(members));
}

std::string ModelSpec::Name() const {
  if (kind == ModelKind::kCombination) return "combination";
  if (kind == ModelKind::kSeasonalNaive) return absl::StrCat("seasonal_naive_", period);
  std::string name = absl::StrCat("holt_winters_", period);
  if (period2 > 0) absl::StrAppend(&name, "_", period2);
  if (trend == Trend::kDamped) absl::StrAppend(&name, "_damped");
  if (trend == Trend::kNone) absl::StrAppend(&name, "_notrend");
  return name;
}

absl::StatusOr<ModelSpec> ParseModelName(const std::string& name) {
  if (name == "combination") return ModelSpec::Combination();
  std::string rest;
  if (name.rfind("seasonal_naive_", 0) == 0) {
    rest = name.substr(15);
    if (rest == "24") return ModelSpec::SeasonalNaive(kDay);
    if (rest == "168") return ModelSpec::SeasonalNaive(kWeek);
  } else if (name.rfind("holt_winters_", 0) == 0) {
    rest = name.substr(13);
    Trend trend = Trend::kAdditive;
    auto strip = [&rest](const std::string& suffix) {
      if (rest.size() > suffix.size() &&
          rest.compare(rest.size() - suffix.size(), suffix.size(), suffix) == 0) {
        rest.resize(rest.size() - suffix.size());
        return true;
      }
      return false;
    };
    if (strip("_damped")) {
      trend = Trend::kDamped;
    } else if (strip("_notrend")) {
      trend = Trend::kNone;
    }
    if (rest == "24") return ModelSpec::HoltWinters(kDay, 0, trend);
    if (rest == "168") return ModelSpec::HoltWinters(kWeek, 0, trend);
    if (rest == "24_168") return ModelSpec::HoltWinters(kDay, kWeek, trend);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown model \"", name, "\" (known: auto, ", absl::StrJoin(KnownNames(), ", "),
      "; holt_winters_ takes 24, 168 or 24_168 with an optional _damped or _notrend)"));
}

std::vector<ModelSpec> DefaultCandidates() {
  return {
      ModelSpec::SeasonalNaive(kDay),
      ModelSpec::SeasonalNaive(kWeek),
      ModelSpec::HoltWinters(kDay, 0, Trend::kDamped),
      ModelSpec::HoltWinters(kDay, kWeek, Trend::kDamped),
      ModelSpec::Combination(),
  };
}

absl::StatusOr<FittedModel> FitModel(const ModelSpec& spec, const std::vector<double>& y,
                                     const FitOptions& options) {
  const int m = spec.LongestPeriod();
  if (static_cast<int64_t>(y.size()) < 2 * static_cast<int64_t>(m)) {
    return absl::InvalidArgumentError(absl::StrCat(spec.Name(), ": ", y.size(),
                                                   " hours is shorter than two seasons of ", m,
                                                   " hours (", 2 * m, ")"));
  }
  FittedModel fitted;
  fitted.spec = spec;
  if (spec.kind == ModelKind::kCombination) {
    std::vector<std::unique_ptr<ModelState>> members;
    const std::vector<ModelSpec> specs = CombinationMembers();
    for (size_t i = 0; i < specs.size(); ++i) {
      FitOptions member_options = options;
      member_options.warm_start = nullptr;
      if (options.warm_start != nullptr && i < options.warm_start->members.size()) {
        member_options.warm_start = &options.warm_start->members[i];
      }
      absl::StatusOr<FittedModel> m = FitModel(specs[i], y, member_options);
      if (!m.ok()) return m.status();
      fitted.sse += m->sse / static_cast<double>(specs.size());
      fitted.evaluations += m->evaluations;
      members.push_back(std::move(m->state));
      fitted.members.push_back(std::move(*m));
    }
    fitted.state = MakeMeanState(std::move(members));
    return fitted;
  }
  if (spec.kind == ModelKind::kSeasonalNaive) {
    for (size_t t = static_cast<size_t>(m); t < y.size(); ++t) {
      const double e = y[t] - y[t - m];
      fitted.sse += e * e;
    }
    fitted.state = std::make_unique<SeasonalNaiveState>(
        std::vector<double>(y.end() - m, y.end()));
    return fitted;
  }
  HoltWintersFit fit = FitHoltWinters(spec, y, options);
  fitted.params = fit.params;
  fitted.init = fit.init;
  fitted.sse = fit.sse;
  fitted.evaluations = fit.evaluations;
  fitted.state = MakeHoltWintersState(spec, fit, y);
  return fitted;
}

}  // namespace tidegate::forecast
