// Observers: how the parallel module is watched without instrumenting its algorithms. The
// process group, DistributedDataParallel's reducers and DataParallel report what they do
// to an Observer; tracing (TraceObserver) and byte/time accounting (ProcessGroup::stats(),
// DataParallel::stats()) are observers, so the algorithms read without them.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "report/trace.h"
#include "tensor/device.h"

namespace rg::parallel {

using Clock = std::chrono::steady_clock;

// One process-group op, as the thread that ran it saw it.
struct OpRecord {
  std::string label;  // "all_reduce (ring)", "send to rank 1"
  int64_t seq = 0;    // collectives and point-to-point ops are numbered separately
  uint64_t bytes_sent = 0, bytes_received = 0;
  Clock::time_point start, end;
};

// Every method has an empty default, so an observer overrides only what it watches. Calls
// come from whichever thread does the work (op_finished from a communication thread), so
// an observer shared by threads must be thread-safe.
class Observer {
 public:
  virtual ~Observer() = default;
  // A process-group op ended (successfully).
  virtual void op_finished(const OpRecord& /*op*/) {}
  // A reducer of DistributedDataParallel launched the all-reduce of gradient bucket `bucket`.
  virtual void bucket_launched(size_t /*bucket*/, uint64_t /*bytes*/) {}
  // A stretch of a wrapper's own work: DDP's wait for its all-reduces ("wait"), one of
  // DataParallel's phases ("scatter", "replicate", ...).
  virtual void span(const std::string& /*name*/, const std::string& /*category*/, Clock::time_point /*start*/,
                    Clock::time_point /*end*/) {}
  // DataParallel copied `bytes` from one device to another during `phase`.
  virtual void copied(const std::string& /*phase*/, Device /*from*/, Device /*to*/, uint64_t /*bytes*/) {}
};

// Reports to two observers: `first` always (a group's or a wrapper's own counter), then
// `second` when one is set (the user's, e.g. a TraceObserver; settable between ops).
class ObserverTee : public Observer {
 public:
  explicit ObserverTee(std::shared_ptr<Observer> first) : first_(std::move(first)) {}
  void set_second(Observer* second) { second_ = second; }

  void op_finished(const OpRecord& op) override;
  void bucket_launched(size_t bucket, uint64_t bytes) override;
  void span(const std::string& name, const std::string& category, Clock::time_point start,
            Clock::time_point end) override;
  void copied(const std::string& phase, Device from, Device to, uint64_t bytes) override;

 private:
  std::shared_ptr<Observer> first_;
  std::atomic<Observer*> second_ = nullptr;
};

// Times the enclosing block and reports it as observer->span(...); a null observer makes it a no-op.
class ObservedSpan {
 public:
  ObservedSpan(Observer* observer, std::string name, std::string category)
      : observer_(observer), name_(std::move(name)), category_(std::move(category)), start_(Clock::now()) {}
  ~ObservedSpan() {
    if (observer_) observer_->span(name_, category_, start_, Clock::now());
  }
  ObservedSpan(const ObservedSpan&) = delete;
  ObservedSpan& operator=(const ObservedSpan&) = delete;

 private:
  Observer* observer_;
  std::string name_, category_;
  Clock::time_point start_;
};

// Writes what it observes into a TraceRecorder: ops as "comm" events (on the thread that
// ran them, so async ops mostly land on the communication thread's row), bucket launches as
// zero-length "launch" events, spans under their own category.
class TraceObserver : public Observer {
 public:
  explicit TraceObserver(report::TraceRecorder* trace) : trace_(trace) {}
  void op_finished(const OpRecord& op) override;
  void bucket_launched(size_t bucket, uint64_t bytes) override;
  void span(const std::string& name, const std::string& category, Clock::time_point start,
            Clock::time_point end) override;

 private:
  int64_t trace_us(Clock::time_point t) const;

  report::TraceRecorder* trace_;
};

}  // namespace rg::parallel
