// ProgressBar: choosing the mode, throttling, and formatting the two kinds of line.
#include "report/progress.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "tensor/error.h"

namespace rg::report {
namespace {

// Eighth-blocks: a 24-character bar then resolves 192 positions, smooth enough to
// watch a 469-step epoch move.
constexpr const char* kPartialBlocks[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
constexpr const char* kFullBlock = "█";

bool stream_is_tty(const std::ostream* out) {
  // std::ostream hides its file descriptor; the three standard streams are the only
  // ones that can be a terminal in practice.
  if (out == &std::cout) return ::isatty(STDOUT_FILENO) != 0;
  if (out == &std::cerr || out == &std::clog) return ::isatty(STDERR_FILENO) != 0;
  return false;
}

bool choose_tty(const ProgressOptions& options, const std::ostream* out) {
  if (options.force_tty) return *options.force_tty;
  if (const char* env = std::getenv("RINGGRAD_PROGRESS")) {
    const std::string mode = env;
    if (mode == "bar") return true;
    if (mode == "plain") return false;
    RG_CHECK(mode.empty(), "ProgressBar: RINGGRAD_PROGRESS must be 'bar' or 'plain', got '", mode, "'");
  }
  return stream_is_tty(out);
}

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string bar_cells(double fraction, int width) {
  const int eighths = static_cast<int>(std::clamp(fraction, 0.0, 1.0) * width * 8);
  std::string cells;
  for (int i = 0; i < eighths / 8; ++i) cells += kFullBlock;
  cells += kPartialBlocks[eighths % 8];
  const int used = eighths / 8 + (eighths % 8 != 0);
  cells.append(static_cast<std::size_t>(width - used), ' ');
  return cells;
}

std::size_t display_width(const std::string& utf8) {
  return static_cast<std::size_t>(
      std::count_if(utf8.begin(), utf8.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

}  // namespace

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = static_cast<std::int64_t>(std::llround(seconds));
  char text[32];
  if (s < 60) {
    std::snprintf(text, sizeof text, "%llds", static_cast<long long>(s));
  } else if (s < 3600) {
    std::snprintf(text, sizeof text, "%lldm%02llds", static_cast<long long>(s / 60), static_cast<long long>(s % 60));
  } else {
    std::snprintf(text, sizeof text, "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60));
  }
  return text;
}

std::string format_metric(double value) {
  if (!std::isfinite(value)) return std::isnan(value) ? "nan" : (value > 0 ? "inf" : "-inf");
  char text[32];
  // Below 1000 decimals carry information (a loss of 0.5123); above, they are noise.
  const bool whole = std::abs(value) >= 1000 || value == std::trunc(value);
  if (whole && std::abs(value) < 1e15) {
    std::snprintf(text, sizeof text, "%.0f", value);
  } else {
    std::snprintf(text, sizeof text, "%.4g", value);
  }
  return text;
}

ProgressBar::ProgressBar(ProgressOptions options)
    : options_(std::move(options)),
      out_(options_.out ? options_.out : &std::cerr),
      tty_(choose_tty(options_, out_)),
      start_(now()),
      last_print_(start_) {
  RG_CHECK(options_.total >= 0, "ProgressBar: total must be >= 0, got ", options_.total);
  RG_CHECK(options_.bar_width > 0, "ProgressBar: bar_width must be > 0, got ", options_.bar_width);
  RG_CHECK(options_.plain_every_percent > 0 && options_.redraw_per_second > 0,
           "ProgressBar: plain_every_percent and redraw_per_second must be > 0");
}

ProgressBar::~ProgressBar() {
  try {
    finish();
  } catch (...) {
    // A destructor must not throw; a failed final redraw loses nothing of value.
  }
}

double ProgressBar::now() const { return options_.clock ? options_.clock() : steady_seconds(); }

void ProgressBar::update(std::int64_t step, const ProgressMetrics& metrics) {
  if (!options_.enabled || finished_) return;
  step_ = step;
  merge_metrics(metrics);
  const double t = now();
  const bool complete = options_.total > 0 && step_ >= options_.total;
  if (tty_) {
    // The completing step is always drawn so the bar never stops short of 100%.
    if (!complete && t - last_print_ < 1.0 / options_.redraw_per_second) return;
    redraw(t);
  } else {
    if (!plain_due(t)) return;
    *out_ << plain_line(t, false) << '\n' << std::flush;
    printed_bucket_ = percent_bucket();
  }
  last_print_ = t;
}

void ProgressBar::finish() {
  if (!options_.enabled || finished_) return;
  finished_ = true;
  const double t = now();
  if (tty_) {
    redraw(t);
    *out_ << '\n' << std::flush;
  } else {
    *out_ << plain_line(t, true) << '\n' << std::flush;
  }
}

// Overwrites the line in place; spaces blank what a longer previous line left behind.
void ProgressBar::redraw(double now) {
  const std::string line = bar_line(now);
  const std::size_t width = display_width(line);
  *out_ << '\r' << line << std::string(drawn_width_ > width ? drawn_width_ - width : 0, ' ') << std::flush;
  drawn_width_ = width;
}

void ProgressBar::merge_metrics(const ProgressMetrics& metrics) {
  for (const auto& [name, value] : metrics) {
    auto it = std::find_if(metrics_.begin(), metrics_.end(), [&](const auto& m) { return m.first == name; });
    if (it == metrics_.end()) {
      metrics_.emplace_back(name, value);
    } else {
      it->second = value;
    }
  }
}

bool ProgressBar::plain_due(double now) const {
  if (now - last_print_ >= options_.plain_every_seconds) return true;
  return percent_bucket() > printed_bucket_;
}

// Which plain_every_percent slice the current step is in (0 with an unknown total).
std::int64_t ProgressBar::percent_bucket() const {
  if (options_.total <= 0) return 0;
  return static_cast<std::int64_t>(100.0 * static_cast<double>(step_) / static_cast<double>(options_.total) /
                                   options_.plain_every_percent);
}

double ProgressBar::eta_seconds(double now) const {
  if (options_.total <= 0 || step_ <= 0) return -1;  // format_duration prints "?"
  return (now - start_) * static_cast<double>(options_.total - step_) / static_cast<double>(step_);
}

std::string ProgressBar::progress_text() const {
  std::ostringstream text;
  text << step_;
  if (options_.total > 0) text << '/' << options_.total;
  return text.str();
}

std::string ProgressBar::metrics_text() const {
  std::string text;
  for (const auto& [name, value] : metrics_) text += "  " + name + " " + format_metric(value);
  return text;
}

// "epoch 1/10 ▕█████▍      ▏ 120/469  25%  loss 0.512  [3s<9s]"
std::string ProgressBar::bar_line(double now) const {
  std::ostringstream line;
  if (!options_.label.empty()) line << options_.label << ' ';
  if (options_.total > 0) {
    const double fraction = static_cast<double>(step_) / static_cast<double>(options_.total);
    line << "▕" << bar_cells(fraction, options_.bar_width) << "▏ " << progress_text() << ' '
         << std::llround(std::clamp(fraction, 0.0, 1.0) * 100) << '%';
  } else {
    line << progress_text();
  }
  line << metrics_text() << "  [" << format_duration(now - start_);
  if (options_.total > 0 && step_ < options_.total) line << '<' << format_duration(eta_seconds(now));
  line << ']';
  return line.str();
}

// "epoch 1/10  step 120/469 (25%)  loss 0.512  samples/s 50321  elapsed 3s  eta 9s"
std::string ProgressBar::plain_line(double now, bool final) const {
  std::ostringstream line;
  if (!options_.label.empty()) line << options_.label << "  ";
  line << "step " << progress_text();
  if (options_.total > 0) {
    const double fraction = static_cast<double>(step_) / static_cast<double>(options_.total);
    line << " (" << std::llround(std::clamp(fraction, 0.0, 1.0) * 100) << "%)";
  }
  line << metrics_text() << "  elapsed " << format_duration(now - start_);
  if (!final && options_.total > 0) line << "  eta " << format_duration(eta_seconds(now));
  return line.str();
}

}  // namespace rg::report
