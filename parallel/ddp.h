// DistributedDataParallel: one model replica per rank, kept identical by averaging the
// gradients after every backward. Gradients live in flat buckets (reverse registration
// order) that are all-reduced asynchronously from the gradient-ready hooks, so
// communication overlaps the rest of backward (DESIGN.md section 6, claims C02, C03, C14).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nn/module.h"
#include "parallel/fault.h"
#include "parallel/process_group.h"
#include "report/trace.h"

namespace rg::parallel {

struct DDPOptions {
  double bucket_cap_mb = 25;  // later buckets hold up to this many MB of gradients
  double first_bucket_mb = 1;  // the first bucket is small so its all-reduce starts early
  // Find the parameters a forward did not use (by walking its graph) and count them as
  // ready, so their buckets still complete. Off: such a parameter is an error, reported
  // at the next forward.
  bool find_unused_parameters = false;
  Algorithm algorithm = Algorithm::library;
  int64_t check_every = 0;  // run check_consistency() every N forwards; 0: never
  // Broadcast the buffers (e.g. BatchNorm running statistics) from rank 0 before every
  // forward, as PyTorch does by default, so evaluation on any rank sees rank 0's.
  bool broadcast_buffers = true;
  // Records each bucket's launch and the waits for all-reduces as trace events (the
  // all-reduces themselves come from ProcessGroup::set_trace). Must outlive the wrapper.
  report::TraceRecorder* trace = nullptr;
};

// One bucket: consecutive parameters (in reverse registration order) of one dtype whose
// gradients are views into `flat`.
struct DDPBucket {
  Tensor flat;
  std::vector<std::string> names;
};

// Wraps a model for data-parallel training over `pg`. Construction is a collective: it
// checks that every rank has the same parameters and buffers (names, shapes, dtypes),
// then broadcasts their values from rank 0. Each parameter's grad becomes a view into its
// bucket, so the engine accumulates straight into the buffer that is all-reduced
// (PyTorch's gradient_as_bucket_view); zero_grad() keeps the views, and grads dropped with
// set_to_none are re-attached at the next forward.
//
// The engine has no end-of-backward callback, so the hook that completes the last bucket
// (the one holding the first-registered parameters) waits for every bucket's all-reduce:
// when loss.backward() returns, every gradient is averaged and the optimizer can step.
// Buckets are launched strictly in bucket order, so every rank issues the same sequence
// of collectives whatever order its gradients became ready in.
class DistributedDataParallel {
 public:
  DistributedDataParallel(std::shared_ptr<nn::Module> model, std::shared_ptr<ProcessGroup> pg,
                          const DDPOptions& options = {});
  ~DistributedDataParallel();
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  // model->forward(x), after checking the previous backward synchronised every bucket.
  Variable forward(const Variable& x);
  Variable operator()(const Variable& x) { return forward(x); }

  // While a NoSync lives, backward passes of forwards run inside it accumulate gradients
  // locally; the first backward after it averages the accumulated sum (gradient
  // accumulation without communication, as PyTorch's no_sync()).
  class NoSync {
   public:
    explicit NoSync(DistributedDataParallel& ddp);
    ~NoSync();
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;

   private:
    DistributedDataParallel& ddp_;
    bool previous_;
  };
  NoSync no_sync() { return NoSync(*this); }

  // A collective: checks that the model still holds the Variables wrapped (same shapes and
  // storage) on every rank and that every parameter is bit-identical across ranks; throws
  // an rg::Error naming the first parameter that is not and the ranks that differ.
  void check_consistency();

  // A collective, before each epoch: every rank passes the number of batches it will run.
  // Different counts would leave the ranks with more batches waiting at an all-reduce the
  // others never join; this throws at once instead, naming the counts per rank.
  void check_even_inputs(int64_t batches);

  // Replaces DDPOptions::trace (null: stop tracing); call between steps.
  void set_trace(report::TraceRecorder* trace) { options_.trace = trace; }

  // Applies `fault` to this rank's next backward that synchronises gradients:
  //   drop: this rank contributes zeros to every bucket; the average misses its gradient,
  //     but every rank applies the same update, so the replicas stay identical.
  //   corrupt: after the all-reduce, this rank adds 1 to the first bucket's first
  //     parameter's gradient; its replica drifts away, which check_consistency() reports.
  void inject_fault(GradientFault fault) { pending_fault_ = fault; }

  // Called with the bucket index each time a bucket's all-reduce is launched (tracing).
  void on_bucket_launch(std::function<void(size_t bucket)> observer) { launch_observer_ = std::move(observer); }

  const std::vector<DDPBucket>& buckets() const { return buckets_; }
  const std::shared_ptr<nn::Module>& module() const { return model_; }
  ProcessGroup& process_group() const { return *pg_; }

 private:
  struct Slot {  // one parameter in its bucket
    Variable param;
    std::string name;
    Tensor data;  // the parameter's data tensor at wrap time
    size_t bucket;
    Tensor grad_view;
    int hook_id;
  };

  void verify_same_structure();
  void broadcast_state();
  void build_buckets();
  void attach_grad_view(Slot& slot);
  void attach_grad_views();
  void install_hooks();
  void mark_ready(size_t slot);
  void launch_ready_buckets();
  void launch(size_t bucket);
  void wait_for_buckets();
  void corrupt_first_gradient();
  void check_previous_backward();
  void mark_unused_ready(const Variable& output);
  void reset_readiness();
  std::string local_structure_problem() const;

  std::shared_ptr<nn::Module> model_;
  std::shared_ptr<ProcessGroup> pg_;
  DDPOptions options_;
  std::vector<Slot> slots_;
  std::vector<DDPBucket> buckets_;
  std::vector<int64_t> pending_;  // per bucket: gradients not yet ready in this backward
  std::vector<bool> ready_;        // per slot, this backward
  std::vector<std::shared_ptr<Work>> works_;
  size_t next_launch_ = 0;  // buckets launch in order: all before this one are launched
  bool backward_started_ = false;
  bool sync_enabled_ = true;     // false inside no_sync()
  bool sync_this_backward_ = true;  // sync_enabled_ at the last forward
  int64_t forwards_ = 0;
  std::function<void(size_t)> launch_observer_;
  std::optional<GradientFault> pending_fault_;
  std::optional<GradientFault> active_fault_;  // the fault of the backward in progress
};

}  // namespace rg::parallel
