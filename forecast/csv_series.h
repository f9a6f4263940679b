// Reads one hourly series out of CSV text (the files in tests/data and
// what `tidegate forecast --input` is given). Parsing only: the caller reads
// the file, so this stays pure and testable without disk.
//
// The text has a header row. One column holds the time (an integer in any
// unit: seconds, hour indices), one the value. Rows may be selected by exact
// cell matches (`team=vc3sl` in a long table with one row per team and hour).
// If the header has a `wallclock` column ("YYYY-MM-DD HH:MM"), the first
// selected row's wallclock time is kept so that hours can be placed in the
// week (tide proposals, plot labels).
//
// Threading: pure functions.
#ifndef TIDEGATE_FORECAST_CSV_SERIES_H_
#define TIDEGATE_FORECAST_CSV_SERIES_H_

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/civil_time.h"
#include "forecast/series.h"

namespace tidegate::forecast {

struct CsvSeriesOptions {
  std::string source = "input";           // file name, for messages.
  std::string time_column = "hour_start_s";
  std::string value_column;               // required.
  // Keep only rows whose cell in column `first` equals `second` (all must hold).
  std::vector<std::pair<std::string, std::string>> where;
  std::string wallclock_column = "wallclock";  // used when present.
  bool fill_gaps = false;                       // see SeriesOptions.
};

struct CsvSeries {
  HourlySeries series;
  // Wallclock time of series.start, when the file has a wallclock column.
  std::optional<absl::CivilHour> start_wallclock;
  int64_t rows_read = 0;      // data rows in the text.
  int64_t rows_selected = 0;  // rows that passed `where`.
};

// Errors (INVALID_ARGUMENT) read "SOURCE:LINE: FIELD: reason", e.g.
//   "demand.csv:1: demand: no such column (columns: hour_start_s, demand_gpus)"
//   "demand.csv:14: demand_gpus: \"n/a\" is not a number"
//   "demand.csv:9: expected 6 columns, got 5"
//   "demand.csv: no rows with team=vc9"
// plus every error of MakeHourlySeries. Quoted cells ("a,b", "") are read;
// blank lines and a trailing "\r" are ignored.
absl::StatusOr<CsvSeries> ParseCsvSeries(std::string_view text, const CsvSeriesOptions& options);

// Splits one CSV line into cells (RFC 4180 quoting).
std::vector<std::string> SplitCsvLine(std::string_view line);

// Walks CSV text one line at a time, as every CSV reader here does (usage
// series, simulator traces, usage imports): lines end at "\n", a trailing
// "\r" is dropped, numbering starts at 1. Blank lines are returned too (a
// reader may require its header on line 1); so is the empty text after a
// final "\n", and the empty text is one blank line.
class CsvLines {
 public:
  explicit CsvLines(std::string_view text) : text_(text) {}
  // The next line into *line; false after the last.
  bool Next(std::string_view* line);
  // The number of the line Next returned last.
  int line_no() const { return line_no_; }

 private:
  std::string_view text_;
  size_t pos_ = 0;
  int line_no_ = 0;
};

}  // namespace tidegate::forecast

#endif  // TIDEGATE_FORECAST_CSV_SERIES_H_
