// arange and the Philox random fills on CUDA. Element i is a pure function of (seed,
// offset, i) computed with the same tensor/philox.h functions as the CPU backend, so the
// streams agree: float32 uniforms and randint bit for bit, the rest to a few ulps where
// the device libm differs (see philox.h).
#include <type_traits>

#include "tensor/cuda/cuda_common.cuh"
#include "tensor/cuda/cuda_ops.h"
#include "tensor/philox.h"

namespace rg::cuda {
namespace {

// dst contiguous, 1-d: start + i * step in double (no FMA, as the CPU), cast to T.
template <class T>
__global__ void arange_kernel(T* dst, int64_t n, double start, double step) {
  RG_GRID_STRIDE_LOOP(i, n) { dst[i] = static_cast<T>(philox::affine(static_cast<double>(i), step, start)); }
}

// The CPU's random_value (tensor/cpu/cpu_backend.cpp), word for word:
//   float uniform, randint: 1 word (offset + i); everything else: 2 words (offset + 2i).
template <class T>
__device__ T random_value(RandomKind kind, uint64_t seed, uint64_t offset, int64_t i, double a, double b) {
  using namespace philox;
  const uint64_t w = offset + static_cast<uint64_t>(i);
  const uint64_t w2 = offset + 2 * static_cast<uint64_t>(i);
  switch (kind) {
    case RandomKind::uniform:
      if constexpr (std::is_same_v<T, float>)
        return uniform_in(uniform_float(word(seed, w)), static_cast<float>(a), static_cast<float>(b));
      else
        return static_cast<T>(uniform_in(uniform_double(word(seed, w2), word(seed, w2 + 1)), a, b));
    case RandomKind::normal:
      return static_cast<T>(affine(normal_from(word(seed, w2), word(seed, w2 + 1)), b, a));
    case RandomKind::randint:
      return static_cast<T>(static_cast<int64_t>(a) + bounded(word(seed, w), static_cast<uint64_t>(b - a)));
  }
  return T{};
}

// dst contiguous.
template <class T>
__global__ void random_kernel(T* dst, int64_t n, RandomKind kind, uint64_t seed, uint64_t offset, double a, double b) {
  RG_GRID_STRIDE_LOOP(i, n) { dst[i] = random_value<T>(kind, seed, offset, i, a, b); }
}

}  // namespace

void arange_tensor(const Tensor& dst, double start, double step) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  dispatch(dst.dtype(), [&](auto tag) {
    using T = decltype(tag);
    RG_CUDA_LAUNCH(arange_kernel<T>, n, stream_for(dst.device().index), out_ptr<T>(dst), n, start, step);
  });
}

// Element i is numbered in row-major order, so a strided dst is filled through a dense
// scratch tensor, as on the CPU.
void random_tensor(const Tensor& dst, RandomKind kind, uint64_t seed, uint64_t offset, double a, double b) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  const Tensor out = dst.is_contiguous() ? dst : Tensor::empty(dst.shape(), dst.dtype(), dst.device());
  dispatch(dst.dtype(), [&](auto tag) {
    using T = decltype(tag);
    RG_CUDA_LAUNCH(random_kernel<T>, n, stream_for(dst.device().index), out_ptr<T>(out), n, kind, seed, offset, a, b);
  });
  if (!out.same_data(dst)) copy_tensor(out, dst);
}

}  // namespace rg::cuda
