#include "broker/http/exposition.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace tidegate::http {

std::string EscapeLabelValue(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
  return out;
}

std::string EscapeHelp(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", value);
    return buf;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", value);
  // The shortest of %.15g..%.17g that reads back exactly.
  for (int precision = 15; precision < 17; ++precision) {
    char shorter[32];
    std::snprintf(shorter, sizeof shorter, "%.*g", precision, value);
    if (std::strtod(shorter, nullptr) == value) return shorter;
  }
  return buf;
}

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), per_bucket_(bounds_.size() + 1, 0) {}

void Histogram::Observe(double value) {
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  ++per_bucket_[i];
  ++count_;
  sum_ += value;
}

std::vector<uint64_t> Histogram::cumulative() const {
  std::vector<uint64_t> out(bounds_.size());
  uint64_t running = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    running += per_bucket_[i];
    out[i] = running;
  }
  return out;
}

namespace {

const char* TypeName(ExpositionWriter::Type type) {
  switch (type) {
    case ExpositionWriter::Type::kCounter: return "counter";
    case ExpositionWriter::Type::kGauge: return "gauge";
    case ExpositionWriter::Type::kHistogram: return "histogram";
  }
  return "untyped";
}

}  // namespace

void ExpositionWriter::Family(const std::string& name, Type type, const std::string& help) {
  text_ += "# HELP " + name + " " + EscapeHelp(help) + "\n";
  text_ += "# TYPE " + name + " " + TypeName(type) + "\n";
}

void ExpositionWriter::Sample(const std::string& name, const Labels& labels, double value) {
  text_ += name;
  if (!labels.empty()) {
    text_ += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i > 0) text_ += ',';
      text_ += labels[i].first + "=\"" + EscapeLabelValue(labels[i].second) + "\"";
    }
    text_ += '}';
  }
  text_ += ' ';
  text_ += FormatValue(value);
  text_ += '\n';
}

void ExpositionWriter::HistogramSamples(const std::string& name, const Labels& labels, const Histogram& histogram) {
  const std::vector<uint64_t> cumulative = histogram.cumulative();
  for (size_t i = 0; i < histogram.bounds().size(); ++i) {
    Labels with_le = labels;
    with_le.emplace_back("le", FormatValue(histogram.bounds()[i]));
    Sample(name + "_bucket", with_le, static_cast<double>(cumulative[i]));
  }
  Labels inf = labels;
  inf.emplace_back("le", "+Inf");
  Sample(name + "_bucket", inf, static_cast<double>(histogram.count()));
  Sample(name + "_sum", labels, histogram.sum());
  Sample(name + "_count", labels, static_cast<double>(histogram.count()));
}

}  // namespace tidegate::http
