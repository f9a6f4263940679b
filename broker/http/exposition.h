// The Prometheus text exposition format (version 0.0.4): HELP and TYPE
// lines, samples with escaped label values, histograms with cumulative
// buckets. Enough of the format for the broker's own metrics and checked by
// `promtool check metrics`; no client library needed.
//
// Threading: ExpositionWriter is thread-compatible; Histogram is not
// synchronised (its owner locks).
#ifndef TIDEGATE_BROKER_HTTP_EXPOSITION_H_
#define TIDEGATE_BROKER_HTTP_EXPOSITION_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tidegate::http {

using Labels = std::vector<std::pair<std::string, std::string>>;

// A label value as the format wants it: backslash, double quote and newline
// escaped (\\, \", \n); everything else, UTF-8 included, as is.
std::string EscapeLabelValue(const std::string& value);
// HELP text: backslash and newline escaped.
std::string EscapeHelp(const std::string& text);
// A sample value: integers without a fraction, +Inf, -Inf, NaN, else the
// shortest text that reads back as the same double.
std::string FormatValue(double value);

// Cumulative-bucket histogram with fixed upper bounds (ascending; +Inf is
// implied).
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void Observe(double value);
  const std::vector<double>& bounds() const { return bounds_; }
  // counts()[i]: observations <= bounds()[i] (cumulative); count(): all.
  std::vector<uint64_t> cumulative() const;
  uint64_t count() const { return count_; }
  double sum() const { return sum_; }

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> per_bucket_;  // non-cumulative; last: above every bound
  uint64_t count_ = 0;
  double sum_ = 0;
};

// Writes families one after another. Each Family() starts a metric family
// (HELP, TYPE); the samples that follow belong to it. A family with no
// samples still shows its HELP and TYPE.
class ExpositionWriter {
 public:
  enum class Type { kCounter, kGauge, kHistogram };
  void Family(const std::string& name, Type type, const std::string& help);
  // A sample of the current family (`name` may carry a suffix: _bucket, ...).
  void Sample(const std::string& name, const Labels& labels, double value);
  // All series of one histogram of the current family under `labels`.
  void HistogramSamples(const std::string& name, const Labels& labels, const Histogram& histogram);
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

}  // namespace tidegate::http

#endif  // TIDEGATE_BROKER_HTTP_EXPOSITION_H_
