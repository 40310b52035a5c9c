// Small SVG charts written from scratch, for training curves, bandwidth plots and per-rank
// bars (trace timelines: timeline_svg.h). Output is standalone, well-formed XML with a
// viewBox; points that are NaN/Inf (or <= 0 on a log axis) are skipped, so no chart ever
// contains them, and a chart without data still renders, with a "no data" note.
#pragma once
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace rg::report {

enum class Scale { Linear, Log };

struct Point {
  double x = 0, y = 0;
};

struct ChartOptions {
  std::string title = {}, x_label = {}, y_label = {};
  Scale x_scale = Scale::Linear, y_scale = Scale::Linear;  // Log: e.g. bandwidth vs message size
  int width = 720, height = 420;                           // pixels; the legend is inside this
};

// Shared by every chart: str() renders, save() writes the file.
class SvgChart {
 public:
  virtual ~SvgChart() = default;
  virtual std::string str() const = 0;
  void save(const std::filesystem::path& path) const;
};

// Lines through (x, y) points, one colour per series, with ticks, grid and a legend.
// A NaN/Inf point breaks the line there rather than bridging the gap.
class LineChart : public SvgChart {
 public:
  explicit LineChart(ChartOptions options = {});
  LineChart& add_series(std::string name, std::vector<Point> points);
  LineChart& add_series(std::string name, const std::vector<double>& x, const std::vector<double>& y);
  std::string str() const override;

 private:
  struct Series {
    std::string name;
    std::vector<Point> points;
  };
  ChartOptions options_;
  std::vector<Series> series_;
};

// Grouped bars: one group per category (e.g. "rank 0".."rank 3"), one bar per series
// in each group (e.g. "bytes sent", "bytes received"). Non-finite values leave a gap.
class BarChart : public SvgChart {
 public:
  BarChart(ChartOptions options, std::vector<std::string> categories);
  // values[i] belongs to categories[i]; throws rg::Error on a size mismatch.
  BarChart& add_series(std::string name, std::vector<double> values);
  std::string str() const override;

 private:
  struct Series {
    std::string name;
    std::vector<double> values;
  };
  ChartOptions options_;
  std::vector<std::string> categories_;
  std::vector<Series> series_;
};

// Ticks with 1-2-5 x 10^k spacing and at most about `target` of them; the first is
// <= lo and the last >= hi, so they cover the data. lo == hi is widened around it.
std::vector<double> nice_ticks(double lo, double hi, int target = 6);
// Powers of ten covering [lo, hi] (lo > 0), adding 2x and 5x when under three decades.
std::vector<double> log_ticks(double lo, double hi);
// Short tick text: "0.25", "1500", "15k", "20M", "2e-06"; `step` is the tick spacing.
std::string format_tick(double value, double step);
// Escapes &, <, >, " and ' for XML text and attribute values.
std::string xml_escape(std::string_view text);

}  // namespace rg::report
