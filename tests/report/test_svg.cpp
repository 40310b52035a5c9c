// SVG charts: well-formed XML, no NaN/Inf text, nice ticks covering the data, legends,
// log axes, escaping, the "no data" fallback, timelines and grid panels.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <random>
#include <regex>

#include "report/grid_svg.h"
#include "report/svg.h"
#include "report/timeline_svg.h"
#include "tensor/error.h"
#include "xml_check.h"

using namespace rg::report;
using rg::report::test::xml_problem;
using Catch::Contains;

namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

// Asserts the properties every chart must have.
void check_svg(const std::string& svg) {
  INFO(svg);
  CHECK(xml_problem(svg).empty());
  CHECK_THAT(svg, Contains("viewBox=\"0 0 "));
  CHECK(lower(svg).find("nan") == std::string::npos);
  CHECK(lower(svg).find("inf") == std::string::npos);
}

// The fill of the first event box whose tooltip names `category`.
std::string fill_of(const std::string& svg, const std::string& category) {
  std::smatch match;
  const std::regex box("fill=\"(#[0-9a-f]+)\"><title>[^<]*\\[" + category + "\\]");
  return std::regex_search(svg, match, box) ? match[1].str() : "";
}

std::size_t occurrences(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// The root element's width or height attribute.
double root_size(const std::string& svg, const std::string& attribute) {
  const std::size_t at = svg.find(" " + attribute + "=\"", svg.find("<svg"));
  return std::stod(svg.substr(at + attribute.size() + 3));
}

bool is_1_2_5(double step) {
  const double mantissa = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
  return std::abs(mantissa - 1) < 1e-9 || std::abs(mantissa - 2) < 1e-9 || std::abs(mantissa - 5) < 1e-9;
}

}  // namespace

TEST_CASE("report.svg_checker_rejects_bad_xml", "[report]") {
  CHECK(xml_problem("<svg><g></svg>") != "");
  CHECK(xml_problem("<svg><text>a < b</text></svg>") != "");
  CHECK(xml_problem("<svg><text>a & b</text></svg>") != "");
  CHECK(xml_problem("<svg x=1/>") != "");
  CHECK(xml_problem("<a/><b/>") != "");
  CHECK(xml_problem("<?xml version=\"1.0\"?>\n<svg a=\"1\"><text>a &lt; b</text></svg>\n") == "");
}

TEST_CASE("report.svg_nice_ticks", "[report]") {
  CHECK(nice_ticks(0, 1) == std::vector<double>{0, 0.2, 0.4, 0.6, 0.8, 1.0});
  CHECK(nice_ticks(0.13, 9.7) == std::vector<double>{0, 2, 4, 6, 8, 10});
  CHECK(nice_ticks(3, 3).size() >= 2);
  std::mt19937 gen(7);
  std::uniform_real_distribution<double> exponent(-6, 9), unit(-1, 1);
  for (int trial = 0; trial < 500; ++trial) {
    const double scale = std::pow(10.0, exponent(gen));
    double lo = unit(gen) * scale, hi = unit(gen) * scale;
    if (lo > hi) std::swap(lo, hi);
    const auto ticks = nice_ticks(lo, hi);
    INFO(lo << " .. " << hi);
    REQUIRE(ticks.size() >= 2);
    CHECK(ticks.size() <= 8);
    const double step = ticks[1] - ticks[0];
    CHECK(is_1_2_5(step));
    CHECK(ticks.front() <= lo);
    CHECK(ticks.back() >= hi);
    CHECK(ticks.front() > lo - step * (1 + 1e-9));  // no wasted tick below the data
  }
}

TEST_CASE("report.svg_log_ticks_and_labels", "[report]") {
  CHECK(log_ticks(3, 40) == std::vector<double>{1, 2, 5, 10, 20, 50, 100});
  const auto wide = log_ticks(8, 1e8);
  CHECK(wide.front() == 1);
  CHECK(wide.back() == 1e8);
  CHECK(wide.size() == 9);
  CHECK(format_tick(0.4, 0.2) == "0.4");
  CHECK(format_tick(2.0000000000000004, 0.5) == "2");
  CHECK(format_tick(1e-17, 0.1) == "0");
  CHECK(format_tick(1500, 500) == "1500");
  CHECK(format_tick(1000, 1000) == "1k");
  CHECK(format_tick(15000, 5000) == "15k");
  CHECK(format_tick(1.5e6, 5e5) == "1.5M");
  CHECK(format_tick(1e8, 1e8) == "100M");
  CHECK(format_tick(2e-6, 1e-6) == "2e-06");
  CHECK(format_tick(5e14, 1e14) == "500T");
  CHECK(format_tick(1e20, 1e20) == "1e+20");
  CHECK(format_tick(1e300, 1e300) == "1e+300");
}

