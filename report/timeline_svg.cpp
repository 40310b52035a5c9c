// Timeline: Gantt lanes of events (one per rank), overlapping events stacked into
// sub-rows by greedy interval packing, drawn with the kit of svg_canvas.h.
#include "report/timeline_svg.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "report/svg_canvas.h"

namespace rg::report {

using namespace detail;

namespace {

constexpr double kRowHeight = 18, kLanePad = 6;
// Events that abut (one ends as the next starts) share a row, although start + duration in
// floating point can land a hair past the next start (25.602 + 0.266 > 25.868). 1 ns: far
// below a trace's 1 us resolution, so events that really overlap still stack.
constexpr double kAbuttingMs = 1e-6;

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
    auto free =
        std::find_if(row_end.begin(), row_end.end(), [&](double end) { return end <= e->start_ms + kAbuttingMs; });
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

// An event's colour is its category's position in `palette`.
void draw_lane_events(Svg& svg, const Frame& frame, const Axis& axis, const Lane& lane,
                      const std::vector<std::string>& palette) {
  for (const auto& [e, row] : lane.events) {
    const double x0 = frame.x(axis.at(e->start_ms)), x1 = frame.x(axis.at(e->start_ms + e->duration_ms));
    const double y = lane.top + kLanePad / 2 + row * kRowHeight;
    const auto category = std::find(palette.begin(), palette.end(), e->category) - palette.begin();
    // Sub-pixel events stay visible as hairlines.
    svg.rect(x0, y + 1, std::max(x1 - x0, 0.75), kRowHeight - 2, colour(static_cast<std::size_t>(category)));
    std::ostringstream tip;
    tip << e->name << " [" << e->category << "] start " << e->start_ms << " ms, " << e->duration_ms << " ms";
    svg.end_rect(tip.str());
    if (x1 - x0 > text_width(e->name, 6) + 6) svg.text(x0 + 3, y + 13, e->name, "start", " font-size=\"10\"");
  }
}

}  // namespace

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

Timeline& Timeline::set_category_order(std::vector<std::string> categories) {
  category_order_ = std::move(categories);
  return *this;
}

std::string Timeline::str() const {
  std::vector<std::string> palette = category_order_;  // a category's colour: its position here
  std::vector<bool> drawn(palette.size(), false);
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& e : events_) {
    if (!drawable(e)) continue;
    const auto at = std::find(palette.begin(), palette.end(), e.category) - palette.begin();
    if (at == static_cast<std::ptrdiff_t>(palette.size())) {
      palette.push_back(e.category);
      drawn.push_back(false);
    }
    drawn[static_cast<std::size_t>(at)] = true;
    lo = std::min(lo, e.start_ms);
    hi = std::max(hi, e.start_ms + e.duration_ms);
  }
  std::vector<std::string> categories;  // the legend: the drawn ones, in palette order
  std::vector<std::size_t> colours;
  for (std::size_t i = 0; i < palette.size(); ++i) {
    if (!drawn[i]) continue;
    categories.push_back(palette[i]);
    colours.push_back(i);
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
  draw_legend(svg, right + 12, top, categories, false, colours);
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
  for (const auto& [number, lane] : lanes) draw_lane_events(svg, frame, axis, lane, palette);
  draw_frame(svg, frame);
  return svg.finish();
}

}  // namespace rg::report
