// FlowPicture: a data-parallel step as columns of cells (one lane per rank), drawn with the
// kit of svg_canvas.h; flow_ranks(): the cells' numbers measured from a trace.
#include "report/flow_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "report/svg_canvas.h"
#include "tensor/error.h"

namespace rg::report {

using namespace detail;

namespace {

constexpr double kLaneHeight = 46, kLaneGap = 10, kHeaderHeight = 22, kFooterLine = 16;
constexpr double kColumnGap = 30;  // the arrows run in the gaps
constexpr double kCellPad = 6, kBarHeight = 8, kLongestBar = 150;

// "3.21", "45.6", "789": three significant digits for times in ms.
std::string ms_text(double ms) {
  char text[32];
  std::snprintf(text, sizeof text, ms < 10 ? "%.2f" : ms < 100 ? "%.1f" : "%.0f", ms);
  return text;
}

// "101,770": thousands separated, for parameter counts.
std::string grouped(int64_t value) {
  std::string digits = std::to_string(value < 0 ? -value : value), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return value < 0 ? "-" + out : out;
}

// One rank's cell in a stage column: two lines of text over a bar as long as its time.
struct Cell {
  std::string line1, line2;
  double ms = 0;
  std::string tooltip;
};

struct Column {
  std::string header;
  const char* colour;
  std::vector<Cell> cells;  // one per rank
  double x = 0, width = 0;
};

std::vector<Column> stage_columns(const FlowStep& s) {
  Column forward{"2. forward", colour(0), {}}, backward{"3. backward", colour(1), {}};
  Column reduce{"4. " + s.all_reduce + " of the gradients", colour(2), {}};
  Column update{"5. identical update", colour(4), {}};
  const std::string shape = s.sample_shape.empty() ? "" : " x " + s.sample_shape;
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    const FlowRank& k = s.ranks[r];
    const std::string who = "rank " + std::to_string(r) + ": ";
    forward.cells.push_back({"forward " + ms_text(k.forward_ms) + " ms", std::to_string(k.batch) + shape + " in",
                             k.forward_ms, who + "forward " + ms_text(k.forward_ms) + " ms"});
    backward.cells.push_back({"backward " + ms_text(k.backward_ms) + " ms", grouped(s.parameters) + " gradients",
                              k.backward_ms, who + "backward " + ms_text(k.backward_ms) + " ms"});
    reduce.cells.push_back({"all-reduce " + ms_text(k.all_reduce_ms) + " ms",
                            "sent " + format_bytes(k.bytes_sent) + ", got " + format_bytes(k.bytes_received),
                            k.all_reduce_ms, who + "all-reduce " + ms_text(k.all_reduce_ms) + " ms"});
    update.cells.push_back({"update " + ms_text(k.update_ms) + " ms", grouped(s.parameters) + " parameters",
                            k.update_ms, who + "update " + ms_text(k.update_ms) + " ms"});
  }
  return {forward, backward, reduce, update};
}

double longest_time(const std::vector<Column>& columns) {
  double longest = 0;
  for (const Column& c : columns)
    for (const Cell& cell : c.cells) longest = std::max(longest, cell.ms);
  return longest;
}

// Columns side by side from x, each as wide as its widest text or bar.
double place_columns(std::vector<Column>& columns, double x, double px_per_ms) {
  for (Column& c : columns) {
    c.width = text_width(c.header);
    for (const Cell& cell : c.cells)
      c.width = std::max({c.width, text_width(cell.line1) + 2 * kCellPad, text_width(cell.line2) + 2 * kCellPad,
                          cell.ms * px_per_ms + 2 * kCellPad});
    c.x = x;
    x += c.width + kColumnGap;
  }
  return x - kColumnGap;
}

void draw_cell(Svg& svg, const Column& column, const Cell& cell, double top, double px_per_ms) {
  svg.rect(column.x, top, column.width, kLaneHeight, "#f7f7f7", " stroke=\"#bbb\"");
  svg.end_rect("");
  svg.text(column.x + kCellPad, top + 15, cell.line1);
  svg.text(column.x + kCellPad, top + 29, cell.line2, "start", " font-size=\"11\" fill=\"#444\"");
  svg.rect(column.x + kCellPad, top + 34, cell.ms * px_per_ms, kBarHeight, column.colour);
  svg.end_rect(cell.tooltip);
}

// The all-reduce is one collective over every rank: a band joining its cells.
void draw_collective_band(Svg& svg, const Column& column, double top, double bottom) {
  svg.rect(column.x - 6, top - 4, column.width + 12, bottom - top + 8, colour(2),
           " fill-opacity=\"0.12\" stroke=\"" + std::string(colour(2)) + "\" rx=\"6\"");
  svg.end_rect("");
}

void check_step(const FlowStep& s) {
  RG_CHECK(s.global_batch >= 0 && s.parameters >= 0, "FlowPicture: global batch ", s.global_batch,
           " and parameter count ", s.parameters, " must not be negative");
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    const FlowRank& k = s.ranks[r];
    RG_CHECK(k.batch >= 0, "FlowPicture: rank ", r, " has a negative batch (", k.batch, ")");
    for (double ms : {k.forward_ms, k.backward_ms, k.all_reduce_ms, k.update_ms})
      RG_CHECK(std::isfinite(ms) && ms >= 0, "FlowPicture: rank ", r, " has a time of ", ms,
               " ms; times must be finite and >= 0");
  }
}

}  // namespace

std::string format_bytes(uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes) / 1024;
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(units)) value /= 1024, ++unit;
  return ms_text(value) + " " + units[unit];
}

FlowPicture::FlowPicture(FlowStep step) : step_(std::move(step)) { check_step(step_); }

