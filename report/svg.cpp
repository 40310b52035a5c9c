// Line and bar charts, the tick rules and XML escaping of svg.h; the drawing kit they
// share with the timeline is in svg_canvas.h.
#include "report/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "report/svg_canvas.h"
#include "tensor/error.h"

namespace rg::report {

using namespace detail;

namespace {

std::vector<std::string> names_of(const auto& series) {
  std::vector<std::string> names;
  for (const auto& s : series) names.push_back(s.name);
  return names;
}

// Splits a series into runs of usable points, so a NaN breaks the line.
std::vector<std::vector<Point>> usable_runs(const std::vector<Point>& points, const ChartOptions& options) {
  std::vector<std::vector<Point>> runs(1);
  for (const Point& p : points) {
    if (usable(p.x, options.x_scale) && usable(p.y, options.y_scale)) {
      runs.back().push_back(p);
    } else if (!runs.back().empty()) {
      runs.emplace_back();
    }
  }
  if (runs.back().empty()) runs.pop_back();
  return runs;
}

std::string trim_number(std::string s) {
  if (s.find('.') != std::string::npos && s.find('e') == std::string::npos) {
    s.erase(s.find_last_not_of('0') + 1);
    if (s.back() == '.') s.pop_back();
  }
  return s == "-0" ? "0" : s;
}

}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int target) {
  RG_CHECK(std::isfinite(lo) && std::isfinite(hi) && lo <= hi, "nice_ticks: need finite lo <= hi, got ", lo, ", ", hi);
  RG_CHECK(target >= 2, "nice_ticks: target must be >= 2, got ", target);
  if (hi - lo < 1e-12 * std::max(1.0, std::abs(lo))) {
    const double pad = lo == 0 ? 1 : std::abs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  const double raw = (hi - lo) / (target - 1);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10 * magnitude;
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * magnitude >= raw * (1 - 1e-9)) {
      step = m * magnitude;
      break;
    }
  }
  // k * mantissa is an exact integer and 10^-e an exact divisor, so tick 3 of step 0.2
  // is 6 / 10 = 0.6 (correctly rounded) rather than 3 * 0.2 = 0.6000000000000001.
  const double mantissa = std::round(step / magnitude);
  const auto scaled = [&](long long k) {
    const double units = static_cast<double>(k) * mantissa;
    return magnitude >= 1 ? units * magnitude : units / std::round(1 / magnitude);
  };
  const auto first = static_cast<long long>(std::floor(lo / step + 1e-9));
  const auto last = static_cast<long long>(std::ceil(hi / step - 1e-9));
  std::vector<double> ticks;
  for (long long k = first; k <= last; ++k) ticks.push_back(scaled(k));
  return ticks;
}

std::vector<double> log_ticks(double lo, double hi) {
  RG_CHECK(lo > 0 && std::isfinite(hi) && lo <= hi, "log_ticks: need 0 < lo <= hi, got ", lo, ", ", hi);
  const int first = static_cast<int>(std::floor(std::log10(lo) + 1e-9));
  int last = static_cast<int>(std::ceil(std::log10(hi) - 1e-9));
  if (last == first) ++last;
  const int stride = (last - first + 7) / 8;  // at most about eight labelled decades
  last = first + (last - first + stride - 1) / stride * stride;
  std::vector<double> ticks;
  for (int e = first; e <= last; e += stride) {
    ticks.push_back(std::pow(10.0, e));
    if (last - first < 3 && e < last) {
      ticks.push_back(2 * std::pow(10.0, e));
      ticks.push_back(5 * std::pow(10.0, e));
    }
  }
  return ticks;
}

std::string format_tick(double value, double step) {
  step = std::abs(step);
  if (step > 0 && std::abs(value) < step * 1e-9) value = 0;
  constexpr struct {
    double scale;
    const char* suffix;
  } kSi[] = {{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}};
  double scale = 1;
  const char* suffix = "";
  // Suffixes from 10k, or from 1k when the spacing is in thousands too: "1000, 1500"
  // reads better than "1k, 1.5k", but "1k, 10k, 100k" better than "1000, 10k, 100k".
  const bool thousands = std::abs(value) >= 1e4 || (std::abs(value) >= 1e3 && step >= 1e3);
  for (const auto& si : kSi) {
    if (thousands && std::abs(value) >= si.scale) {
      scale = si.scale;
      suffix = si.suffix;
      break;
    }
  }
  const double scaled_step = step > 0 ? step / scale : 1;
  const int decimals = std::max(0, static_cast<int>(-std::floor(std::log10(scaled_step) + 1e-9)));
  char text[48];
  // Tiny spacings, and values beyond the largest suffix ("1e+20", not "100000000T").
  if (decimals > 4 || std::abs(value) >= 1e15) {
    std::snprintf(text, sizeof text, "%.3g", value);
    return text;
  }
  std::snprintf(text, sizeof text, "%.*f", decimals, value / scale);
  return trim_number(text) + suffix;
}

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

void SvgChart::save(const std::filesystem::path& path) const {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  RG_CHECK(out, "SvgChart::save: cannot open ", path.string(), " for writing");
  out << str();
  out.close();
  RG_CHECK(out, "SvgChart::save: writing ", path.string(), " failed");
}

// ---- LineChart ----

LineChart::LineChart(ChartOptions options) : options_(std::move(options)) {}

LineChart& LineChart::add_series(std::string name, std::vector<Point> points) {
  series_.push_back({std::move(name), std::move(points)});
  return *this;
}

