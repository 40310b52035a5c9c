// ProgressBar with an injected clock: plain-line content and cadence, redraw throttling
// in bar mode, ETA and duration formatting, rank gating and the mode selection.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "report/progress.h"

using namespace rg::report;
using Catch::Contains;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::size_t count(const std::string& text, char c) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), c));
}

}  // namespace

TEST_CASE("report.progress_plain_every_percent", "[report]") {
  std::ostringstream out;
  double t = 0;
  {
    ProgressBar bar({.total = 100, .label = "epoch 1/10", .out = &out, .force_tty = false,
                     .plain_every_percent = 25, .clock = [&] { return t; }});
    CHECK_FALSE(bar.is_tty());
    for (int step = 1; step <= 100; ++step) {
      t = step * 0.2;
      bar.update(step, {{"loss", 1.0 / step}, {"samples/s", 51234}});
    }
    bar.finish();
  }
  const auto lines = lines_of(out.str());
  REQUIRE(lines.size() == 5);
  CHECK(lines[0] == "epoch 1/10  step 25/100 (25%)  loss 0.04  samples/s 51234  elapsed 5s  eta 15s");
  CHECK(lines[1] == "epoch 1/10  step 50/100 (50%)  loss 0.02  samples/s 51234  elapsed 10s  eta 10s");
  CHECK(lines[2] == "epoch 1/10  step 75/100 (75%)  loss 0.01333  samples/s 51234  elapsed 15s  eta 5s");
  CHECK(lines[3] == "epoch 1/10  step 100/100 (100%)  loss 0.01  samples/s 51234  elapsed 20s  eta 0s");
  CHECK(lines[4] == "epoch 1/10  step 100/100 (100%)  loss 0.01  samples/s 51234  elapsed 20s");
  CHECK(out.str().find('\r') == std::string::npos);
}

TEST_CASE("report.progress_plain_every_seconds", "[report]") {
  std::ostringstream out;
  double t = 0;
  ProgressBar bar({.total = 1000, .out = &out, .force_tty = false, .plain_every_percent = 50,
                   .plain_every_seconds = 10, .clock = [&] { return t; }});
  for (int step = 1; step <= 35; ++step) {
    t = step;
    bar.update(step);
  }
  const auto lines = lines_of(out.str());
  REQUIRE(lines.size() == 3);
  CHECK(lines[0] == "step 10/1000 (1%)  elapsed 10s  eta 16m30s");
  CHECK_THAT(lines[2], Contains("step 30/1000 (3%)"));
}

TEST_CASE("report.progress_unknown_total", "[report]") {
  std::ostringstream out;
  double t = 0;
  ProgressBar bar({.out = &out, .force_tty = false, .clock = [&] { return t; }});
  t = 12;
  bar.update(7, {{"loss", 0.5}});
  bar.finish();
  CHECK(out.str() == "step 7  loss 0.5  elapsed 12s\nstep 7  loss 0.5  elapsed 12s\n");
}

TEST_CASE("report.progress_bar_throttles_redraws", "[report]") {
  std::ostringstream out;
  double t = 0;
  ProgressBar bar({.total = 100, .label = "train", .out = &out, .force_tty = true, .redraw_per_second = 8,
                   .bar_width = 10, .clock = [&] { return t; }});
  CHECK(bar.is_tty());
  for (int step = 1; step <= 100; ++step) {
    t = step / 64.0;  // exact binary fractions: redraws fall on every 8th step
    bar.update(step, {{"loss", 0.25}});
  }
  // Steps 8, 16, ..., 96 pass the throttle; step 100 completes the bar and is always drawn.
  CHECK(count(out.str(), '\r') == 13);
  bar.finish();
  CHECK(count(out.str(), '\r') == 14);
  CHECK(count(out.str(), '\n') == 1);
  const std::string text = out.str();
  const std::string last = text.substr(text.rfind('\r') + 1);
  CHECK(last == "train ▕██████████▏ 100/100 100%  loss 0.25  [2s]\n");
  CHECK_THAT(text, Contains("train ▕████▊     ▏ 48/100 48%  loss 0.25  [1s<1s]"));
}

TEST_CASE("report.progress_disabled_rank_prints_nothing", "[report]") {
  std::ostringstream out;
  {
    ProgressBar bar({.total = 10, .out = &out, .enabled = false, .force_tty = false});
    for (int step = 1; step <= 10; ++step) bar.update(step, {{"loss", 1.0}});
  }
  CHECK(out.str().empty());
}

TEST_CASE("report.progress_mode_from_environment", "[report]") {
  std::ostringstream out;
  ::setenv("RINGGRAD_PROGRESS", "bar", 1);
  CHECK(ProgressBar({.out = &out}).is_tty());
  CHECK_FALSE(ProgressBar({.out = &out, .force_tty = false}).is_tty());
  ::setenv("RINGGRAD_PROGRESS", "plain", 1);
  CHECK_FALSE(ProgressBar({.out = &out}).is_tty());
  ::unsetenv("RINGGRAD_PROGRESS");
  CHECK_FALSE(ProgressBar({.out = &out}).is_tty());  // a string stream is never a terminal
}

TEST_CASE("report.progress_formatting", "[report]") {
  CHECK(format_duration(7.4) == "7s");
  CHECK(format_duration(185) == "3m05s");
  CHECK(format_duration(7260) == "2h01m");
  CHECK(format_duration(-1) == "?");
  CHECK(format_metric(0.51234) == "0.5123");
  CHECK(format_metric(50321.4) == "50321");
  CHECK(format_metric(3) == "3");
  CHECK(format_metric(1.2e-5) == "1.2e-05");
}
