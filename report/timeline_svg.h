// Trace timelines as SVG: one lane of events per rank, so that communication running under
// backward shows (report/trace.h turns recorded traces into these). The same guarantees as
// every chart of svg.h: well-formed XML, no NaN/Inf, a "no data" note when empty.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "report/svg.h"

namespace rg::report {

struct TimelineEvent {
  std::string name = {};      // shown inside the box when it fits, and as a tooltip
  std::string category = {};  // picks the colour; one legend entry per category
  int lane = 0;               // usually the rank
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
  // Categories take the palette's colours by their position in `categories`, then the
  // others by first appearance: timelines given one list colour a category alike (the
  // legend still lists only the categories drawn).
  Timeline& set_category_order(std::vector<std::string> categories);
  std::string str() const override;

 private:
  ChartOptions options_;
  std::vector<TimelineEvent> events_;
  std::vector<std::pair<int, std::string>> lane_names_;
  std::vector<std::string> category_order_;
};

}  // namespace rg::report