std::string FlowPicture::str() const {
  const size_t n = step_.ranks.size();
  const double top = step_.title.empty() ? kTopPad : kTitleHeight;
  const double lanes_top = top + kHeaderHeight;
  const double label_width = text_width("rank " + std::to_string(n > 0 ? n - 1 : 0));
  const double scatter_x = 12 + label_width + 10;
  const std::string scatter_lines[] = {"global batch", std::to_string(step_.global_batch) + " samples",
                                       step_.sample_shape.empty() ? "" : "of " + step_.sample_shape};
  double scatter_width = text_width("1. scatter");
  for (const auto& line : scatter_lines) scatter_width = std::max(scatter_width, text_width(line) + 2 * kCellPad);

  std::vector<Column> columns = stage_columns(step_);
  const double longest = longest_time(columns);
  const double px_per_ms = longest > 0 ? kLongestBar / longest : 0;
  const double right = place_columns(columns, scatter_x + scatter_width + kColumnGap, px_per_ms);
  const double lanes_bottom = lanes_top + std::max<double>(1, n) * (kLaneHeight + kLaneGap) - kLaneGap;
  const double width = std::max(right + 12, 480.0);
  Svg svg(width, lanes_bottom + 12 + 2 * kFooterLine + 8);
  draw_title(svg, {.title = step_.title}, width);
  if (n == 0) {
    draw_no_data(svg, {scatter_x, lanes_top, width - 12, lanes_bottom});
    return svg.finish();
  }
  const auto lane_top = [&](size_t r) { return lanes_top + static_cast<double>(r) * (kLaneHeight + kLaneGap); };

  // 1. scatter: the global batch, split into one share per rank.
  svg.text(scatter_x, top + 14, "1. scatter", "start", " font-weight=\"bold\"");
  const double box_height = 54, box_top = (lanes_top + lanes_bottom - box_height) / 2;
  svg.rect(scatter_x, box_top, scatter_width, box_height, "#eef3f8", " stroke=\"#4e79a7\"");
  svg.end_rect("");
  for (int i = 0; i < 3; ++i) svg.text(scatter_x + kCellPad, box_top + 16 + 15 * i, scatter_lines[i]);
  for (size_t r = 0; r < n; ++r)
    svg.arrow(scatter_x + scatter_width, box_top + box_height / 2, columns[0].x - 2, lane_top(r) + kLaneHeight / 2,
              "#888", 1.5);

  draw_collective_band(svg, columns[2], lanes_top, lanes_bottom);
  for (size_t c = 0; c < columns.size(); ++c) {
    svg.text(columns[c].x, top + 14, columns[c].header, "start", " font-weight=\"bold\"");
    for (size_t r = 0; r < n; ++r) {
      draw_cell(svg, columns[c], columns[c].cells[r], lane_top(r), px_per_ms);
      if (c + 1 < columns.size())
        svg.arrow(columns[c].x + columns[c].width + 2, lane_top(r) + kLaneHeight / 2, columns[c + 1].x - 8,
                  lane_top(r) + kLaneHeight / 2, "#888", 1.5);
    }
  }
  for (size_t r = 0; r < n; ++r) svg.text(12 + label_width, lane_top(r) + kLaneHeight / 2 + 4, "rank " + std::to_string(r), "end");

  const double footer = lanes_bottom + 12 + 12;
  svg.text(12, footer, "bars: time per step, one scale for all (the longest, " + ms_text(longest) + " ms, is " +
                           ms_text(kLongestBar) + " px)", "start", " font-size=\"11\" fill=\"#444\"");
  svg.text(12, footer + kFooterLine, step_.update_note, "start", " font-size=\"11\" fill=\"#444\"");
  return svg.finish();
}

std::vector<FlowRank> flow_ranks(const std::vector<TraceEvent>& events, int64_t steps,
                                 const std::vector<int64_t>& batch_per_rank, const FlowCategories& categories) {
  RG_CHECK(steps >= 1, "flow_ranks: steps must be >= 1 (got ", steps, ")");
  std::vector<FlowRank> ranks(batch_per_rank.size());
  std::vector<double> sent(ranks.size()), received(ranks.size());
  const auto int_arg = [](const TraceEvent& e, const std::string& key) -> double {
    for (const auto& [name, value] : e.args)
      if (name == key && value.is_int()) return static_cast<double>(value.as_int());
    return 0;
  };
  for (const TraceEvent& e : events) {
    if (e.rank < 0 || static_cast<size_t>(e.rank) >= ranks.size()) continue;
    FlowRank& k = ranks[e.rank];
    const double ms = static_cast<double>(e.duration_us) / 1000;
    if (e.category == categories.forward) k.forward_ms += ms;
    if (e.category == categories.backward) k.backward_ms += ms;
    if (e.category == categories.update) k.update_ms += ms;
    if (e.category == categories.all_reduce) {
      k.all_reduce_ms += ms;
      sent[e.rank] += int_arg(e, "bytes");
      received[e.rank] += int_arg(e, "bytes_received");
    }
  }
  const double per_step = 1.0 / static_cast<double>(steps);
  for (size_t r = 0; r < ranks.size(); ++r) {
    FlowRank& k = ranks[r];
    k.batch = batch_per_rank[r];
    k.forward_ms *= per_step, k.backward_ms *= per_step, k.all_reduce_ms *= per_step, k.update_ms *= per_step;
    k.bytes_sent = static_cast<uint64_t>(std::llround(sent[r] * per_step));
    k.bytes_received = static_cast<uint64_t>(std::llround(received[r] * per_step));
  }
  return ranks;
}

}  // namespace rg::report
