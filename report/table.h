// A text table for benchmark output: aligned columns under a header rule. Columns whose
// cells are all numbers are right-aligned, so digits line up.
//   Table t({"size", "ring (ms)", "library (ms)"});
//   t.add_row({"4 MiB", Table::number(1.234), Table::number(1.1)});
//   t.print(std::cout);
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

namespace rg::report {

class Table {
 public:
  explicit Table(std::vector<std::string> header);
  // Throws rg::Error when the row has a different number of cells than the header.
  Table& add_row(std::vector<std::string> cells);
  std::string str() const;
  void print(std::ostream& out) const;

  // Fixed decimals; NaN/Inf print as "-" (a missing measurement).
  static std::string number(double value, int decimals = 3);

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace rg::report
