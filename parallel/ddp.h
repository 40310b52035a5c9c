// DistributedDataParallel: one model replica per rank, kept identical by averaging the
// gradients in every backward (DESIGN.md section 6; claims C02, C03, C13, C14). The wrapper
// checks and broadcasts the model at construction, watches each parameter's gradient with
// an autograd hook and tells its Reducer (parallel/reducer.h), which decides when and how
// the gradients are all-reduced.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nn/module.h"
#include "parallel/process_group.h"
#include "parallel/reducer.h"

namespace rg::parallel {

struct DDPOptions {
  ReducerKind reducer = ReducerKind::bucketed;
  double bucket_cap_mb = 25;   // bucketed: later buckets hold up to this many MB of gradients
  double first_bucket_mb = 1;  // bucketed: the first bucket is small so its all-reduce starts early
  // Find the parameters a forward did not use (by walking its graph) and count them as
  // ready, so their buckets still complete. Off: such a parameter is an error, reported
  // at the next forward.
  bool find_unused_parameters = false;
  Algorithm algorithm = Algorithm::library;
  // Run check_consistency() every N forwards; 0: never, unless the group is in debug mode
  // (RINGGRAD_DISTRIBUTED_DEBUG=detail), which checks every forward.
  int64_t check_every = 0;
  // Broadcast the buffers (e.g. BatchNorm running statistics) from rank 0 before every
  // forward, as PyTorch does by default, so evaluation on any rank sees rank 0's.
  bool broadcast_buffers = true;
  // Broadcast rank 0's parameters and buffers at construction (PyTorch's init_sync). Off,
  // each rank keeps its own initial values: the replicas start different and stay
  // different (claim C03 shows the drift).
  bool init_sync = true;
  // Told of every bucket launch and wait, and of each backward's wait for every rank to
  // reach it (the step agreement, category "agree": where fast ranks wait for a straggler;
  // e.g. a TraceObserver); must outlive the wrapper.
  Observer* observer = nullptr;
};

// Wraps a model for data-parallel training over `pg`. Construction is a collective: it
// checks that every rank has the same parameters and buffers (names, shapes, dtypes), then
// broadcasts their values from rank 0 (unless init_sync is off).
//
// Before a backward's first all-reduce the ranks agree on the step number and the layout of
// what they will all-reduce (ProcessGroup::agree, one small exchange per step), so ranks that
// disagree, e.g. one that already stopped training, get a named error, and the step's own
// all-reduces need no check. The engine has no end-of-backward callback, so the hook of the
// last parameter to get its gradient ends the backward's communication: the reducer's finish_backward() waits for
// every all-reduce, and when loss.backward() returns every gradient is averaged, ready for
// the optimizer. Two backward passes through one forward are an error (as in PyTorch).
class DistributedDataParallel {
 public:
  DistributedDataParallel(std::shared_ptr<nn::Module> model, std::shared_ptr<ProcessGroup> pg,
                          const DDPOptions& options = {});
  ~DistributedDataParallel();
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  // model->forward(x), after checking that the previous backward synchronised everything
  // and that the model still holds the Variables wrapped.
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
  // an rg::Error naming the first parameter that is not, the ranks that differ, and the
  // step in which it happened (or the steps since the last check that passed; steps are
  // synchronising backward passes, counted from 1).
  void check_consistency();

  // A collective, before each epoch: every rank passes the number of batches it will run.
  // Different counts would leave the ranks with more batches waiting at an all-reduce the
  // others never join; this throws at once instead, naming the counts per rank.
  void check_even_inputs(int64_t batches);

  // How each bucket of gradients is averaged (PyTorch's register_comm_hook). The current
  // hook can be wrapped: ddp.register_comm_hook(injector.wrap(ddp.comm_hook())).
  void register_comm_hook(CommHook hook) { reducer_->set_comm_hook(std::move(hook)); }
  const CommHook& comm_hook() const { return reducer_->comm_hook(); }
  // Replaces DDPOptions::observer (null: none); call between steps.
  void set_observer(Observer* observer) { reducer_->set_observer(observer); }

  const Reducer& reducer() const { return *reducer_; }
  const std::shared_ptr<nn::Module>& module() const { return model_; }
  ProcessGroup& process_group() const { return *pg_; }

 private:
  void install_hooks();
  void gradient_ready(size_t index);
  void finish_backward();
  void check_previous_backward();
  std::vector<size_t> unused_parameters(const Variable& output) const;
  void reset_readiness();

  std::shared_ptr<nn::Module> model_;
  std::shared_ptr<ProcessGroup> pg_;
  DDPOptions options_;
  std::vector<NamedParameter> parameters_;  // the trainable ones, registration order
  std::vector<Tensor> wrapped_data_;         // their data at wrap time, to notice edits
  std::vector<int> hook_ids_;
  std::unique_ptr<Reducer> reducer_;
  std::vector<bool> ready_;       // per parameter, this backward
  size_t ready_count_ = 0;
  std::vector<size_t> unused_;    // found at forward; reported ready when backward begins
  int64_t layout_ = 0;            // a hash of what every step all-reduces, agreed on each step
  int64_t synchronised_steps_ = 0;
  int64_t last_identical_step_ = -1;  // when a check last found the replicas identical; 0: at construction
  bool backward_started_ = false;
  bool sync_enabled_ = true;        // false inside no_sync()
  bool sync_this_backward_ = true;  // sync_enabled_ at the last forward
  int64_t forwards_ = 0;
};

}  // namespace rg::parallel
