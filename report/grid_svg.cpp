// GridPanels: fixed-size cells laid out panel by panel, drawn with the kit of svg_canvas.h.
#include "report/grid_svg.h"

#include <algorithm>
#include <cmath>

#include "report/svg_canvas.h"
#include "tensor/error.h"

namespace rg::report {

using namespace detail;

namespace {

constexpr double kCellWidth = 62, kCellHeight = 24;
constexpr double kColumnGap = 18, kRowGap = 4;  // the arrows run in the column gaps
constexpr double kStub = 16;                    // room for the wrapping arrows at either side
constexpr double kPanelTitle = 20, kColumnLabels = 18, kPanelPad = 18;

// Where a panel's pieces go, relative to its top left corner.
struct PanelGeometry {
  double label_width;  // the row labels
  int rows, columns;
  double grid_left() const { return label_width + kStub; }
  double grid_top() const { return kPanelTitle + kColumnLabels; }
  double cell_x(int column) const { return grid_left() + column * (kCellWidth + kColumnGap); }
  double cell_y(int row) const { return grid_top() + row * (kCellHeight + kRowGap); }
  double grid_right() const { return cell_x(columns - 1) + kCellWidth; }
  double width() const { return grid_right() + kStub + kPanelPad; }
  double height() const { return cell_y(rows - 1) + kCellHeight + kPanelPad; }
};

// A horizontal arrow from x1 to x2 (x2 > x1) at height y, its head at x2.
void arrow(Svg& svg, double x1, double x2, double y) { svg.arrow(x1, y, x2, y, colour(1)); }

void draw_panel(Svg& svg, const GridPanel& panel, const GridOptions& options, const PanelGeometry& g, double left,
                double top) {
  svg.text(left + (g.grid_left() + g.grid_right()) / 2, top + 14, panel.title, "middle", " font-weight=\"bold\"");
  for (int c = 0; c < g.columns; ++c)
    svg.text(left + g.cell_x(c) + kCellWidth / 2, top + kPanelTitle + 12, options.column_labels[c], "middle");
  for (int r = 0; r < g.rows; ++r) {
    const double y = top + g.cell_y(r);
    svg.text(left + g.label_width - 4, y + kCellHeight / 2 + 4, options.row_labels[r], "end");
    for (int c = 0; c < g.columns; ++c) {
      const double shade = panel.shade.empty() ? 0 : panel.shade[r][c];
      const double opacity = std::isfinite(shade) ? 0.7 * std::clamp(shade, 0.0, 1.0) : 0;
      svg.rect(left + g.cell_x(c), y, kCellWidth, kCellHeight, colour(0),
               " fill-opacity=\"" + num(opacity) + "\" stroke=\"#888\"");
      svg.end_rect(options.row_labels[r] + ", " + options.column_labels[c] + ": " + panel.text[r][c]);
      svg.text(left + g.cell_x(c) + kCellWidth / 2, y + kCellHeight / 2 + 4, panel.text[r][c], "middle",
               " font-size=\"11\"");
    }
  }
  for (const GridArrow& a : panel.arrows) {
    const double y = top + g.cell_y(a.row) + kCellHeight / 2;
    const double out = left + g.cell_x(a.from_column) + kCellWidth, in = left + g.cell_x(a.to_column);
    if (a.to_column > a.from_column) {
      arrow(svg, out, in, y);
    } else {  // around the ring: leave at the right, come back at the left
      arrow(svg, out, left + g.grid_right() + kStub, y);
      arrow(svg, left + g.grid_left() - kStub, in, y);
    }
  }
}

}  // namespace

GridPanels::GridPanels(GridOptions options) : options_(std::move(options)) {
  RG_CHECK(!options_.row_labels.empty() && !options_.column_labels.empty(),
           "GridPanels: needs at least one row and one column label");
  RG_CHECK(options_.panels_per_line >= 1, "GridPanels: panels_per_line must be >= 1, got ", options_.panels_per_line);
}

GridPanels& GridPanels::add_panel(GridPanel panel) {
  const size_t rows = options_.row_labels.size(), columns = options_.column_labels.size();
  const auto shaped = [&](const auto& grid) {
    return grid.size() == rows && std::all_of(grid.begin(), grid.end(), [&](const auto& row) { return row.size() == columns; });
  };
  RG_CHECK(shaped(panel.text), "GridPanels::add_panel: panel '", panel.title, "' needs ", rows, " x ", columns, " texts");
  RG_CHECK(panel.shade.empty() || shaped(panel.shade), "GridPanels::add_panel: panel '", panel.title, "' needs ", rows,
           " x ", columns, " shades (or none)");
  for (const GridArrow& a : panel.arrows) {
    const auto inside = [](int i, size_t n) { return i >= 0 && static_cast<size_t>(i) < n; };
    RG_CHECK(inside(a.row, rows) && inside(a.from_column, columns) && inside(a.to_column, columns) &&
                 a.from_column != a.to_column,
             "GridPanels::add_panel: panel '", panel.title, "' has an arrow in row ", a.row, " from column ",
             a.from_column, " to ", a.to_column, " (the grid is ", rows, " x ", columns, ")");
  }
  panels_.push_back(std::move(panel));
  return *this;
}

std::string GridPanels::str() const {
  double label_width = 0;
  for (const auto& label : options_.row_labels) label_width = std::max(label_width, text_width(label));
  const PanelGeometry g{label_width + 8, static_cast<int>(options_.row_labels.size()),
                        static_cast<int>(options_.column_labels.size())};
  const auto per_line = static_cast<size_t>(options_.panels_per_line);
  const size_t lines = std::max<size_t>(1, (panels_.size() + per_line - 1) / per_line);
  const double top = options_.title.empty() ? kTopPad : kTitleHeight;
  const double width = std::max(240.0, g.width() * static_cast<double>(std::min(std::max<size_t>(panels_.size(), 1), per_line)));
  Svg svg(width, top + g.height() * static_cast<double>(lines));
  draw_title(svg, {.title = options_.title}, width);
  if (panels_.empty()) {
    draw_no_data(svg, {kPanelPad, top, width - kPanelPad, top + g.height() - kPanelPad});
    return svg.finish();
  }
  for (size_t i = 0; i < panels_.size(); ++i)
    draw_panel(svg, panels_[i], options_, g, g.width() * static_cast<double>(i % per_line),
               top + g.height() * static_cast<double>(i / per_line));
  return svg.finish();
}

}  // namespace rg::report
