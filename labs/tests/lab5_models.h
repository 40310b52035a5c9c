// Lab 5's helpers: variables of chosen sizes for plan_buckets, and an observer that counts
// the all-reduces a process group runs and the buckets a reducer launches.
#pragma once
#include <mutex>
#include <string>
#include <vector>

#include "parallel/observer.h"
#include "autograd/variable.h"

namespace rg::labs {

// One 1-d parameter per entry of `numels`, in registration order.
inline std::vector<Variable> parameters_of(const std::vector<int64_t>& numels, DType dtype = DType::float32) {
  std::vector<Variable> out;
  for (int64_t n : numels) out.emplace_back(Tensor::zeros({n}, dtype), true);
  return out;
}

struct CollectiveCount : parallel::Observer {
  void op_finished(const parallel::OpRecord& op) override {
    std::lock_guard lock(mutex);
    if (op.label.rfind("all_reduce", 0) == 0) ++all_reduces;
  }
  void bucket_launched(size_t bucket, uint64_t) override {
    std::lock_guard lock(mutex);
    launched.push_back(bucket);
  }
  std::mutex mutex;
  int all_reduces = 0;
  std::vector<size_t> launched;
};

}  // namespace rg::labs
