// The drawing kit shared by the chart kinds (svg.cpp: line and bar charts; timeline_svg.cpp:
// timelines; grid_svg.cpp: panels of grids): a tiny SVG element writer, the palette, axes
// with nice ticks, the plot frame, titles and legends. Pixel sizes are fixed guesses for 12px
// sans-serif text; the viewBox lets viewers scale the result. Internal to report/: callers
// include svg.h, timeline_svg.h or grid_svg.h.
#pragma once
#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "report/svg.h"

namespace rg::report::detail {

constexpr double kCharWidth = 7.0;  // average advance of 12px sans-serif
constexpr double kTitleHeight = 34, kAxisRoom = 48, kTopPad = 14, kRightPad = 14;

// The index-th colour of the palette (Tableau 10), repeating after ten.
const char* colour(std::size_t index);
// Finite, and positive on a log scale: only such values are drawn.
bool usable(double value, Scale scale);
// A coordinate as short text ("12.5", "0"); never "nan" or "inf".
std::string num(double value);
// Estimated width in pixels (UTF-8 characters times an average advance).
double text_width(std::string_view text, double char_width = kCharWidth);

// Collects elements in drawing order (later ones paint over earlier ones); finish()
// wraps them in the document, on a white background.
class Svg {
 public:
  Svg(double width, double height) : width_(width), height_(height) {}

  void rect(double x, double y, double w, double h, std::string_view fill, std::string_view extra = "") {
    body_ << "<rect x=\"" << num(x) << "\" y=\"" << num(y) << "\" width=\"" << num(std::max(w, 0.0))
          << "\" height=\"" << num(std::max(h, 0.0)) << "\" fill=\"" << fill << "\"" << extra;
  }
  void end_rect(std::string_view tooltip) {
    if (tooltip.empty()) {
      body_ << "/>\n";
    } else {
      body_ << "><title>" << xml_escape(tooltip) << "</title></rect>\n";
    }
  }
  void line(double x1, double y1, double x2, double y2, std::string_view stroke, double width = 1) {
    body_ << "<line x1=\"" << num(x1) << "\" y1=\"" << num(y1) << "\" x2=\"" << num(x2) << "\" y2=\"" << num(y2)
          << "\" stroke=\"" << stroke << "\" stroke-width=\"" << num(width) << "\"/>\n";
  }
  void text(double x, double y, std::string_view content, std::string_view anchor = "start",
            std::string_view extra = "") {
    body_ << "<text x=\"" << num(x) << "\" y=\"" << num(y) << "\" text-anchor=\"" << anchor << "\"" << extra << ">"
          << xml_escape(content) << "</text>\n";
  }
  // A straight arrow from (x1, y1) to (x2, y2), its head (6 px long, 8 px wide) at the end.
  void arrow(double x1, double y1, double x2, double y2, std::string_view stroke, double width = 2) {
    const double length = std::hypot(x2 - x1, y2 - y1);
    if (!(length > 0)) return;
    const double dx = (x2 - x1) / length, dy = (y2 - y1) / length;  // along the arrow
    const double bx = x2 - 6 * dx, by = y2 - 6 * dy;                 // the head's base
    line(x1, y1, bx, by, stroke, width);
    polygon({{x2, y2}, {bx + 4 * dy, by - 4 * dx}, {bx - 4 * dy, by + 4 * dx}}, stroke);
  }
  void polyline(const std::vector<Point>& pixels, std::string_view stroke) {
    body_ << "<polyline fill=\"none\" stroke=\"" << stroke
          << "\" stroke-width=\"2\" stroke-linejoin=\"round\" points=\"";
    for (const Point& p : pixels) body_ << num(p.x) << ',' << num(p.y) << ' ';
    body_ << "\"/>\n";
  }
  void polygon(const std::vector<Point>& pixels, std::string_view fill) {
    body_ << "<polygon fill=\"" << fill << "\" points=\"";
    for (const Point& p : pixels) body_ << num(p.x) << ',' << num(p.y) << ' ';
    body_ << "\"/>\n";
  }
  void circle(double x, double y, double r, std::string_view fill) {
    body_ << "<circle cx=\"" << num(x) << "\" cy=\"" << num(y) << "\" r=\"" << num(r) << "\" fill=\"" << fill
          << "\"/>\n";
  }

  std::string finish() const {
    std::ostringstream out;
    out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << num(width_) << "\" height=\"" << num(height_)
        << "\" viewBox=\"0 0 " << num(width_) << ' ' << num(height_)
        << "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n"
        << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
        << body_.str() << "</svg>\n";
    return out.str();
  }

 private:
  double width_, height_;
  std::ostringstream body_;
};

// A value range with its ticks; at() maps a value to [0, 1] along the axis.
struct Axis {
  Scale scale = Scale::Linear;
  std::vector<double> ticks;

  double at(double value) const {
    const auto f = [this](double v) { return scale == Scale::Log ? std::log10(v) : v; };
    const double lo = f(ticks.front()), hi = f(ticks.back());
    return hi > lo ? (f(value) - lo) / (hi - lo) : 0.5;
  }
  std::string label(std::size_t i) const {
    const double step = scale == Scale::Log ? ticks[i] : ticks[1] - ticks[0];
    return format_tick(ticks[i], step);
  }
};

Axis make_axis(double lo, double hi, Scale scale);

// The plot area in pixels.
struct Frame {
  double left, top, right, bottom;
  double x(double fraction) const { return left + fraction * (right - left); }
  double y(double fraction) const { return bottom - fraction * (bottom - top); }
};

// Left margin: tick labels plus room for the rotated axis title.
double left_margin(const Axis* y_axis, const std::string& y_label);
// Room for a legend of `names` at the right (0 without names).
double legend_width(const std::vector<std::string>& names);

void draw_title(Svg& svg, const ChartOptions& options, double width);
void draw_y_axis(Svg& svg, const Frame& frame, const Axis& axis, const std::string& label);
void draw_x_axis(Svg& svg, const Frame& frame, const Axis& axis, const std::string& label);
void draw_frame(Svg& svg, const Frame& frame);
void draw_no_data(Svg& svg, const Frame& frame);
// Colour swatches (lines or boxes) and names in a column, top-aligned with the plot. Name i
// gets colour(colours[i]); without colours, colour(i).
void draw_legend(Svg& svg, double x, double top, const std::vector<std::string>& names, bool as_lines,
                 const std::vector<std::size_t>& colours = {});

}  // namespace rg::report::detail
