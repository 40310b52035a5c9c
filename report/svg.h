// Small SVG charts written from scratch, for training curves, bandwidth plots, per-rank
// bars and trace timelines. Output is standalone, well-formed XML with a viewBox; points
// that are NaN/Inf (or <= 0 on a log axis) are skipped, so no chart ever contains them,
// and a chart without data still renders, with a "no data" note.
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

struct TimelineEvent {
  std::string name = {};      // shown inside the box when it fits, and as a tooltip
  std::string category = {};  // picks the colour; one legend entry per category
  int lane = 0;          // usually the rank
  double start_ms = 0, duration_ms = 0;
};

// Gantt lanes, one per lane number seen (labelled "rank N" unless named). Overlapping
// events in a lane stack into sub-rows, so communication running under backward shows.
class Timeline : public SvgChart {
 public:
  // Only title, x_label (default "time (ms)") and width are used; height follows the lanes.
  explicit Timeline(ChartOptions options = {});
  Timeline& add_event(TimelineEvent event);
  Timeline& set_lane_name(int lane, std::string name);
  std::string str() const override;

 private:
  ChartOptions options_;
  std::vector<TimelineEvent> events_;
  std::vector<std::pair<int, std::string>> lane_names_;
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
