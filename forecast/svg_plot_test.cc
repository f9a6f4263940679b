#include "forecast/svg_plot.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tidegate::forecast {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Checks that every element is closed in order and attributes are quoted:
// enough XML to catch a broken writer. Returns "" or what is wrong.
std::string CheckWellFormed(const std::string& xml) {
  std::vector<std::string> open;
  size_t pos = 0;
  while ((pos = xml.find('<', pos)) != std::string::npos) {
    const size_t end = xml.find('>', pos);
    if (end == std::string::npos) return "unclosed tag at " + std::to_string(pos);
    std::string tag = xml.substr(pos + 1, end - pos - 1);
    pos = end + 1;
    if (tag[0] == '?' || tag[0] == '!') continue;
    if (tag[0] == '/') {
      const std::string name = tag.substr(1);
      if (open.empty() || open.back() != name) return "unexpected </" + name + ">";
      open.pop_back();
      continue;
    }
    size_t quotes = 0;
    for (char c : tag) quotes += c == '"';
    if (quotes % 2 != 0) return "odd quotes in <" + tag + ">";
    if (tag.back() == '/') continue;
    open.push_back(tag.substr(0, tag.find(' ')));
  }
  if (!open.empty()) return "unclosed <" + open.back() + ">";
  return "";
}

PlotInput Example() {
  PlotInput in;
  in.title = "demand <gpus> & more";
  for (int i = 0; i < 400; ++i) in.history.push_back(20 + (i % 24));
  for (int h = 0; h < 48; ++h) in.forecast.push_back({15, 25, 35, 45});
  return in;
}

TEST(SvgPlotTest, ChartIsWellFormedWithBandLinesAndEscapedTitle) {
  PlotInput in = Example();
  in.reserved = 30;
  const std::string svg = RenderForecastSvg(in);
  EXPECT_EQ(CheckWellFormed(svg), "");
  EXPECT_THAT(svg, HasSubstr("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_THAT(svg, HasSubstr("demand &lt;gpus&gt; &amp; more"));
  EXPECT_THAT(svg, HasSubstr("<polygon"));               // the P10–P90 band.
  EXPECT_THAT(svg, HasSubstr("reserved 30"));            // legend of the reserved line.
  EXPECT_THAT(svg, HasSubstr(">now</text>"));            // x axis relative to the forecast.
  EXPECT_THAT(svg, HasSubstr(">-168h</text>"));  // weekly labels: days would crowd.
}

TEST(SvgPlotTest, CalendarLabelsWhenTheStartIsKnown) {
  PlotInput in = Example();
  in.forecast_start = absl::CivilHour(2020, 5, 18, 0);  // a Monday.
  const std::string svg = RenderForecastSvg(in);
  EXPECT_EQ(CheckWellFormed(svg), "");
  EXPECT_THAT(svg, HasSubstr(">Mon 05-18</text>"));
  EXPECT_THAT(svg, HasSubstr(">Mon 05-11</text>"));
}

TEST(SvgPlotTest, NiceTicksAreRoundNumbers) {
  EXPECT_THAT(NiceTicks(0, 47, 5), ElementsAre(0, 10, 20, 30, 40));
  EXPECT_THAT(NiceTicks(0, 1, 4), ElementsAre(0, 0.5, 1));
  EXPECT_THAT(NiceTicks(0, 230, 6), ElementsAre(0, 50, 100, 150, 200));
}

}  // namespace
}  // namespace tidegate::forecast
