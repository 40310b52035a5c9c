// What the CPU convolution and pooling kernels share: the sizes of one image plane and its
// output, the run of output positions a kernel tap keeps inside the input, and a loop that
// spreads independent planes over the thread pool.
#pragma once
#include <algorithm>
#include <cstdint>

#include "tensor/backend.h"
#include "tensor/thread_pool.h"

namespace rg::cpu {

// Sizes of one input plane (h, w) and one output plane (oh, ow).
struct PlaneDims {
  int64_t h, w, oh, ow;
};

// x: (B, C, H, W).
inline PlaneDims plane_dims(const Tensor& x, const Conv2dGeometry& g) {
  int64_t h = x.size(2), w = x.size(3);
  return {h, w, g.out_size(h, g.kernel_h, g.stride_h, g.pad_h), g.out_size(w, g.kernel_w, g.stride_w, g.pad_w)};
}

struct Range {
  int64_t begin, end;
};

// The output positions o whose input coordinate o*stride - pad + offset falls inside
// [0, in_size): always one run, so the inner loops need no bounds checks.
inline Range valid_outputs(int64_t out_size, int64_t in_size, int64_t stride, int64_t pad, int64_t offset) {
  int64_t low = pad - offset, high = in_size - 1 + pad - offset;
  int64_t end = high < 0 ? 0 : std::min(out_size, high / stride + 1);
  int64_t begin = low <= 0 ? 0 : (low + stride - 1) / stride;
  return {std::min(begin, end), end};
}

// Runs fn(p) for every plane p in [0, planes), spread over the pool; planes never write to
// the same memory. Fewer visits than this per task cost more in fork-join than they save.
constexpr int64_t kGrainWork = 32768;

template <class Fn>
void for_each_plane(int64_t planes, int64_t work_per_plane, Fn fn) {
  int64_t grain = std::max<int64_t>(1, kGrainWork / std::max<int64_t>(1, work_per_plane));
  parallel_for(0, planes, grain, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) fn(p);
  });
}

}  // namespace rg::cpu
