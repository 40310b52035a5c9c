// A stopwatch that adds up the seconds between start() and stop(), e.g. the time spent in
// training steps with evaluation and checkpoints left out.
#pragma once
#include <chrono>

namespace rg::report {

class Stopwatch {
 public:
  void start() { started_ = Clock::now(); }
  void stop() { total_ += std::chrono::duration<double>(Clock::now() - started_).count(); }
  double seconds() const { return total_; }

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point started_;
  double total_ = 0;
};

}  // namespace rg::report
