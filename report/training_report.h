// The report page of a training run (OUT/report.html, one self-contained file): the result,
// the batch arithmetic, the loss and accuracy curves, and for a traced parallel run the
// lecture's flow picture, the per-rank timeline, the overlap and the traffic per rank; the
// configuration last.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "report/flow_svg.h"
#include "report/trace.h"
#include "report/value.h"

namespace rg::report {

struct RankTraffic {
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
};

struct TrainingReport {
  std::string title;
  Fields result;                  // test accuracy, steps, time, ...
  std::string batch_arithmetic;   // how the global batch and the learning rate come about
  std::filesystem::path metrics;  // the run's metrics.jsonl, for the curves
  std::optional<FlowPicture> flow = std::nullopt;
  std::vector<TraceEvent> events = {};  // the traced steps, every rank's
  std::string traced_steps = {};        // which they are: "1-10"
  std::optional<double> comm_hidden = std::nullopt;  // the share of all-reduce time inside backward
  std::vector<RankTraffic> traffic = {};             // in rank order; empty: not shown
  Fields config = {};
};

void write_training_report(const std::filesystem::path& page, const TrainingReport& report);

}  // namespace rg::report
