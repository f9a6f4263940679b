// A plain-text table for people: columns padded to their widest cell, two
// spaces apart, numbers right-aligned. No colours, no Unicode box drawing, so
// it reads the same in a terminal, a log and a CI page.
#ifndef TIDEGATE_CLI_TEXT_TABLE_H_
#define TIDEGATE_CLI_TEXT_TABLE_H_

#include <ostream>
#include <string>
#include <vector>

namespace tidegate::cli {

class TextTable {
 public:
  enum class Align { kLeft, kRight };

  // One header per column; `align` per column (missing entries: left).
  explicit TextTable(std::vector<std::string> headers, std::vector<Align> align = {});

  // A row with at most one cell per column (missing cells are empty).
  void AddRow(std::vector<std::string> cells);

  // Header, then rows; every line ends in '\n' and has no trailing spaces.
  void Print(std::ostream& out) const;

 private:
  std::vector<std::string> headers_;
  std::vector<Align> align_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace tidegate::cli

#endif  // TIDEGATE_CLI_TEXT_TABLE_H_
