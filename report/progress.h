// A progress bar for training loops. On a terminal it redraws one line in place; in
// logs (CI, files, pipes) it prints a plain line every few percent or seconds instead.
//   ProgressBar bar({.total = loader.size(), .label = "epoch 1/10", .enabled = pg->rank() == 0});
//   bar.update(step, {{"loss", 0.31}, {"samples/s", 51234}});
//   bar.finish();
#pragma once
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rg::report {

using ProgressMetrics = std::vector<std::pair<std::string, double>>;

struct ProgressOptions {
  std::int64_t total = 0;       // steps in the run; 0 = unknown (no bar, percentage or ETA)
  std::string label = {};       // e.g. "epoch 1/10"
  std::ostream* out = nullptr;  // nullptr = std::cerr
  bool enabled = true;          // false prints nothing: pass `rank == 0`
  // true = redraw in place, false = plain lines. Unset: the environment variable
  // RINGGRAD_PROGRESS=bar|plain decides, else whether `out` is std::cout/cerr/clog on a tty.
  std::optional<bool> force_tty = {};
  double redraw_per_second = 10;  // bar mode: redraws are throttled to this rate
  double plain_every_percent = 10;
  double plain_every_seconds = 10;
  int bar_width = 24;                   // in characters
  std::function<double()> clock = {};   // seconds, monotonic; unset = steady_clock (tests inject)
};

class ProgressBar {
 public:
  explicit ProgressBar(ProgressOptions options);
  ~ProgressBar();  // calls finish()
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // step = steps completed so far (1..total). Metrics are shown in the order given
  // and remembered, so later updates may omit them.
  void update(std::int64_t step, const ProgressMetrics& metrics = {});
  // Draws the final state (bar mode ends the line); later calls do nothing.
  void finish();

  bool is_tty() const { return tty_; }

 private:
  double now() const;
  void redraw(double now);
  void merge_metrics(const ProgressMetrics& metrics);
  bool plain_due(double now) const;
  std::int64_t percent_bucket() const;
  std::string bar_line(double now) const;
  std::string plain_line(double now, bool final) const;
  std::string progress_text() const;
  std::string metrics_text() const;
  double eta_seconds(double now) const;

  ProgressOptions options_;
  std::ostream* out_;
  bool tty_;
  bool finished_ = false;
  double start_;
  double last_print_;
  std::int64_t step_ = 0;
  std::int64_t printed_bucket_ = 0;  // plain mode: last plain_every_percent bucket printed
  std::size_t drawn_width_ = 0;      // bar mode: width of the line on screen, to blank leftovers
  ProgressMetrics metrics_;
};

// "7s", "3m05s", "2h01m": short and fixed-order, for ETAs and elapsed times.
std::string format_duration(double seconds);
// Compact metric values: integers plainly, large values without decimals, others
// with 4 significant digits ("0.5123", "50321", "1.2e-05").
std::string format_metric(double value);

}  // namespace rg::report
