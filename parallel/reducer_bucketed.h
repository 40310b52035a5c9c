// Stepping stone 3, DistributedDataParallel's default reducer (PyTorch's; Li et al., VLDB
// 2020, section 3.2.3): the gradients live in a few flat buckets, in the order backward
// produces them, and each bucket is all-reduced as soon as its last gradient is ready, from
// inside backward. So the all-reduce of the last layers' gradients travels while the first
// layers' are still being computed: communication overlaps computation.
#pragma once
#include <cstddef>
#include <vector>

#include "parallel/reducer.h"

namespace rg::parallel {

struct BucketCaps {
  size_t first_bytes = size_t{1} << 20;  // bucket 0: small, so that its all-reduce starts early
  size_t later_bytes = size_t{25} << 20;
  static BucketCaps from_mb(double first_mb, double later_mb);
};

// The bucket plan. Parameters are taken in reverse registration order (the order backward
// produces their gradients in: the last layer's first), and consecutive ones share a bucket
// while they have the same dtype and device and the bucket's bytes stay within its cap
// (caps.first_bytes for bucket 0, caps.later_bytes for the others). A parameter larger than
// the cap has a bucket of its own. Returns, for each bucket in launch order, the indices
// (registration order) of its parameters in the order they sit in the bucket.
std::vector<std::vector<size_t>> plan_buckets(const std::vector<Variable>& parameters, const BucketCaps& caps);

class BucketedReducer : public Reducer {
 public:
  struct Bucket {
    Tensor flat;                     // the gradients, back to back
    std::vector<size_t> parameters;  // indices (registration order), as in plan_buckets
  };

  // Each parameter's grad becomes a view into its bucket, so the engine accumulates
  // straight into the buffer that is all-reduced (PyTorch's gradient_as_bucket_view):
  // nothing is copied before or after the all-reduce.
  BucketedReducer(std::vector<NamedParameter> parameters, std::shared_ptr<ProcessGroup> pg, CommHook hook,
                  const BucketCaps& caps);
  ~BucketedReducer() override;

  void prepare_for_forward() override;
  void gradient_ready(size_t index) override;
  void finish_backward() override;
  void reset() override;
  size_t launches_per_backward() const override { return buckets_.size(); }

  const std::vector<Bucket>& buckets() const { return buckets_; }
  const std::vector<NamedParameter>& parameters() const { return parameters_; }

 private:
  void attach_grad_view(size_t index);
  void launch_full_buckets();

  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_;      // by parameter
  std::vector<Tensor> view_of_;        // by parameter: its slice of its bucket
  std::vector<int64_t> pending_;       // by bucket: gradients not yet ready in this backward
  size_t next_launch_ = 0;             // buckets launch in order: all before this one are launched
  std::vector<std::shared_ptr<Work>> works_;
};

}  // namespace rg::parallel
