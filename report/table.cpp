// Table layout: widths in code points (so "µs" counts as two), two spaces between columns.
#include "report/table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ostream>

#include "tensor/error.h"

namespace rg::report {
namespace {

std::size_t display_width(const std::string& utf8) {
  return static_cast<std::size_t>(
      std::count_if(utf8.begin(), utf8.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

bool is_number(const std::string& cell) {
  if (cell.empty() || cell == "-") return true;  // blanks and gaps don't decide alignment
  char* end = nullptr;
  std::strtod(cell.c_str(), &end);
  return end != cell.c_str() && (*end == '\0' || *end == '%' || *end == 'x');
}

std::string pad(const std::string& cell, std::size_t width, bool right) {
  const std::string fill(width - display_width(cell), ' ');
  return right ? fill + cell : cell + fill;
}

}  // namespace

Table::Table(std::vector<std::string> header) : header_(std::move(header)) {
  RG_CHECK(!header_.empty(), "Table: the header needs at least one column");
}

Table& Table::add_row(std::vector<std::string> cells) {
  RG_CHECK(cells.size() == header_.size(), "Table::add_row: ", cells.size(), " cells for ", header_.size(),
           " columns");
  rows_.push_back(std::move(cells));
  return *this;
}

std::string Table::str() const {
  const std::size_t columns = header_.size();
  std::vector<std::size_t> widths(columns);
  std::vector<bool> right(columns, !rows_.empty());
  for (std::size_t c = 0; c < columns; ++c) {
    widths[c] = display_width(header_[c]);
    for (const auto& row : rows_) {
      widths[c] = std::max(widths[c], display_width(row[c]));
      right[c] = right[c] && is_number(row[c]);
    }
  }
  const auto line = [&](const std::vector<std::string>& cells) {
    std::string text;
    for (std::size_t c = 0; c < columns; ++c) text += (c ? "  " : "") + pad(cells[c], widths[c], right[c]);
    text.erase(text.find_last_not_of(' ') + 1);
    return text + '\n';
  };
  std::vector<std::string> rule;
  for (std::size_t width : widths) rule.emplace_back(width, '-');
  std::string text = line(header_) + line(rule);
  for (const auto& row : rows_) text += line(row);
  return text;
}

void Table::print(std::ostream& out) const { out << str(); }

std::string Table::number(double value, int decimals) {
  if (!std::isfinite(value)) return "-";
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

}  // namespace rg::report
