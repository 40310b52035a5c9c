// Per-rank trace events (forward, backward, each bucket's all-reduce, waits, optimizer):
// recorded from any thread, written as Chrome trace JSON (open in ui.perfetto.dev or
// chrome://tracing), drawn as an SVG Timeline, and measured: overlap_fraction() says how
// much communication was hidden behind backward.
#pragma once
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "report/timeline_svg.h"
#include "report/value.h"

namespace rg::report {

// A complete event ("X" in Chrome's format). Times are microseconds from the recorder's epoch.
struct TraceEvent {
  std::string name = {};
  std::string category = {};  // e.g. "compute", "backward", "comm", "wait", "optimizer"
  int rank = 0;          // Chrome pid; one Timeline lane
  int tid = 0;           // small per-recorder thread number (the communication thread != the main one)
  std::int64_t start_us = 0, duration_us = 0;
  Fields args = {};  // e.g. {{"bytes", 4194304}, {"bucket", 3}}
};

class TraceRecorder {
 public:
  using Clock = std::chrono::steady_clock;

  // Ranks of one process (the local world) should share an epoch, so their events line
  // up when merged: TraceRecorder r1(1, r0.epoch()).
  explicit TraceRecorder(int rank = 0, Clock::time_point epoch = Clock::now());

  // Times the enclosing block and records it on destruction. A null recorder makes it a
  // no-op, so code can be traced optionally: TraceRecorder::Scope s(maybe_null, "fwd", "compute").
  class Scope {
   public:
    Scope(TraceRecorder* recorder, std::string name, std::string category, Fields args = {});
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    void add_arg(std::string key, Value value);

   private:
    TraceRecorder* recorder_;
    TraceEvent event_;
  };
  Scope scope(std::string name, std::string category, Fields args = {}) {
    return Scope(this, std::move(name), std::move(category), std::move(args));
  }

  // Thread-safe. rank and tid are filled in from this recorder and the calling thread.
  void record(std::string name, std::string category, std::int64_t start_us, std::int64_t duration_us,
              Fields args = {});
  std::int64_t now_us() const;

  std::vector<TraceEvent> events() const;  // a copy, ordered by start time
  void clear();
  int rank() const { return rank_; }
  Clock::time_point epoch() const { return epoch_; }

  void write_chrome_trace(const std::filesystem::path& path) const;
  Timeline to_timeline(ChartOptions options = {}) const;

 private:
  int thread_number();  // caller holds mutex_

  int rank_;
  Clock::time_point epoch_;
  mutable std::mutex mutex_;
  std::vector<TraceEvent> events_;
  std::unordered_map<std::thread::id, int> thread_numbers_;
};

// All ranks' events in one list, ordered by start time (ties by rank).
std::vector<TraceEvent> merge(std::vector<std::vector<TraceEvent>> per_rank);

// Chrome trace JSON: an array of "X" events (pid = rank, ts/dur in us) plus
// process_name metadata naming each pid "rank N". Written atomically.
std::string chrome_trace_json(const std::vector<TraceEvent>& events);
void write_chrome_trace(const std::filesystem::path& path, const std::vector<TraceEvent>& events);

// One lane per rank, one colour per category, times in ms.
Timeline to_timeline(const std::vector<TraceEvent>& events, ChartOptions options = {});

// Of the time `rank` spent in `comm_category` events, the fraction that lies inside
// `compute_category` events of the same rank and outside `except_category` ones (all as
// unions of intervals, so concurrent buckets are not double-counted). Without a rank:
// over all ranks, each rank's communication against its own compute. 0 when there is no
// communication. DDP's backward ends waiting for its last buckets (a "wait" event inside
// "backward"): communication during that wait is not hidden, hence except_category.
double overlap_fraction(const std::vector<TraceEvent>& events, std::string_view comm_category,
                        std::string_view compute_category, std::optional<int> rank = std::nullopt,
                        std::string_view except_category = {});

}  // namespace rg::report
