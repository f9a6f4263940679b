#include "cli/text_table.h"

#include <sstream>

#include "gtest/gtest.h"

namespace tidegate::cli {
namespace {

TEST(TextTableTest, PadsColumnsToTheWidestCellAndAlignsNumbersRight) {
  TextTable t({"team", "GPU-h"}, {TextTable::Align::kLeft, TextTable::Align::kRight});
  t.AddRow({"research", "1.50"});
  t.AddRow({"ml", "12.25"});
  std::ostringstream out;
  t.Print(out);
  EXPECT_EQ(out.str(),
            "team      GPU-h\n"
            "research   1.50\n"
            "ml        12.25\n");
}

TEST(TextTableTest, MissingCellsAreEmptyAndLinesHaveNoTrailingSpaces) {
  TextTable t({"a", "b"});
  t.AddRow({"x"});
  std::ostringstream out;
  t.Print(out);
  EXPECT_EQ(out.str(), "a  b\nx\n");
}

}  // namespace
}  // namespace tidegate::cli
