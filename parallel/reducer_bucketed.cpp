// The bucketed reducer: the plan, the buckets as the gradients' storage, and the launch of
// each bucket from the gradient-ready hooks, strictly in bucket order, so that every rank
// issues the same sequence of collectives whatever order its gradients became ready in.
#include "parallel/reducer_bucketed.h"

#include <algorithm>
#include <cmath>

namespace rg::parallel {

BucketCaps BucketCaps::from_mb(double first_mb, double later_mb) {
  RG_CHECK(first_mb > 0 && later_mb > 0 && std::isfinite(first_mb) && std::isfinite(later_mb),
           "bucket sizes must be positive, got first_bucket_mb = ", first_mb, " and bucket_cap_mb = ", later_mb);
  constexpr double kBytesPerMb = 1024.0 * 1024.0;
  return {static_cast<size_t>(first_mb * kBytesPerMb), static_cast<size_t>(later_mb * kBytesPerMb)};
}

// BEGIN SOLUTION lab5.plan_buckets
std::vector<std::vector<size_t>> plan_buckets(const std::vector<Variable>& parameters, const BucketCaps& caps) {
  std::vector<std::vector<size_t>> plan;
  size_t bucket_bytes = 0;
  for (size_t i = parameters.size(); i-- > 0;) {
    const Variable& p = parameters[i];
    const size_t bytes = p.data().nbytes();
    const size_t cap = plan.size() <= 1 ? caps.first_bytes : caps.later_bytes;
    const bool fits = !plan.empty() && parameters[plan.back().front()].dtype() == p.dtype() &&
                      parameters[plan.back().front()].device() == p.device() && bucket_bytes + bytes <= cap;
    if (!fits) {
      plan.emplace_back();
      bucket_bytes = 0;
    }
    plan.back().push_back(i);
    bucket_bytes += bytes;
  }
  return plan;
}
// END SOLUTION

BucketedReducer::BucketedReducer(std::vector<NamedParameter> parameters, std::shared_ptr<ProcessGroup> pg,
                                 CommHook hook, const BucketCaps& caps)
    : Reducer(std::move(parameters), std::move(pg), std::move(hook)),
      bucket_of_(parameters_.size()),
      view_of_(parameters_.size()) {
  std::vector<Variable> variables;
  for (const auto& p : parameters_) variables.push_back(p.param);
  for (const std::vector<size_t>& members : plan_buckets(variables, caps)) {
    const Variable& first = variables[members.front()];
    int64_t numel = 0;
    for (size_t i : members) numel += variables[i].numel();
    Bucket bucket{Tensor::zeros({numel}, first.dtype(), first.device()), members};
    int64_t offset = 0;
    for (size_t i : members) {
      bucket_of_[i] = buckets_.size();
      view_of_[i] = bucket.flat.narrow(0, offset, variables[i].numel()).view(variables[i].shape());
      offset += variables[i].numel();
    }
    buckets_.push_back(std::move(bucket));
  }
  prepare_for_forward();
  reset();
}

BucketedReducer::~BucketedReducer() {
  // A destructor must not throw; a failed all-reduce has already marked the group broken,
  // so its next op reports the error.
  try {
    wait_for(works_);
  } catch (const Error&) {
  }
}

// Points the grad at its bucket slice, keeping any gradient already accumulated. Needed
// again after zero_grad(set_to_none) or a grad assigned by hand.
void BucketedReducer::attach_grad_view(size_t index) {
  Variable& p = parameters_[index].param;
  const Tensor& view = view_of_[index];
  const Tensor& grad = p.grad();
  if (grad.defined() && grad.same_data(view)) return;
  if (grad.defined())
    view.copy_(grad);
  else
    view.zero_();
  p.set_grad(view);
}

void BucketedReducer::prepare_for_forward() {
  for (size_t i = 0; i < parameters_.size(); ++i) attach_grad_view(i);
}

// Parameter `index`'s gradient is final: its bucket has one gradient fewer to wait for, and
// when none is left, the full buckets are launched (launch_full_buckets).
// BEGIN SOLUTION lab5.bucketed_gradient_ready
void BucketedReducer::gradient_ready(size_t index) {
  // A grad dropped between forward and backward (zero_grad(true)) makes the engine
  // allocate a fresh one outside the bucket: move it in before the bucket is reduced.
  attach_grad_view(index);
  if (--pending_[bucket_of_[index]] == 0) launch_full_buckets();
}
// END SOLUTION

// Launches, in bucket order, every bucket whose gradients are all ready (pending_ is 0),
// starting at next_launch_: a bucket that fills early waits for the ones before it, so all
// ranks launch the same sequence. Each launch hands launch() a GradBucket {its index, its
// flat buffer, its parameters' views} and keeps the Work in works_.
// BEGIN SOLUTION lab5.launch_full_buckets
void BucketedReducer::launch_full_buckets() {
  while (next_launch_ < buckets_.size() && pending_[next_launch_] == 0) {
    const Bucket& bucket = buckets_[next_launch_];
    std::vector<Tensor> gradients;
    for (size_t i : bucket.parameters) gradients.push_back(view_of_[i]);
    works_.push_back(launch({next_launch_, bucket.flat, gradients}));
    ++next_launch_;
  }
}
// END SOLUTION

void BucketedReducer::finish_backward() {
  RG_CHECK(next_launch_ == buckets_.size(), "BucketedReducer: backward finished with ",
           buckets_.size() - next_launch_, " bucket(s) not launched");
  wait_for(works_);
  reset();
}

void BucketedReducer::reset() {
  wait_for(works_);
  pending_.assign(buckets_.size(), 0);
  for (size_t b : bucket_of_) ++pending_[b];
  next_launch_ = 0;
}

}  // namespace rg::parallel
