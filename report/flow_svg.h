// The lecture's flow picture of one data-parallel step, drawn from a real run: the global
// batch scattered over the ranks, each rank's forward and backward, the all-reduce of the
// gradients, and the identical update on every rank. The numbers (batch shapes, parameter
// count, bytes, times) and every bar's length come from the FlowStep it is given; flow_ranks()
// measures them from a run's trace (report/trace.h). Same guarantees as the charts of svg.h.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "report/svg.h"
#include "report/trace.h"

namespace rg::report {

// One rank's share of a step, per step (means over the measured steps).
struct FlowRank {
  int64_t batch = 0;  // samples this rank trains on
  double forward_ms = 0, backward_ms = 0, all_reduce_ms = 0, update_ms = 0;
  uint64_t bytes_sent = 0, bytes_received = 0;  // by this rank's all-reduces
};

struct FlowStep {
  std::string title = {};
  int64_t global_batch = 0;
  std::string sample_shape = {};        // one sample, e.g. "1x28x28"; empty: not shown
  int64_t parameters = 0;               // gradient values all-reduced (and updated) per step
  std::string all_reduce = "all-reduce";  // e.g. "ring all-reduce"
  std::string update_note = {};         // e.g. "replicas checked identical every 10 steps"
  std::vector<FlowRank> ranks = {};
};

// Five columns (scatter, forward, backward, all-reduce, update), one lane per rank. Each
// cell states its numbers and holds a bar whose length is its time, on one scale for the
// whole picture (the longest time gets the longest bar), so the slowest stage and the
// slowest rank show at a glance.
class FlowPicture : public SvgChart {
 public:
  // Throws rg::Error, naming the rank, for a negative or non-finite time or a negative batch.
  explicit FlowPicture(FlowStep step);
  std::string str() const override;

 private:
  FlowStep step_;
};

// Which trace categories are which stage (defaults: those of the Trainer, DDP's observers
// and chapter traces).
struct FlowCategories {
  std::string forward = "forward", backward = "backward", all_reduce = "comm", update = "optimizer";
};

// The ranks' means per step over `steps` traced steps: each stage's summed event time and
// the all-reduces' bytes (event args "bytes" = sent, "bytes_received"; as TraceObserver
// records them). batch_per_rank[r] is rank r's batch, and its size the number of ranks.
// Throws rg::Error when steps < 1.
std::vector<FlowRank> flow_ranks(const std::vector<TraceEvent>& events, int64_t steps,
                                 const std::vector<int64_t>& batch_per_rank, const FlowCategories& categories = {});

// "512 B", "4.00 KiB", "1.25 MiB", "2.00 GiB": three significant digits in binary units.
std::string format_bytes(uint64_t bytes);

}  // namespace rg::report
