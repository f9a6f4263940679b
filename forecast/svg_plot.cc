#include "forecast/svg_plot.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tidegate::forecast {
namespace {

constexpr char kHistoryColour[] = "#4a5a6a";
constexpr char kMedianColour[] = "#d9480f";
constexpr char kBandColour[] = "#ffa94d";
constexpr char kReservedColour[] = "#1971c2";
constexpr std::array<const char*, 7> kWeekdays = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string Num(double v) { return absl::StrFormat("%.1f", v); }

std::string TickLabel(double v, double step) {
  if (step >= 1) return absl::StrFormat("%.0f", v);
  const int decimals = static_cast<int>(std::ceil(-std::log10(step)));
  return absl::StrFormat("%.*f", decimals, v);
}

int WeekdayIndex(absl::CivilDay day) {
  switch (absl::GetWeekday(day)) {
    case absl::Weekday::monday: return 0;
    case absl::Weekday::tuesday: return 1;
    case absl::Weekday::wednesday: return 2;
    case absl::Weekday::thursday: return 3;
    case absl::Weekday::friday: return 4;
    case absl::Weekday::saturday: return 5;
    case absl::Weekday::sunday: return 6;
  }
  return 0;
}

}  // namespace

std::vector<double> NiceTicks(double lo, double hi, int target) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / std::max(1, target);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  }
  std::vector<double> ticks;
  for (double v = std::ceil(lo / step - 1e-9) * step; v <= hi + 1e-9 * step; v += step) {
    ticks.push_back(std::fabs(v) < 1e-12 * step ? 0.0 : v);
  }
  return ticks;
}