TEST_CASE("report.svg_line_chart", "[report]") {
  LineChart chart({.title = "Loss <train & eval>", .x_label = "step", .y_label = "loss"});
  chart.add_series("train", {0, 1, 2, 3, 4}, {2.3, 1.1, NAN, 0.6, 0.4});
  chart.add_series("eval", {{0, 2.2}, {4, INFINITY}, {2, 0.9}});
  chart.add_series("empty", std::vector<Point>{});
  const std::string svg = chart.str();
  check_svg(svg);
  CHECK_THAT(svg, Contains("Loss &lt;train &amp; eval&gt;"));
  for (const char* name : {">train<", ">eval<", ">empty<", ">step<", ">loss<"}) CHECK_THAT(svg, Contains(name));
  // y spans 0.4..2.3: ticks 0 to 2.5 by 0.5, each labelled.
  for (const char* tick : {">0<", ">0.5<", ">1<", ">1.5<", ">2<", ">2.5<"}) CHECK_THAT(svg, Contains(tick));
  // Invalid points break lines: "train" becomes two polylines, "eval" two lone dots.
  CHECK(occurrences(svg, "<polyline") == 2);
  CHECK(occurrences(svg, "<circle") == 2);
  CHECK_THROWS_AS(chart.add_series("bad", {1, 2}, {1}), rg::Error);
}

TEST_CASE("report.svg_log_scale", "[report]") {
  LineChart chart({.title = "all-reduce bandwidth", .x_label = "message size (bytes)", .y_label = "GB/s",
                   .x_scale = Scale::Log, .y_scale = Scale::Log});
  std::vector<Point> ring, library;
  for (double bytes = 8; bytes <= 1e8; bytes *= 4) {
    ring.push_back({bytes, bytes / (bytes / 10 + 2e3)});
    library.push_back({bytes, bytes / (bytes / 12 + 1e3)});
  }
  ring.push_back({0, 1});    // not drawable on a log axis
  ring.push_back({1e3, -1});
  chart.add_series("ring", ring).add_series("library", library);
  const std::string svg = chart.str();
  check_svg(svg);
  for (const char* tick : {">1<", ">10<", ">100<", ">1k<", ">10k<", ">1M<", ">100M<"}) CHECK_THAT(svg, Contains(tick));
}

TEST_CASE("report.svg_no_data", "[report]") {
  const std::string empty = LineChart({.title = "nothing"}).str();
  check_svg(empty);
  CHECK_THAT(empty, Contains("no data"));
  LineChart all_bad;
  all_bad.add_series("diverged", {0, 1}, {NAN, INFINITY});
  check_svg(all_bad.str());
  CHECK_THAT(all_bad.str(), Contains("no data") && Contains(">diverged<"));
  check_svg(Timeline().str());
  CHECK_THAT(Timeline().str(), Contains("no data"));
  BarChart bars({}, {"rank 0"});
  bars.add_series("bytes", {NAN});
  check_svg(bars.str());
  CHECK_THAT(bars.str(), Contains("no data"));
}

TEST_CASE("report.svg_bar_chart", "[report]") {
  BarChart chart({.title = "bytes per rank", .y_label = "MB"}, {"rank 0", "rank 1", "rank 2", "rank 3"});
  chart.add_series("sent", {37.5, 37.5, 37.5, 37.5}).add_series("received", {37.5, 37.5, 37.5, NAN});
  const std::string svg = chart.str();
  check_svg(svg);
  for (const char* label : {">rank 0<", ">rank 3<", ">sent<", ">received<", ">40<"}) CHECK_THAT(svg, Contains(label));
  CHECK_THROWS_AS(chart.add_series("short", {1.0}), rg::Error);
}

TEST_CASE("report.svg_timeline_lanes", "[report]") {
  Timeline timeline({.title = "DDP step"});
  for (int rank = 0; rank < 3; ++rank) {
    timeline.add_event({"forward", "compute", rank, 0, 4});
    timeline.add_event({"backward", "backward", rank, 4, 8});
    timeline.add_event({"bucket 0", "comm", rank, 7, 3});  // overlaps backward: a second row
    timeline.add_event({"bad", "comm", rank, NAN, 1});
  }
  timeline.set_lane_name(2, "rank 2 (slow)");
  const std::string svg = timeline.str();
  check_svg(svg);
  for (const char* lane : {">rank 0<", ">rank 1<", ">rank 2 (slow)<"}) CHECK_THAT(svg, Contains(lane));
  CHECK(svg.find(">rank 3<") == std::string::npos);
  for (const char* label : {">compute<", ">backward<", ">comm<", ">time (ms)<"}) CHECK_THAT(svg, Contains(label));
}

