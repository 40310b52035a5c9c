// TraceRecorder and what is done with its events: Chrome trace JSON, SVG timelines,
// and the communication/backward overlap measure.
#include "report/trace.h"

#include <algorithm>
#include <map>

#include "report/json_util.h"
#include "tensor/error.h"

namespace rg::report {
namespace {

using Interval = std::pair<std::int64_t, std::int64_t>;  // [start, end) in us

// By start, then rank; on a tie the longer event first, so an enclosing scope that began
// in the same microsecond as its child still comes before it.
bool by_start(const TraceEvent& a, const TraceEvent& b) {
  if (a.start_us != b.start_us) return a.start_us < b.start_us;
  if (a.rank != b.rank) return a.rank < b.rank;
  return a.duration_us > b.duration_us;
}

// Sorted, disjoint intervals covering the same time as the input.
std::vector<Interval> interval_union(std::vector<Interval> intervals) {
  std::sort(intervals.begin(), intervals.end());
  std::vector<Interval> merged;
  for (const Interval& i : intervals) {
    if (!merged.empty() && i.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, i.second);
    } else {
      merged.push_back(i);
    }
  }
  return merged;
}

std::int64_t total_length(const std::vector<Interval>& intervals) {
  std::int64_t total = 0;
  for (const auto& [start, end] : intervals) total += end - start;
  return total;
}

// The intersection of two sorted disjoint interval lists (a two-pointer sweep), itself
// sorted and disjoint.
std::vector<Interval> intersection(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> common;
  for (std::size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    const std::int64_t start = std::max(a[i].first, b[j].first), end = std::min(a[i].second, b[j].second);
    if (start < end) common.emplace_back(start, end);
    if (a[i].second < b[j].second) ++i;
    else ++j;
  }
  return common;
}

std::vector<Interval> intervals_of(const std::vector<TraceEvent>& events, std::string_view category, int rank) {
  std::vector<Interval> intervals;
  for (const auto& e : events)
    if (e.rank == rank && e.category == category) intervals.emplace_back(e.start_us, e.start_us + e.duration_us);
  return interval_union(std::move(intervals));
}

}  // namespace

TraceRecorder::TraceRecorder(int rank, Clock::time_point epoch) : rank_(rank), epoch_(epoch) {}

TraceRecorder::Scope::Scope(TraceRecorder* recorder, std::string name, std::string category, Fields args)
    : recorder_(recorder) {
  if (!recorder_) return;
  event_.name = std::move(name);
  event_.category = std::move(category);
  event_.args = std::move(args);
  event_.start_us = recorder_->now_us();
}

TraceRecorder::Scope::~Scope() {
  if (!recorder_) return;
  try {
    recorder_->record(std::move(event_.name), std::move(event_.category), event_.start_us,
                      recorder_->now_us() - event_.start_us, std::move(event_.args));
  } catch (...) {
    // Out of memory while tracing: losing one event beats terminating from a destructor.
  }
}

void TraceRecorder::Scope::add_arg(std::string key, Value value) {
  if (recorder_) event_.args.emplace_back(std::move(key), std::move(value));
}

void TraceRecorder::record(std::string name, std::string category, std::int64_t start_us, std::int64_t duration_us,
                           Fields args) {
  std::lock_guard lock(mutex_);
  events_.push_back({std::move(name), std::move(category), rank_, thread_number(), start_us, duration_us,
                     std::move(args)});
}

std::int64_t TraceRecorder::now_us() const {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - epoch_).count();
}

int TraceRecorder::thread_number() {
  return thread_numbers_.try_emplace(std::this_thread::get_id(), static_cast<int>(thread_numbers_.size()))
      .first->second;
}

std::vector<TraceEvent> TraceRecorder::events() const {
  std::vector<TraceEvent> copy;
  {
    std::lock_guard lock(mutex_);
    copy = events_;
  }
  // Scopes record when they end, so nested events arrive inner-first; sort by start.
  std::stable_sort(copy.begin(), copy.end(), by_start);
  return copy;
}

void TraceRecorder::clear() {
  std::lock_guard lock(mutex_);
  events_.clear();
}

void TraceRecorder::write_chrome_trace(const std::filesystem::path& path) const {
  report::write_chrome_trace(path, events());
}

Timeline TraceRecorder::to_timeline(ChartOptions options) const {
  return report::to_timeline(events(), std::move(options));
}

std::vector<TraceEvent> merge(std::vector<std::vector<TraceEvent>> per_rank) {
  std::vector<TraceEvent> all;
  for (auto& events : per_rank) std::move(events.begin(), events.end(), std::back_inserter(all));
  std::stable_sort(all.begin(), all.end(), by_start);
  return all;
}

std::string chrome_trace_json(const std::vector<TraceEvent>& events) {
  detail::Json trace = detail::Json::array();
  std::map<int, bool> ranks;
  for (const auto& e : events) ranks[e.rank] = true;
  for (const auto& [rank, seen] : ranks) {
    trace.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", rank}, {"tid", 0},
                     {"args", {{"name", "rank " + std::to_string(rank)}}}});
  }
  for (const auto& e : events) {
    trace.push_back({{"name", e.name}, {"cat", e.category}, {"ph", "X"}, {"pid", e.rank}, {"tid", e.tid},
                     {"ts", e.start_us}, {"dur", e.duration_us}, {"args", detail::to_json(e.args)}});
  }
  return trace.dump(1);
}

void write_chrome_trace(const std::filesystem::path& path, const std::vector<TraceEvent>& events) {
  detail::write_atomically("write_chrome_trace", path, chrome_trace_json(events) + "\n");
}

Timeline to_timeline(const std::vector<TraceEvent>& events, ChartOptions options) {
  Timeline timeline(std::move(options));
  for (const auto& e : events) {
    timeline.add_event({e.name, e.category, e.rank, static_cast<double>(e.start_us) / 1000.0,
                        static_cast<double>(e.duration_us) / 1000.0});
  }
  return timeline;
}

double overlap_fraction(const std::vector<TraceEvent>& events, std::string_view comm_category,
                        std::string_view compute_category, std::optional<int> rank,
                        std::string_view except_category) {
  std::map<int, bool> ranks;
  for (const auto& e : events)
    if (!rank || e.rank == *rank) ranks[e.rank] = true;
  std::int64_t comm = 0, hidden = 0;
  for (const auto& [r, seen] : ranks) {
    const auto comm_intervals = intervals_of(events, comm_category, r);
    const auto under_compute = intersection(comm_intervals, intervals_of(events, compute_category, r));
    comm += total_length(comm_intervals);
    hidden += total_length(under_compute);
    if (!except_category.empty()) hidden -= total_length(intersection(under_compute, intervals_of(events, except_category, r)));
  }
  return comm > 0 ? static_cast<double>(hidden) / static_cast<double>(comm) : 0.0;
}

}  // namespace rg::report