// About 175 lines: one SVG drawn back to front (grid, ticks, band and lines,
// axes, legend), every part placed by the scales computed at the top; the
// parts are marked by comments.
std::string RenderForecastSvg(const PlotInput& in) {
  const int horizon = static_cast<int>(in.forecast.size());
  const size_t keep = static_cast<size_t>(std::max(2 * horizon, 336));
  const std::vector<double> hist(
      in.history.size() > keep ? in.history.end() - static_cast<std::ptrdiff_t>(keep)
                               : in.history.begin(),
      in.history.end());
  const int nh = static_cast<int>(hist.size());
  const int total = std::max(1, nh + horizon);

  double lo = 0, hi = 1;
  bool any = false;
  auto see = [&](double v) {
    if (!std::isfinite(v)) return;
    if (!any) {
      lo = hi = v;
      any = true;
    }
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  };
  for (double v : hist) see(v);
  for (const QuantileForecast& q : in.forecast) {
    see(q.p10);
    see(q.p90);
  }
  if (in.reserved) see(*in.reserved);
  if (lo > 0) lo = 0;  // demand charts read best from zero.
  if (hi <= lo) hi = lo + 1;
  hi += 0.05 * (hi - lo);
  const std::vector<double> yticks = NiceTicks(lo, hi, 6);
  const double ystep = yticks.size() > 1 ? yticks[1] - yticks[0] : 1;
  hi = std::max(hi, yticks.back());

  const double left = 64, right = 20, top = 56, bottom = 56;
  const double pw = in.width - left - right;
  const double ph = in.height - top - bottom;
  auto X = [&](double i) { return left + pw * i / total; };
  auto Y = [&](double v) { return top + ph * (1 - (v - lo) / (hi - lo)); };

  std::string svg = absl::StrFormat(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
      "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n",
      in.width, in.height, in.width, in.height);
  absl::StrAppend(&svg, "<title>", Escape(in.title), "</title>\n");
  absl::StrAppend(&svg, "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
  absl::StrAppend(&svg, "<text x=\"", Num(left), "\" y=\"22\" font-size=\"15\" font-weight=\"bold\">",
                  Escape(in.title), "</text>\n");

  // Y grid and labels.
  absl::StrAppend(&svg, "<g stroke=\"#e9ecef\" stroke-width=\"1\">\n");
  for (double t : yticks) {
    absl::StrAppend(&svg, "<line x1=\"", Num(left), "\" y1=\"", Num(Y(t)), "\" x2=\"",
                    Num(left + pw), "\" y2=\"", Num(Y(t)), "\"/>\n");
  }
  absl::StrAppend(&svg, "</g>\n<g text-anchor=\"end\" fill=\"#495057\">\n");
  for (double t : yticks) {
    absl::StrAppend(&svg, "<text x=\"", Num(left - 6), "\" y=\"", Num(Y(t) + 4), "\">",
                    TickLabel(t, ystep), "</text>\n");
  }
  absl::StrAppend(&svg, "</g>\n");
  absl::StrAppend(&svg, "<text transform=\"translate(16 ", Num(top + ph / 2),
                  ") rotate(-90)\" text-anchor=\"middle\" fill=\"#495057\">", Escape(in.y_label),
                  "</text>\n");

  // X ticks: a small one every day; labels every day, week, 4 weeks… as room
  // allows (75 px apart), at midnight (Mondays past one day) when the
  // calendar is known, else counted from the forecast start.
  const double px_per_day = pw * 24.0 / total;
  int label_days = 364;
  for (int d : {1, 7, 28, 91, 182}) {
    if (px_per_day * d >= 75) {
      label_days = d;
      break;
    }
  }
  absl::StrAppend(&svg, "<g fill=\"#495057\" text-anchor=\"middle\">\n");
  int mondays = 0;
  for (int i = 0; i <= total; ++i) {
    const int rel = i - nh;  // hours from the forecast start.
    bool tick = false;
    std::string label;
    if (in.forecast_start) {
      const absl::CivilHour when = *in.forecast_start + rel;
      const int weekday = WeekdayIndex(absl::CivilDay(when));
      tick = when.hour() == 0;
      const bool monday = tick && weekday == 0;
      if (tick && (label_days == 1 || (monday && mondays++ % (label_days / 7) == 0))) {
        label = absl::StrFormat("%s %02d-%02d", kWeekdays[weekday], when.month(), when.day());
      }
    } else {
      tick = rel % 24 == 0;
      if (tick && (rel / 24) % label_days == 0) {
        label = rel == 0 ? "now" : absl::StrFormat("%+dh", rel);
      }
    }
    if (!tick) continue;
    absl::StrAppend(&svg, "<line x1=\"", Num(X(i)), "\" y1=\"", Num(top + ph), "\" x2=\"",
                    Num(X(i)), "\" y2=\"", Num(top + ph + (label.empty() ? 3 : 6)),
                    "\" stroke=\"#868e96\"/>\n");
    // Labels too close to the right edge would be cut.
    if (label.empty() || X(i) > in.width - 34.0) continue;
    absl::StrAppend(&svg, "<text x=\"", Num(X(i)), "\" y=\"", Num(top + ph + 19), "\">", label,
                    "</text>\n");
  }
  absl::StrAppend(&svg, "</g>\n");
  absl::StrAppend(&svg, "<text x=\"", Num(left + pw / 2), "\" y=\"", Num(in.height - 12.0),
                  "\" text-anchor=\"middle\" fill=\"#495057\">",
                  in.forecast_start ? "time (hourly)" : "hours from the forecast start",
                  "</text>\n");

  // The band, then the lines.
  if (horizon > 0) {
    std::string pts;
    for (int h = 0; h < horizon; ++h) {
      absl::StrAppend(&pts, Num(X(nh + h)), ",", Num(Y(in.forecast[h].p90)), " ");
    }
    for (int h = horizon - 1; h >= 0; --h) {
      absl::StrAppend(&pts, Num(X(nh + h)), ",", Num(Y(in.forecast[h].p10)), " ");
    }
    absl::StrAppend(&svg, "<polygon points=\"", pts, "\" fill=\"", kBandColour,
                    "\" fill-opacity=\"0.35\" stroke=\"none\"/>\n");
  }
  if (nh > 0) {
    std::string pts;
    for (int i = 0; i < nh; ++i) absl::StrAppend(&pts, Num(X(i)), ",", Num(Y(hist[i])), " ");
    absl::StrAppend(&svg, "<polyline points=\"", pts, "\" fill=\"none\" stroke=\"",
                    kHistoryColour, "\" stroke-width=\"1.2\"/>\n");
  }
  if (horizon > 0) {
    std::string pts;
    if (nh > 0) absl::StrAppend(&pts, Num(X(nh - 1)), ",", Num(Y(hist.back())), " ");
    for (int h = 0; h < horizon; ++h) {
      absl::StrAppend(&pts, Num(X(nh + h)), ",", Num(Y(in.forecast[h].p50)), " ");
    }
    absl::StrAppend(&svg, "<polyline points=\"", pts, "\" fill=\"none\" stroke=\"", kMedianColour,
                    "\" stroke-width=\"1.6\"/>\n");
  }
  absl::StrAppend(&svg, "<line x1=\"", Num(X(nh)), "\" y1=\"", Num(top), "\" x2=\"", Num(X(nh)),
                  "\" y2=\"", Num(top + ph), "\" stroke=\"#adb5bd\" stroke-dasharray=\"3 3\"/>\n");
  if (in.reserved) {
    absl::StrAppend(&svg, "<line x1=\"", Num(left), "\" y1=\"", Num(Y(*in.reserved)), "\" x2=\"",
                    Num(left + pw), "\" y2=\"", Num(Y(*in.reserved)), "\" stroke=\"",
                    kReservedColour, "\" stroke-width=\"1.5\" stroke-dasharray=\"8 4\"/>\n");
  }
  // Axes.
  absl::StrAppend(&svg, "<path d=\"M", Num(left), " ", Num(top), " V", Num(top + ph), " H",
                  Num(left + pw), "\" fill=\"none\" stroke=\"#495057\"/>\n");

  // Legend.
  struct Entry {
    std::string label;
    std::string swatch;
  };
  std::vector<Entry> legend = {
      {"history", absl::StrCat("stroke=\"", kHistoryColour, "\" stroke-width=\"2\"")},
      {"P50 forecast", absl::StrCat("stroke=\"", kMedianColour, "\" stroke-width=\"2\"")},
      {"P10–P90", absl::StrCat("stroke=\"", kBandColour, "\" stroke-width=\"8\" stroke-opacity=\"0.5\"")},
  };
  if (in.reserved) {
    legend.push_back({absl::StrFormat("reserved %.0f", *in.reserved),
                      absl::StrCat("stroke=\"", kReservedColour,
                                   "\" stroke-width=\"2\" stroke-dasharray=\"8 4\"")});
  }
  double lx = left;
  for (const Entry& e : legend) {
    absl::StrAppend(&svg, "<line x1=\"", Num(lx), "\" y1=\"36\" x2=\"", Num(lx + 22),
                    "\" y2=\"36\" ", e.swatch, "/>\n");
    absl::StrAppend(&svg, "<text x=\"", Num(lx + 28), "\" y=\"40\">", Escape(e.label),
                    "</text>\n");
    lx += 130;
  }
  absl::StrAppend(&svg, "</svg>\n");
  return svg;
}

}  // namespace tidegate::forecast
