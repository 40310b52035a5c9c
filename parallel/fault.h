// Fault and straggler injection (claims C10 and C11): a worker that is slow, or whose
// gradient is lost or damaged, and what the rest of the system then does. Every injection
// is a hook or wrapper installed from outside (a DDP comm hook, a DataParallel hook, a call
// before an asynchronous push), so the algorithms it tests read without it.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "nn/module.h"
#include "parallel/observer.h"
#include "parallel/reducer.h"
#include "tensor/generator.h"

namespace rg::parallel {

enum class GradientFault {
  drop,     // the worker's contribution is lost (zeros in its place)
  corrupt,  // the worker's contribution is wrong
};

// A fault for one worker at one step: `ringgrad-train --corrupt-grad RANK:STEP[:KIND]`.
struct GradientFaultPlan {
  int rank = 0;
  int64_t step = 1;  // counted from 1
  GradientFault kind = GradientFault::corrupt;
};

// A slow worker: `--straggler RANK:MS[:PROB]` sleeps delay_ms before each of its steps,
// with the given probability.
struct StragglerPlan {
  int rank = 0;
  double delay_ms = 0;
  double probability = 1;
};

// "RANK:STEP[:corrupt|drop]" (kind corrupt when left out) and "RANK:MS[:PROB]" (PROB 1), with
// RANK < workers, STEP >= 1, MS finite and >= 0, PROB in [0, 1]; throw rg::Error naming what
// is wrong, e.g. "rank 3 does not exist with 2 worker(s)".
GradientFaultPlan parse_gradient_fault(const std::string& spec, int workers);
StragglerPlan parse_straggler(const std::string& spec, int workers);

// The plan when it names `rank`, else none.
std::optional<GradientFaultPlan> plan_for(const std::optional<GradientFaultPlan>& plan, int rank);

// A straggler's sleeps. The dice are seeded from the run's seed and the worker, so a run
// repeats its delays; each sleep is reported as a "straggler delay" span.
class StragglerDelay {
 public:
  StragglerDelay(StragglerPlan plan, uint64_t run_seed);
  void maybe_sleep(Observer* observer = nullptr);

 private:
  StragglerPlan plan_;
  Generator dice_;
};

// DistributedDataParallel: a comm hook around the real one that spoils this rank's next
// synchronising backward after arm():
//   drop: the rank contributes zeros to every bucket; the average misses its gradient, but
//     every rank applies the same update, so the replicas stay identical (only the loss
//     shows it);
//   corrupt: after bucket 0's all-reduce the rank adds 1 to its first gradient (the
//     last-registered parameter's); its replica drifts away, which check_consistency()
//     reports at the next check.
//     ddp.register_comm_hook(injector.wrap(ddp.comm_hook()));  ...  injector.arm(kind);
// The injector must outlive the hook.
class GradientFaultInjector {
 public:
  void arm(GradientFault kind) { armed_ = kind; }
  CommHook wrap(CommHook inner);

 private:
  std::optional<GradientFault> armed_;   // for the next backward
  std::optional<GradientFault> active_;  // in the backward under way
};

// DataParallel: a hook on the gradient of the gathered output, applied to `replica`'s
// slice in the next backward after arm(): drop zeroes it, so that replica's samples add
// nothing to the gradients; corrupt adds 1 to every element, so every gradient it sends
// back is wrong. One model, so nothing drifts: only the loss shows it.
//     dp.set_output_gradient_hook(injector.hook());  ...  injector.arm(1, kind);
class ReplicaFaultInjector {
 public:
  explicit ReplicaFaultInjector(size_t replicas) : replicas_(replicas) {}
  void arm(size_t replica, GradientFault kind);
  std::function<Tensor(size_t replica, const Tensor& slice)> hook();

 private:
  size_t replicas_;
  std::optional<std::pair<size_t, GradientFault>> armed_;
};

// Asynchronous modes: spoils a worker's gradients before they are pushed or applied.
// corrupt adds 1 to the last-registered parameter's gradient (as DDP's fault does), drop
// zeroes them all.
void damage_gradients(GradientFault kind, nn::Module& model);

}  // namespace rg::parallel