TEST_CASE("report.svg_timeline_category_order_colours_alike", "[report]") {
  // Two timelines with the shared order: "compute" is the second colour in both, though
  // only the second has "sleep"; each legend lists only what it draws.
  const std::vector<std::string> order{"sleep", "compute"};
  Timeline first, second;
  first.set_category_order(order).add_event({"comm", "comm", 0, 0, 1}).add_event({"fwd", "compute", 0, 1, 2});
  second.set_category_order(order).add_event({"zzz", "sleep", 0, 0, 5}).add_event({"fwd", "compute", 0, 5, 2});
  const std::string a = first.str(), b = second.str();
  check_svg(a);
  check_svg(b);
  REQUIRE(!fill_of(a, "compute").empty());
  CHECK(fill_of(a, "compute") == fill_of(b, "compute"));
  CHECK(fill_of(b, "sleep") != fill_of(b, "compute"));
  CHECK(fill_of(a, "comm") != fill_of(a, "compute"));  // a category outside the order follows it
  CHECK(a.find(">sleep<") == std::string::npos);
  CHECK_THAT(b, Contains(">sleep<"));
  // Without an order, colours follow first appearance: "comm" first, then "compute".
  Timeline plain;
  plain.add_event({"comm", "comm", 0, 0, 1}).add_event({"fwd", "compute", 0, 1, 2});
  CHECK(fill_of(plain.str(), "comm") == fill_of(b, "sleep"));
}

TEST_CASE("report.svg_timeline_abutting_events_share_a_row", "[report]") {
  // 25.602 + 0.266 is a hair above 25.868 in floating point: "push" still goes on backward's
  // row; an event that really overlaps stacks onto a second row.
  const auto row_of_push = [](double push_start) {
    Timeline timeline;
    timeline.add_event({"backward", "backward", 0, 25.602, 0.266}).add_event({"push", "push", 0, push_start, 2.0});
    const std::string svg = timeline.str();
    std::smatch backward, push;
    REQUIRE(std::regex_search(svg, backward, std::regex("y=\"([0-9.]+)\"[^>]*><title>backward ")));
    REQUIRE(std::regex_search(svg, push, std::regex("y=\"([0-9.]+)\"[^>]*><title>push ")));
    return std::stod(push[1].str()) - std::stod(backward[1].str());
  };
  REQUIRE(25.602 + 0.266 > 25.868);
  CHECK(row_of_push(25.868) == 0);
  CHECK(row_of_push(25.867) > 0);
}

TEST_CASE("report.svg_grid_panels", "[report]") {
  GridPanels grid({.title = "ring <steps>", .row_labels = {"chunk 0", "chunk 1"},
                   .column_labels = {"rank 0", "rank 1", "rank 2"}, .panels_per_line = 2});
  check_svg(grid.str());
  CHECK_THAT(grid.str(), Contains("no data"));
  grid.add_panel({.title = "start", .text = {{"0", "1", "2"}, {"0", "1", "2"}}});
  grid.add_panel({.title = "step 1",
                  .text = {{"0", "0+1", "2"}, {"0+2", "1", "2"}},
                  .shade = {{0.3, 0.6, 0.3}, {0.6, NAN, 0.3}},
                  .arrows = {{.row = 0, .from_column = 0, .to_column = 1}, {.row = 1, .from_column = 2, .to_column = 0}}});
  grid.add_panel({.title = "step 2", .text = {{"a", "b", "c"}, {"d", "e", "f"}}});
  const std::string svg = grid.str();
  check_svg(svg);
  for (const char* label : {"ring &lt;steps&gt;", ">chunk 1<", ">rank 2<", ">0+1<", ">0+2<", ">step 2<"})
    CHECK_THAT(svg, Contains(label));
  // One arrowhead for the arrow to the neighbour, two for the one around the ring.
  CHECK(occurrences(svg, "<polygon") == 3);
  CHECK(occurrences(svg, "fill-opacity=\"0.42\"") == 2);  // shade 0.6 at 70%
  // Three panels, two per line: twice as wide as one panel, and taller.
  GridPanels one({.title = "ring <steps>", .row_labels = {"chunk 0", "chunk 1"},
                  .column_labels = {"rank 0", "rank 1", "rank 2"}});
  one.add_panel({.text = {{"", "", ""}, {"", "", ""}}});
  CHECK(root_size(svg, "width") == Approx(2 * root_size(one.str(), "width")));
  CHECK(root_size(svg, "height") > root_size(one.str(), "height"));
  CHECK_THROWS_AS(grid.add_panel({.title = "short", .text = {{"0", "1", "2"}}}), rg::Error);
  CHECK_THROWS_AS(grid.add_panel({.text = {{"", "", ""}, {"", "", ""}}, .shade = {{0}}}), rg::Error);
  CHECK_THROWS_AS(grid.add_panel({.text = {{"", "", ""}, {"", "", ""}}, .arrows = {{.row = 2}}}), rg::Error);
  CHECK_THROWS_AS(grid.add_panel({.text = {{"", "", ""}, {"", "", ""}}, .arrows = {{.row = 0, .from_column = 1, .to_column = 1}}}),
                  rg::Error);
  CHECK_THROWS_AS(GridPanels({.row_labels = {"a"}, .column_labels = {}}), rg::Error);
}
