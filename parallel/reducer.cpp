// What the three reducers share: the default comm hook, launching a bucket through the
// hook with the observer told, and the wait for what was launched.
#include "parallel/reducer.h"

#include <optional>

#include "parallel/reducer_bucketed.h"
#include "tensor/ops.h"

namespace rg::parallel {

std::unique_ptr<Reducer> make_per_parameter_reducer(std::vector<NamedParameter> parameters,
                                                    std::shared_ptr<ProcessGroup> pg, CommHook hook);
std::unique_ptr<Reducer> make_flat_reducer(std::vector<NamedParameter> parameters, std::shared_ptr<ProcessGroup> pg,
                                           CommHook hook);

const char* reducer_name(ReducerKind kind) {
  switch (kind) {
    case ReducerKind::per_parameter: return "per_parameter";
    case ReducerKind::flat: return "flat";
    case ReducerKind::bucketed: return "bucketed";
  }
  return "?";
}

ReducerKind parse_reducer(const std::string& name) {
  for (ReducerKind kind : {ReducerKind::per_parameter, ReducerKind::flat, ReducerKind::bucketed})
    if (name == reducer_name(kind)) return kind;
  RG_THROW("unknown reducer '", name, "' (per_parameter, flat, bucketed)");
}

CommHook allreduce_hook(Algorithm algorithm) {
  return [algorithm](ProcessGroup& pg, const GradBucket& bucket) {
    // The ranks agreed on the whole step before its first bucket (DDP's agree()), and the
    // caller waits for the last bucket as soon as it is launched.
    return pg.all_reduce_async(bucket.flat, {.op = ReduceOp::avg, .algorithm = algorithm, .agreed = true,
                                             .waited_at_once = bucket.is_last});
  };
}

std::shared_ptr<Work> Reducer::launch(GradBucket bucket) {
  if (observer_) observer_->bucket_launched(bucket.index, bucket.flat.nbytes());
  bucket.is_last = bucket.index + 1 == launches_per_backward();
  // Backward ends waiting for the last one, which the default hook runs right here when the
  // communication thread is idle: a wait, not communication hidden behind backward.
  std::optional<ObservedSpan> waiting;
  if (bucket.is_last) waiting.emplace(observer_, "wait for all-reduce", "wait");
  return hook_(*pg_, bucket);
}

void Reducer::wait_for(std::vector<std::shared_ptr<Work>>& works) {
  auto pending = std::exchange(works, {});
  if (pending.empty()) return;
  ObservedSpan waiting(observer_, "wait for all-reduce", "wait");
  for (auto& work : pending) work->wait();
}

Tensor Reducer::gradient_of(size_t index) {
  Variable& p = parameters_[index].param;
  if (!p.grad().defined()) p.set_grad(zeros_like(p.data()));
  if (!p.grad().is_contiguous()) p.set_grad(p.grad().contiguous());  // so that it has a flat view
  return p.grad();
}

std::unique_ptr<Reducer> make_reducer(std::vector<NamedParameter> parameters, std::shared_ptr<ProcessGroup> pg,
                                      const ReducerOptions& options) {
  CommHook hook = allreduce_hook(options.algorithm);
  switch (options.kind) {
    case ReducerKind::per_parameter: return make_per_parameter_reducer(std::move(parameters), std::move(pg), hook);
    case ReducerKind::flat: return make_flat_reducer(std::move(parameters), std::move(pg), hook);
    case ReducerKind::bucketed:
      return std::make_unique<BucketedReducer>(std::move(parameters), std::move(pg), hook,
                                               BucketCaps::from_mb(options.first_bucket_mb, options.bucket_cap_mb));
  }
  RG_THROW("make_reducer: unknown reducer kind");
}

}  // namespace rg::parallel
