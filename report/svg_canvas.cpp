// The SVG drawing kit of svg_canvas.h: number formatting, axes, frame, titles, legends.
#include "report/svg_canvas.h"

#include <algorithm>
#include <cstdio>

namespace rg::report::detail {
namespace {

// Tableau 10: distinct, readable on white, and kind to common colour-vision deficiencies.
constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

double widest_label(const Axis& axis) {
  double widest = 0;
  for (std::size_t i = 0; i < axis.ticks.size(); ++i) widest = std::max(widest, text_width(axis.label(i)));
  return widest;
}

}  // namespace

const char* colour(std::size_t index) { return kPalette[index % std::size(kPalette)]; }

bool usable(double value, Scale scale) { return std::isfinite(value) && (scale == Scale::Linear || value > 0); }

// Coordinates are finite by construction; the clamp is a last guard so that no
// extreme input can ever print "nan" or "inf" into the file.
std::string num(double value) {
  if (!std::isfinite(value)) value = 0;
  value = std::clamp(value, -1e7, 1e7);
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", value);
  std::string s = text;
  s.erase(s.find_last_not_of('0') + 1);
  if (s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

double text_width(std::string_view text, double char_width) {
  return static_cast<double>(std::count_if(text.begin(), text.end(), [](char c) { return (c & 0xC0) != 0x80; })) *
         char_width;
}

Axis make_axis(double lo, double hi, Scale scale) {
  return {scale, scale == Scale::Log ? log_ticks(lo, hi) : nice_ticks(lo, hi)};
}

double left_margin(const Axis* y_axis, const std::string& y_label) {
  return 12 + (y_axis ? widest_label(*y_axis) + 8 : 0) + (y_label.empty() ? 0 : 20);
}

double legend_width(const std::vector<std::string>& names) {
  double widest = 0;
  for (const auto& name : names) widest = std::max(widest, text_width(name));
  return names.empty() ? 0 : 34 + widest + kRightPad;
}

void draw_title(Svg& svg, const ChartOptions& options, double width) {
  if (!options.title.empty())
    svg.text(width / 2, 22, options.title, "middle", " font-size=\"15\" font-weight=\"bold\"");
}

void draw_y_axis(Svg& svg, const Frame& frame, const Axis& axis, const std::string& label) {
  for (std::size_t i = 0; i < axis.ticks.size(); ++i) {
    const double y = frame.y(axis.at(axis.ticks[i]));
    svg.line(frame.left, y, frame.right, y, "#e4e4e4");
    svg.line(frame.left - 4, y, frame.left, y, "#444");
    svg.text(frame.left - 7, y + 4, axis.label(i), "end");
  }
  if (!label.empty()) {
    const double x = 16, y = (frame.top + frame.bottom) / 2;
    svg.text(x, y, label, "middle", " transform=\"rotate(-90 " + num(x) + ' ' + num(y) + ")\"");
  }
}

void draw_x_axis(Svg& svg, const Frame& frame, const Axis& axis, const std::string& label) {
  for (std::size_t i = 0; i < axis.ticks.size(); ++i) {
    const double x = frame.x(axis.at(axis.ticks[i]));
    svg.line(x, frame.top, x, frame.bottom, "#e4e4e4");
    svg.line(x, frame.bottom, x, frame.bottom + 4, "#444");
    svg.text(x, frame.bottom + 17, axis.label(i), "middle");
  }
  if (!label.empty()) svg.text((frame.left + frame.right) / 2, frame.bottom + 38, label, "middle");
}

void draw_frame(Svg& svg, const Frame& frame) {
  svg.line(frame.left, frame.bottom, frame.right, frame.bottom, "#444");
  svg.line(frame.left, frame.top, frame.left, frame.bottom, "#444");
}

void draw_no_data(Svg& svg, const Frame& frame) {
  svg.rect(frame.left, frame.top, frame.right - frame.left, frame.bottom - frame.top, "none",
           " stroke=\"#ccc\"");
  svg.end_rect("");
  svg.text((frame.left + frame.right) / 2, (frame.top + frame.bottom) / 2, "no data", "middle",
           " fill=\"#888\" font-style=\"italic\"");
}

void draw_legend(Svg& svg, double x, double top, const std::vector<std::string>& names, bool as_lines,
                 const std::vector<std::size_t>& colours) {
  for (std::size_t i = 0; i < names.size(); ++i) {
    const double y = top + 8 + 20 * static_cast<double>(i);
    const char* fill = colour(colours.empty() ? i : colours[i]);
    if (as_lines) {
      svg.line(x, y, x + 22, y, fill, 3);
    } else {
      svg.rect(x + 4, y - 6, 14, 12, fill);
      svg.end_rect("");
    }
    svg.text(x + 30, y + 4, names[i]);
  }
}

}  // namespace rg::report::detail
