// Panels of small grids, side by side and in lines: each cell a short text on a shade, with
// arrows from a cell to another cell of its row. Made for the steps of an algorithm over ranks
// and chunks (chapter 08 draws the ring all-reduce: a panel per step, a row per chunk, a column
// per rank, an arrow per message). The same guarantees as the charts of svg.h: well-formed XML,
// no NaN/Inf, a "no data" note when there is no panel.
#pragma once
#include <string>
#include <vector>

#include "report/svg.h"

namespace rg::report {

// An arrow within one row, drawn straight from one cell's right edge to the other's left edge.
// One with to_column < from_column goes around, as on a ring: out at the grid's right edge,
// back in at its left edge.
struct GridArrow {
  int row = 0;
  int from_column = 0, to_column = 0;
};

struct GridPanel {
  std::string title = {};
  std::vector<std::vector<std::string>> text = {};  // [row][column]: a few characters each
  std::vector<std::vector<double>> shade = {};      // [row][column] in [0, 1], 0 white; empty: all 0
  std::vector<GridArrow> arrows = {};
};

struct GridOptions {
  std::string title = {};
  // Their counts are every panel's shape: rows x columns.
  std::vector<std::string> row_labels = {}, column_labels = {};
  int panels_per_line = 4;
};

class GridPanels : public SvgChart {
 public:
  // Throws rg::Error without rows or columns, or when panels_per_line < 1.
  explicit GridPanels(GridOptions options);
  // Throws rg::Error, naming the panel, when its text or shade is not rows x columns, or an
  // arrow starts or ends outside the grid or on its own cell.
  GridPanels& add_panel(GridPanel panel);
  std::string str() const override;

 private:
  GridOptions options_;
  std::vector<GridPanel> panels_;
};

}  // namespace rg::report
