// TraceObserver: observed ops, launches and spans as trace events.
#include "parallel/observer.h"

namespace rg::parallel {

void ObserverTee::op_finished(const OpRecord& op) {
  first_->op_finished(op);
  if (Observer* second = second_) second->op_finished(op);
}

void ObserverTee::bucket_launched(size_t bucket, uint64_t bytes) {
  first_->bucket_launched(bucket, bytes);
  if (Observer* second = second_) second->bucket_launched(bucket, bytes);
}

void ObserverTee::span(const std::string& name, const std::string& category, Clock::time_point start,
                       Clock::time_point end) {
  first_->span(name, category, start, end);
  if (Observer* second = second_) second->span(name, category, start, end);
}

void ObserverTee::copied(const std::string& phase, Device from, Device to, uint64_t bytes) {
  first_->copied(phase, from, to, bytes);
  if (Observer* second = second_) second->copied(phase, from, to, bytes);
}

int64_t TraceObserver::trace_us(Clock::time_point t) const {
  return std::chrono::duration_cast<std::chrono::microseconds>(t - trace_->epoch()).count();
}

void TraceObserver::op_finished(const OpRecord& op) {
  const int64_t start = trace_us(op.start);
  trace_->record(op.label, "comm", start, trace_us(op.end) - start,
                 {{"seq", op.seq},
                  {"bytes", static_cast<int64_t>(op.bytes_sent)},
                  {"bytes_received", static_cast<int64_t>(op.bytes_received)}});
}

void TraceObserver::bucket_launched(size_t bucket, uint64_t bytes) {
  trace_->record("launch bucket " + std::to_string(bucket), "launch", trace_->now_us(), 0,
                 {{"bucket", static_cast<int64_t>(bucket)}, {"bytes", static_cast<int64_t>(bytes)}});
}

void TraceObserver::span(const std::string& name, const std::string& category, Clock::time_point start,
                         Clock::time_point end) {
  const int64_t begin = trace_us(start);
  trace_->record(name, category, begin, trace_us(end) - begin);
}

}  // namespace rg::parallel
