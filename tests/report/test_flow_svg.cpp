// The flow picture: well-formed, its numbers and bar lengths taken from the step it is given
// (not a fixed drawing), bad input refused, and flow_ranks() measuring a trace.
#include <catch2/catch.hpp>
#include <cmath>

#include "report/flow_svg.h"
#include "tensor/error.h"
#include "xml_check.h"

using namespace rg::report;
using rg::report::test::xml_problem;
using Catch::Contains;

namespace {

FlowStep two_ranks() {
  FlowStep step{.title = "one step", .global_batch = 96, .sample_shape = "1x28x28", .parameters = 101770,
                .all_reduce = "ring all-reduce", .update_note = "replicas checked identical"};
  step.ranks.push_back({.batch = 48, .forward_ms = 2, .backward_ms = 10, .all_reduce_ms = 3, .update_ms = 0.5,
                        .bytes_sent = 3 << 20, .bytes_received = 3 << 20});
  step.ranks.push_back({.batch = 48, .forward_ms = 2, .backward_ms = 5, .all_reduce_ms = 3, .update_ms = 0.5,
                        .bytes_sent = 2048, .bytes_received = 512});
  return step;
}

// The width of the bar whose tooltip is `tooltip` (bars are <rect ... width="W" ...><title>).
double bar_width(const std::string& svg, const std::string& tooltip) {
  const size_t title = svg.find("<title>" + tooltip + "</title>");
  REQUIRE(title != std::string::npos);
  const size_t width = svg.rfind(" width=\"", title);
  return std::stod(svg.substr(width + 8));
}

}  // namespace

TEST_CASE("report.flow_picture_shows_the_run", "[report]") {
  const std::string svg = FlowPicture(two_ranks()).str();
  INFO(svg);
  CHECK(xml_problem(svg).empty());
  CHECK(svg.find("nan") == std::string::npos);
  for (const char* part : {"96 samples", "of 1x28x28", "48 x 1x28x28 in", "101,770 gradients", "101,770 parameters",
                           "4. ring all-reduce of the gradients", "sent 3.00 MiB, got 3.00 MiB",
                           "sent 2.00 KiB, got 512 B", "backward 10.0 ms", "backward 5.00 ms", "update 0.50 ms",
                           "rank 0", "rank 1", "replicas checked identical", "the longest, 10.0 ms"})
    CHECK_THAT(svg, Contains(part));
}

TEST_CASE("report.flow_picture_bars_follow_the_times", "[report]") {
  FlowStep step = two_ranks();
  const std::string svg = FlowPicture(step).str();
  // One scale for the whole picture: twice the time, twice the bar; the longest gets 150 px.
  CHECK(bar_width(svg, "rank 0: backward 10.0 ms") == Approx(150));
  CHECK(bar_width(svg, "rank 1: backward 5.00 ms") == Approx(75));
  CHECK(bar_width(svg, "rank 0: all-reduce 3.00 ms") == Approx(45));
  // Other measurements, another picture: rank 1's backward is now the longest.
  step.ranks[1].backward_ms = 20;
  const std::string slower = FlowPicture(step).str();
  CHECK(bar_width(slower, "rank 1: backward 20.0 ms") == Approx(150));
  CHECK(bar_width(slower, "rank 0: backward 10.0 ms") == Approx(75));
}

TEST_CASE("report.flow_picture_lanes_and_bad_input", "[report]") {
  FlowStep step = two_ranks();
  step.ranks.push_back(step.ranks[0]);
  step.ranks.push_back(step.ranks[0]);
  const std::string four = FlowPicture(step).str();
  CHECK(xml_problem(four).empty());
  CHECK_THAT(four, Contains("rank 3"));

  FlowStep none = two_ranks();
  none.ranks.clear();
  CHECK_THAT(FlowPicture(none).str(), Contains("no data"));

  FlowStep bad = two_ranks();
  bad.ranks[1].all_reduce_ms = NAN;
  CHECK_THROWS_WITH(FlowPicture(bad), Contains("rank 1") && Contains("finite"));
  bad.ranks[1].all_reduce_ms = 1;
  bad.ranks[0].batch = -1;
  CHECK_THROWS_WITH(FlowPicture(bad), Contains("rank 0") && Contains("negative batch"));
}

TEST_CASE("report.flow_ranks_from_a_trace", "[report]") {
  // Two traced steps of two ranks; rank 1's all-reduce came in two buckets per step.
  std::vector<TraceEvent> events;
  for (int step = 0; step < 2; ++step) {
    events.push_back({.name = "forward", .category = "forward", .rank = 0, .duration_us = 1000});
    events.push_back({.name = "backward", .category = "backward", .rank = 0, .duration_us = 4000});
    events.push_back({.name = "ar", .category = "comm", .rank = 0, .duration_us = 2000,
                      .args = {{"bytes", 800}, {"bytes_received", 600}}});
    events.push_back({.name = "optimizer step", .category = "optimizer", .rank = 0, .duration_us = 500});
    events.push_back({.name = "load batch", .category = "data", .rank = 0, .duration_us = 9000});
    for (int bucket = 0; bucket < 2; ++bucket)
      events.push_back({.name = "ar", .category = "comm", .rank = 1, .duration_us = 1500, .args = {{"bytes", 100}}});
    events.push_back({.name = "stray", .category = "forward", .rank = 7, .duration_us = 1000});
  }
  const auto ranks = flow_ranks(events, 2, {32, 31});
  REQUIRE(ranks.size() == 2);
  CHECK(ranks[0].batch == 32);
  CHECK(ranks[1].batch == 31);
  CHECK(ranks[0].forward_ms == Approx(1));
  CHECK(ranks[0].backward_ms == Approx(4));
  CHECK(ranks[0].all_reduce_ms == Approx(2));
  CHECK(ranks[0].update_ms == Approx(0.5));
  CHECK(ranks[0].bytes_sent == 800);
  CHECK(ranks[0].bytes_received == 600);
  CHECK(ranks[1].all_reduce_ms == Approx(3));
  CHECK(ranks[1].bytes_sent == 200);
  CHECK(ranks[1].forward_ms == 0);
  CHECK_THROWS_WITH(flow_ranks(events, 0, {1}), Contains("steps"));
}

TEST_CASE("report.format_bytes", "[report]") {
  CHECK(format_bytes(0) == "0 B");
  CHECK(format_bytes(1023) == "1023 B");
  CHECK(format_bytes(4096) == "4.00 KiB");
  CHECK(format_bytes(1310720) == "1.25 MiB");
  CHECK(format_bytes(uint64_t{2} << 30) == "2.00 GiB");
}
