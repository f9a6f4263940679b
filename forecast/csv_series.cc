#include "forecast/csv_series.h"

#include <cmath>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"

namespace tidegate::forecast {
namespace {

int FindColumn(const std::vector<std::string>& header, const std::string& name) {
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] == name) return static_cast<int>(i);
  }
  return -1;
}

absl::Status NoSuchColumn(const CsvSeriesOptions& options, const std::string& name,
                          const std::vector<std::string>& header) {
  return absl::InvalidArgumentError(absl::StrCat(options.source, ":1: ", name,
                                                 ": no such column (columns: ",
                                                 absl::StrJoin(header, ", "), ")"));
}

// Integer times; "3600.0" is accepted, "3600.5" is not.
bool ParseTime(const std::string& cell, int64_t* out) {
  if (absl::SimpleAtoi(cell, out)) return true;
  double d = 0;
  if (!absl::SimpleAtod(cell, &d) || !std::isfinite(d) || d != std::floor(d) ||
      std::fabs(d) > 9e15) {
    return false;
  }
  *out = static_cast<int64_t>(d);
  return true;
}

}  // namespace

std::vector<std::string> SplitCsvLine(std::string_view line) {
  std::vector<std::string> cells;
  std::string cell;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < line.size() && line[i + 1] == '"') {
          cell.push_back('"');
          ++i;
        } else {
          quoted = false;
        }
      } else {
        cell.push_back(c);
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      cells.push_back(std::move(cell));
      cell.clear();
    } else {
      cell.push_back(c);
    }
  }
  cells.push_back(std::move(cell));
  return cells;
}

bool CsvLines::Next(std::string_view* line) {
  if (pos_ > text_.size()) return false;
  size_t end = text_.find('\n', pos_);
  if (end == std::string_view::npos) end = text_.size();
  *line = text_.substr(pos_, end - pos_);
  pos_ = end + 1;
  ++line_no_;
  if (!line->empty() && line->back() == '\r') line->remove_suffix(1);
  return true;
}

absl::StatusOr<CsvSeries> ParseCsvSeries(std::string_view text, const CsvSeriesOptions& options) {
  std::vector<std::string> header;
  int time_col = -1;
  int value_col = -1;
  int wall_col = -1;
  std::vector<std::pair<int, std::string>> filters;
  std::vector<RawPoint> points;
  CsvSeries out;
  std::optional<absl::CivilHour> first_wall;

  CsvLines lines(text);
  std::string_view line;
  while (lines.Next(&line)) {
    const int line_no = lines.line_no();
    if (line.empty()) continue;
    std::vector<std::string> cells = SplitCsvLine(line);
    if (header.empty()) {
      header = std::move(cells);
      for (std::string& h : header) {
        h = std::string(absl::StripAsciiWhitespace(h));
      }
      time_col = FindColumn(header, options.time_column);
      if (time_col < 0) return NoSuchColumn(options, options.time_column, header);
      value_col = FindColumn(header, options.value_column);
      if (value_col < 0) return NoSuchColumn(options, options.value_column, header);
      wall_col = FindColumn(header, options.wallclock_column);
      for (const auto& [column, value] : options.where) {
        const int c = FindColumn(header, column);
        if (c < 0) return NoSuchColumn(options, column, header);
        filters.emplace_back(c, value);
      }
      continue;
    }
    ++out.rows_read;
    if (cells.size() != header.size()) {
      return absl::InvalidArgumentError(absl::StrCat(options.source, ":", line_no, ": expected ",
                                                     header.size(), " columns, got ",
                                                     cells.size()));
    }
    bool keep = true;
    for (const auto& [c, value] : filters) {
      if (cells[c] != value) keep = false;
    }
    if (!keep) continue;
    ++out.rows_selected;
    RawPoint p;
    p.line = line_no;
    const std::string time_cell(absl::StripAsciiWhitespace(cells[time_col]));
    if (!ParseTime(time_cell, &p.time)) {
      return absl::InvalidArgumentError(absl::StrCat(options.source, ":", line_no, ": ",
                                                     options.time_column, ": \"", time_cell,
                                                     "\" is not a whole number"));
    }
    const std::string value_cell(absl::StripAsciiWhitespace(cells[value_col]));
    if (!absl::SimpleAtod(value_cell, &p.value) || !std::isfinite(p.value)) {
      return absl::InvalidArgumentError(absl::StrCat(options.source, ":", line_no, ": ",
                                                     options.value_column, ": \"", value_cell,
                                                     "\" is not a number"));
    }
    if (points.empty() && wall_col >= 0) {
      std::string wall(absl::StripAsciiWhitespace(cells[wall_col]));
      for (char& c : wall) {
        if (c == ' ') c = 'T';
      }
      absl::CivilHour hour;
      if (absl::ParseLenientCivilTime(wall, &hour)) first_wall = hour;
    }
    points.push_back(p);
  }
  if (header.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(options.source, ": empty file, no header"));
  }
  if (points.empty() && !options.where.empty()) {
    std::vector<std::string> conds;
    for (const auto& [column, value] : options.where) conds.push_back(column + "=" + value);
    return absl::InvalidArgumentError(
        absl::StrCat(options.source, ": no rows with ", absl::StrJoin(conds, ", ")));
  }
  SeriesOptions series_options;
  series_options.source = options.source;
  series_options.time_field = options.time_column;
  series_options.value_field = options.value_column;
  series_options.fill_gaps = options.fill_gaps;
  absl::StatusOr<HourlySeries> series = MakeHourlySeries(points, series_options);
  if (!series.ok()) return series.status();
  out.series = *std::move(series);
  out.start_wallclock = first_wall;
  return out;
}

}  // namespace tidegate::forecast
