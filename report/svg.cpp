// SVG rendering: a tiny element writer, axes with nice ticks, legends, and the three
// chart kinds. Pixel sizes are fixed guesses for 12px sans-serif text; the viewBox lets
// viewers scale the result.
#include "report/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "tensor/error.h"

namespace rg::report {
namespace {

// Tableau 10: distinct, readable on white, and kind to common colour-vision deficiencies.
constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
constexpr double kCharWidth = 7.0;  // average advance of 12px sans-serif
constexpr double kTitleHeight = 34, kAxisRoom = 48, kTopPad = 14, kRightPad = 14;
constexpr double kRowHeight = 18, kLanePad = 6;

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

double text_width(std::string_view text, double char_width = kCharWidth) {
  return static_cast<double>(std::count_if(text.begin(), text.end(), [](char c) { return (c & 0xC0) != 0x80; })) *
         char_width;
}

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
  void polyline(const std::vector<Point>& pixels, std::string_view stroke) {
    body_ << "<polyline fill=\"none\" stroke=\"" << stroke
          << "\" stroke-width=\"2\" stroke-linejoin=\"round\" points=\"";
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

Axis make_axis(double lo, double hi, Scale scale) {
  return {scale, scale == Scale::Log ? log_ticks(lo, hi) : nice_ticks(lo, hi)};
}

// The plot area in pixels.
struct Frame {
  double left, top, right, bottom;
  double x(double fraction) const { return left + fraction * (right - left); }
  double y(double fraction) const { return bottom - fraction * (bottom - top); }
};

double widest_label(const Axis& axis) {
  double widest = 0;
  for (std::size_t i = 0; i < axis.ticks.size(); ++i) widest = std::max(widest, text_width(axis.label(i)));
  return widest;
}

// Left margin: tick labels plus room for the rotated axis title.
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

// Colour swatches and names in a column, top-aligned with the plot.
void draw_legend(Svg& svg, double x, double top, const std::vector<std::string>& names, bool as_lines) {
  for (std::size_t i = 0; i < names.size(); ++i) {
    const double y = top + 8 + 20 * static_cast<double>(i);
    if (as_lines) {
      svg.line(x, y, x + 22, y, colour(i), 3);
    } else {
      svg.rect(x + 4, y - 6, 14, 12, colour(i));
      svg.end_rect("");
    }
    svg.text(x + 30, y + 4, names[i]);
  }
}

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

// ---- Timeline layout ----

bool drawable(const TimelineEvent& e) {
  return std::isfinite(e.start_ms) && std::isfinite(e.duration_ms) && e.duration_ms >= 0;
}

// One lane after layout: its events, each on a sub-row so that overlapping ones stack.
struct Lane {
  std::string name;
  std::vector<std::pair<const TimelineEvent*, int>> events;  // (event, row)
  int rows = 1;
  double top = 0;
  double height() const { return rows * kRowHeight + kLanePad; }
};

// Greedy interval packing: each event, by start time, takes the first row free by then.
void pack_rows(Lane& lane, std::vector<const TimelineEvent*> events) {
  std::stable_sort(events.begin(), events.end(), [](auto* a, auto* b) { return a->start_ms < b->start_ms; });
  std::vector<double> row_end;
  for (const TimelineEvent* e : events) {
    auto free = std::find_if(row_end.begin(), row_end.end(), [&](double end) { return end <= e->start_ms; });
    if (free == row_end.end()) free = row_end.insert(row_end.end(), 0.0);
    *free = e->start_ms + e->duration_ms;
    lane.events.emplace_back(e, static_cast<int>(free - row_end.begin()));
  }
  lane.rows = std::max(1, static_cast<int>(row_end.size()));
}

std::map<int, Lane> layout_lanes(const std::vector<TimelineEvent>& events,
                                 const std::vector<std::pair<int, std::string>>& names) {
  std::map<int, std::vector<const TimelineEvent*>> by_lane;
  for (const auto& [number, name] : names) by_lane[number];
  for (const auto& e : events)
    if (drawable(e)) by_lane[e.lane].push_back(&e);
  std::map<int, Lane> lanes;
  for (auto& [number, lane_events] : by_lane) {
    Lane& lane = lanes[number];
    lane.name = "rank " + std::to_string(number);
    pack_rows(lane, std::move(lane_events));
  }
  for (const auto& [number, name] : names) lanes[number].name = name;  // later names win
  return lanes;
}

// Alternate lanes get a grey band, so events line up with their label.
void draw_lane_background(Svg& svg, const Frame& frame, const Lane& lane, bool shaded) {
  if (shaded) {
    svg.rect(frame.left, lane.top, frame.right - frame.left, lane.height(), "#f4f4f4");
    svg.end_rect("");
  }
  svg.text(frame.left - 8, lane.top + lane.height() / 2 + 4, lane.name, "end");
}

void draw_lane_events(Svg& svg, const Frame& frame, const Axis& axis, const Lane& lane,
                      const std::vector<std::string>& categories) {
  for (const auto& [e, row] : lane.events) {
    const double x0 = frame.x(axis.at(e->start_ms)), x1 = frame.x(axis.at(e->start_ms + e->duration_ms));
    const double y = lane.top + kLanePad / 2 + row * kRowHeight;
    const auto category = std::find(categories.begin(), categories.end(), e->category) - categories.begin();
    // Sub-pixel events stay visible as hairlines.
    svg.rect(x0, y + 1, std::max(x1 - x0, 0.75), kRowHeight - 2, colour(static_cast<std::size_t>(category)));
    std::ostringstream tip;
    tip << e->name << " [" << e->category << "] start " << e->start_ms << " ms, " << e->duration_ms << " ms";
    svg.end_rect(tip.str());
    if (x1 - x0 > text_width(e->name, 6) + 6) svg.text(x0 + 3, y + 13, e->name, "start", " font-size=\"10\"");
  }
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
  if (decimals > 4) {
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

// ---- Timeline ----

Timeline::Timeline(ChartOptions options) : options_(std::move(options)) {
  if (options_.x_label.empty()) options_.x_label = "time (ms)";
}

Timeline& Timeline::add_event(TimelineEvent event) {
  events_.push_back(std::move(event));
  return *this;
}

Timeline& Timeline::set_lane_name(int lane, std::string name) {
  lane_names_.emplace_back(lane, std::move(name));
  return *this;
}

std::string Timeline::str() const {
  std::vector<std::string> categories;
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& e : events_) {
    if (!drawable(e)) continue;
    if (std::find(categories.begin(), categories.end(), e.category) == categories.end())
      categories.push_back(e.category);
    lo = std::min(lo, e.start_ms);
    hi = std::max(hi, e.start_ms + e.duration_ms);
  }
  auto lanes = layout_lanes(events_, lane_names_);
  double lanes_height = 0, label_width = 0;
  for (const auto& [number, lane] : lanes) {
    lanes_height += lane.height();
    label_width = std::max(label_width, text_width(lane.name));
  }
  lanes_height = std::max(lanes_height, 60.0);  // room for the "no data" note

  const double width = options_.width;
  const double top = options_.title.empty() ? kTopPad : kTitleHeight;
  const double right = width - std::max(legend_width(categories), kRightPad);
  const Frame frame{16 + label_width, top, right, top + lanes_height};
  Svg svg(width, frame.bottom + kAxisRoom);
  draw_title(svg, options_, width);
  draw_legend(svg, right + 12, top, categories, false);
  if (categories.empty()) {
    draw_no_data(svg, frame);
    return svg.finish();
  }
  // Lane backgrounds first, then the grid over them, then the events over the grid.
  double lane_top = frame.top;
  std::size_t index = 0;
  for (auto& [number, lane] : lanes) {
    lane.top = lane_top;
    lane_top += lane.height();
    draw_lane_background(svg, frame, lane, index++ % 2 == 0);
  }
  const Axis axis = make_axis(lo, hi, Scale::Linear);
  draw_x_axis(svg, frame, axis, options_.x_label);
  for (const auto& [number, lane] : lanes) draw_lane_events(svg, frame, axis, lane, categories);
  draw_frame(svg, frame);
  return svg.finish();
}

}  // namespace rg::report