LineChart& LineChart::add_series(std::string name, const std::vector<double>& x, const std::vector<double>& y) {
  RG_CHECK(x.size() == y.size(), "LineChart::add_series: '", name, "' has ", x.size(), " x values but ", y.size(),
           " y values");
  std::vector<Point> points;
  for (std::size_t i = 0; i < x.size(); ++i) points.push_back({x[i], y[i]});
  return add_series(std::move(name), std::move(points));
}

std::string LineChart::str() const {
  const double width = options_.width, height = options_.height;
  Svg svg(width, height);
  draw_title(svg, options_, width);
  std::vector<std::vector<std::vector<Point>>> runs;
  std::vector<double> xs, ys;
  for (const auto& series : series_) {
    runs.push_back(usable_runs(series.points, options_));
    for (const auto& run : runs.back()) {
      for (const Point& p : run) {
        xs.push_back(p.x);
        ys.push_back(p.y);
      }
    }
  }
  const auto names = names_of(series_);
  const double top = options_.title.empty() ? kTopPad : kTitleHeight;
  const double right = width - std::max(legend_width(names), kRightPad);
  draw_legend(svg, right + 12, top, names, true);
  if (xs.empty()) {
    draw_no_data(svg, {left_margin(nullptr, options_.y_label), top, right, height - kAxisRoom});
    return svg.finish();
  }
  const auto [x_lo, x_hi] = std::minmax_element(xs.begin(), xs.end());
  const auto [y_lo, y_hi] = std::minmax_element(ys.begin(), ys.end());
  const Axis x_axis = make_axis(*x_lo, *x_hi, options_.x_scale);
  const Axis y_axis = make_axis(*y_lo, *y_hi, options_.y_scale);
  const Frame frame{left_margin(&y_axis, options_.y_label), top, right, height - kAxisRoom};
  draw_y_axis(svg, frame, y_axis, options_.y_label);
  draw_x_axis(svg, frame, x_axis, options_.x_label);
  draw_frame(svg, frame);
  for (std::size_t s = 0; s < runs.size(); ++s) {
    for (const auto& run : runs[s]) {
      std::vector<Point> pixels;
      for (const Point& p : run) pixels.push_back({frame.x(x_axis.at(p.x)), frame.y(y_axis.at(p.y))});
      // A lone point draws no line, so it gets a dot.
      if (pixels.size() == 1) svg.circle(pixels[0].x, pixels[0].y, 3, colour(s));
      else svg.polyline(pixels, colour(s));
    }
  }
  return svg.finish();
}

// ---- BarChart ----

BarChart::BarChart(ChartOptions options, std::vector<std::string> categories)
    : options_(std::move(options)), categories_(std::move(categories)) {}

BarChart& BarChart::add_series(std::string name, std::vector<double> values) {
  RG_CHECK(values.size() == categories_.size(), "BarChart::add_series: '", name, "' has ", values.size(),
           " values for ", categories_.size(), " categories");
  series_.push_back({std::move(name), std::move(values)});
  return *this;
}

std::string BarChart::str() const {
  const double width = options_.width, height = options_.height;
  const Scale scale = options_.y_scale;
  Svg svg(width, height);
  draw_title(svg, options_, width);
  std::vector<double> values;
  for (const auto& series : series_)
    for (double v : series.values)
      if (usable(v, scale)) values.push_back(v);
  const auto names = names_of(series_);
  const double top = options_.title.empty() ? kTopPad : kTitleHeight;
  const double right = width - std::max(legend_width(names), kRightPad);
  draw_legend(svg, right + 12, top, names, false);
  if (values.empty()) {
    draw_no_data(svg, {left_margin(nullptr, options_.y_label), top, right, height - kAxisRoom});
    return svg.finish();
  }
  // Linear bars grow from zero, so zero is always on the axis.
  auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  const Axis y_axis = scale == Scale::Log ? make_axis(*lo, *hi, scale)
                                          : make_axis(std::min(*lo, 0.0), std::max(*hi, 0.0), scale);
  const Frame frame{left_margin(&y_axis, options_.y_label), top, right, height - kAxisRoom};
  draw_y_axis(svg, frame, y_axis, options_.y_label);
  const double group = (frame.right - frame.left) / static_cast<double>(categories_.size());
  const double bar = group * 0.8 / static_cast<double>(series_.size());
  const double base = frame.y(y_axis.at(scale == Scale::Log ? y_axis.ticks.front() : 0.0));
  for (std::size_t c = 0; c < categories_.size(); ++c) {
    const double group_left = frame.left + group * static_cast<double>(c);
    svg.text(group_left + group / 2, frame.bottom + 17, categories_[c], "middle");
    for (std::size_t s = 0; s < series_.size(); ++s) {
      const double v = series_[s].values[c];
      if (!usable(v, scale)) continue;
      const double y = frame.y(y_axis.at(v));
      svg.rect(group_left + group * 0.1 + bar * static_cast<double>(s), std::min(y, base), bar, std::abs(base - y),
               colour(s));
      svg.end_rect(series_[s].name + " / " + categories_[c] + ": " + format_tick(v, std::abs(v) / 1000));
    }
  }
  if (!options_.x_label.empty())
    svg.text((frame.left + frame.right) / 2, frame.bottom + 38, options_.x_label, "middle");
  draw_frame(svg, frame);
  return svg.finish();
}

}  // namespace rg::report
