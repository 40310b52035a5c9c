// Reducer: the part of DistributedDataParallel that decides when and how the gradients are
// averaged across ranks (PyTorch's DDP Reducer, Li et al., "PyTorch Distributed:
// Experiences on Accelerating Data Parallel Training", VLDB 2020; flashlight's Reducer).
// DDP tells it two things: parameter i's gradient is final (from the autograd hook that
// fires when a leaf's gradient is complete), and every gradient is final (backward is over).
//
// Three implementations, the stepping stones from a student's first version to PyTorch's:
//   per_parameter  reducer_per_parameter.cpp  after backward, one all-reduce per parameter
//   flat           reducer_flat.cpp           after backward, one all-reduce of all the
//                                             gradients packed together (fewer, larger messages)
//   bucketed       reducer_bucketed.cpp       gradients in buckets, each all-reduced from the
//                                             hooks as soon as it is full, so communication
//                                             overlaps the rest of backward (DDP's default)
// All three average the same numbers; only the order of floating-point sums, the number of
// messages and the overlap differ.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "autograd/variable.h"
#include "parallel/observer.h"
#include "parallel/process_group.h"

namespace rg::parallel {

enum class ReducerKind { per_parameter, flat, bucketed };
const char* reducer_name(ReducerKind kind);
ReducerKind parse_reducer(const std::string& name);  // "per_parameter", "flat", "bucketed"

// A parameter DDP synchronises: its name (for messages) and the Variable.
struct NamedParameter {
  std::string name;
  Variable param;
};

// One all-reduce's worth of gradients (PyTorch's GradBucket): `flat` holds them back to
// back and is reduced in place; `gradients` are the parameters' gradients in it, as views
// of `flat` or as the tensors to copy it back into.
struct GradBucket {
  size_t index = 0;  // launch order within one backward: bucket 0 goes first
  Tensor flat;
  std::vector<Tensor> gradients;
  // The last launch of this backward, which the caller waits for as soon as it is launched
  // (PyTorch's GradBucket.is_last()). Set by Reducer::launch.
  bool is_last = false;
};

// How a bucket is averaged: starts the op and returns its Work (PyTorch's comm hook). The
// default is an averaging all_reduce_async, marked agreed because DDP has the ranks agree on
// each step before its first bucket, and waited_at_once for the last bucket; a hook may wrap
// it, as fault injection does (parallel/fault.h).
using CommHook = std::function<std::shared_ptr<Work>(ProcessGroup& pg, const GradBucket& bucket)>;
CommHook allreduce_hook(Algorithm algorithm);

class Reducer {
 public:
  virtual ~Reducer() = default;
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  // Before every forward, synchronising or not (gradients of a no_sync backward accumulate
  // where the next synchronising one finds them).
  virtual void prepare_for_forward() {}
  // Parameter `index` (registration order) has its final gradient for this backward.
  virtual void gradient_ready(size_t index) = 0;
  // Every parameter's gradient is final: when this returns, each holds the average over
  // the ranks. An undefined gradient counts as zeros.
  virtual void finish_backward() = 0;
  // Forgets a backward that did not finish, once the all-reduces it launched are done.
  virtual void reset() = 0;

  // How many buckets one backward launches: the one with index launches - 1 is its last.
  virtual size_t launches_per_backward() const = 0;

  void set_comm_hook(CommHook hook) { hook_ = std::move(hook); }
  const CommHook& comm_hook() const { return hook_; }
  void set_observer(Observer* observer) { observer_ = observer; }
  Observer* observer() const { return observer_; }

 protected:
  Reducer(std::vector<NamedParameter> parameters, std::shared_ptr<ProcessGroup> pg, CommHook hook)
      : parameters_(std::move(parameters)), pg_(std::move(pg)), hook_(std::move(hook)) {}

  // Hands `bucket` to the comm hook, marked is_last if it is, and reports the launch.
  std::shared_ptr<Work> launch(GradBucket bucket);
  // Waits for `works` (reported as one "wait for all-reduce" span) and clears it.
  void wait_for(std::vector<std::shared_ptr<Work>>& works);
  // The parameter's gradient, contiguous, created as zeros when it has none.
  Tensor gradient_of(size_t index);

  std::vector<NamedParameter> parameters_;
  std::shared_ptr<ProcessGroup> pg_;
  CommHook hook_;
  Observer* observer_ = nullptr;
};

struct ReducerOptions {
  ReducerKind kind = ReducerKind::bucketed;
  Algorithm algorithm = Algorithm::library;
  double bucket_cap_mb = 25;   // bucketed: later buckets hold up to this many MB of gradients
  double first_bucket_mb = 1;  // bucketed: the first bucket is small, so its all-reduce starts early
};

// `parameters` in registration order, each Variable once.
std::unique_ptr<Reducer> make_reducer(std::vector<NamedParameter> parameters, std::shared_ptr<ProcessGroup> pg,
                                      const ReducerOptions& options);

}  // namespace rg::parallel
