// Elementwise CUDA kernels: unary, binary (+ comparisons), where, clamp, for every dtype
// and any strides (broadcast inputs have stride 0). One kernel per dtype with the op as a
// runtime switch: the branch is the same for every thread, and it keeps compile time to
// a few dozen instantiations instead of ops x dtypes. Semantics mirror tensor/cpu/elementwise.cpp.
#include "tensor/cuda/cuda_common.cuh"
#include "tensor/cuda/cuda_ops.h"

namespace rg::cuda {
namespace {

// x < 0, spelled so that nvcc does not warn about uint8 never being negative.
template <class T>
__device__ bool is_negative(T x) {
  if constexpr (std::is_unsigned_v<T>) return false;
  else return x < T(0);
}

template <class T>
__device__ T apply_unary(UnaryOp op, T x) {
  using F = MathType<T>;
  switch (op) {
    case UnaryOp::neg: return static_cast<T>(-x);
    case UnaryOp::exp: return static_cast<T>(exp(static_cast<F>(x)));
    case UnaryOp::log: return static_cast<T>(log(static_cast<F>(x)));
    case UnaryOp::sqrt: return static_cast<T>(sqrt(static_cast<F>(x)));
    case UnaryOp::tanh: return static_cast<T>(tanh(static_cast<F>(x)));
    case UnaryOp::sigmoid: return static_cast<T>(F(1) / (F(1) + exp(static_cast<F>(-x))));
    case UnaryOp::relu: return is_negative(x) ? T(0) : x;  // keeps NaN
    case UnaryOp::abs: return is_negative(x) ? static_cast<T>(-x) : x;
    case UnaryOp::sign: return static_cast<T>((T(0) < x) - is_negative(x));
    case UnaryOp::square: return static_cast<T>(x * x);
    case UnaryOp::reciprocal: return static_cast<T>(T(1) / x);
  }
  return x;
}

template <class T>
__device__ T apply_arithmetic(BinaryOp op, T x, T y, T alpha) {
  using F = MathType<T>;
  switch (op) {
    case BinaryOp::add: return static_cast<T>(x + mul_rn(alpha, y));
    case BinaryOp::sub: return static_cast<T>(x - mul_rn(alpha, y));
    case BinaryOp::mul: return static_cast<T>(x * y);
    case BinaryOp::div: return static_cast<T>(x / y);
    case BinaryOp::pow: return static_cast<T>(pow(static_cast<F>(x), static_cast<F>(y)));
    case BinaryOp::maximum: return nan_max(x, y);
    case BinaryOp::minimum: return nan_min(x, y);
    case BinaryOp::where_positive: return y > T(0) ? x : T(0);
    default: return T(0);  // comparisons go to apply_comparison
  }
}

template <class T>
__device__ uint8_t apply_comparison(BinaryOp op, T x, T y) {
  switch (op) {
    case BinaryOp::eq: return x == y;
    case BinaryOp::ne: return x != y;
    case BinaryOp::lt: return x < y;
    case BinaryOp::le: return x <= y;
    case BinaryOp::gt: return x > y;
    case BinaryOp::ge: return x >= y;
    default: return 0;
  }
}

template <class T>
__global__ void unary_kernel(UnaryOp op, const T* src, T* dst, Indexer<2> ix, int64_t n) {
  RG_GRID_STRIDE_LOOP(i, n) {
    int64_t off[2];
    ix.offsets(i, off);
    dst[off[0]] = apply_unary(op, src[off[1]]);
  }
}

// b is a tensor, or (b == nullptr) the scalar `scalar` of binary_scalar.
template <class T, class Out>
__global__ void binary_kernel(BinaryOp op, const T* a, const T* b, T scalar, Out* dst, Indexer<3> ix, int64_t n,
                              T alpha) {
  RG_GRID_STRIDE_LOOP(i, n) {
    int64_t off[3];
    ix.offsets(i, off);
    const T y = b ? b[off[2]] : scalar;
    if constexpr (std::is_same_v<Out, T>) dst[off[0]] = apply_arithmetic(op, a[off[1]], y, alpha);
    else dst[off[0]] = apply_comparison(op, a[off[1]], y);
  }
}

template <class T>
__global__ void where_kernel(const uint8_t* cond, const T* a, const T* b, T* dst, Indexer<4> ix, int64_t n) {
  RG_GRID_STRIDE_LOOP(i, n) {
    int64_t off[4];
    ix.offsets(i, off);
    dst[off[0]] = cond[off[1]] ? a[off[2]] : b[off[3]];
  }
}

template <class T>
__global__ void clamp_kernel(const T* src, T* dst, Indexer<2> ix, int64_t n, T low, T high) {
  RG_GRID_STRIDE_LOOP(i, n) {
    int64_t off[2];
    ix.offsets(i, off);
    dst[off[0]] = nan_min(nan_max(src[off[1]], low), high);
  }
}

// a op b (b a tensor, or null with `scalar`), written to dst.
void launch_binary(BinaryOp op, const Tensor& a, const Tensor* b, double scalar, const Tensor& dst, double alpha) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  cudaStream_t stream = stream_for(dst.device().index);
  const Shape scalar_strides(dst.shape().size(), 0);
  const Indexer<3> ix = make_indexer<3>(dst.shape(), {&dst.strides(), &a.strides(), b ? &b->strides() : &scalar_strides});
  dispatch(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* b_data = b ? in_ptr<T>(*b) : nullptr;
    const T k = static_cast<T>(alpha), s = static_cast<T>(scalar);
    if (is_comparison(op))
      RG_CUDA_LAUNCH((binary_kernel<T, uint8_t>), n, stream, op, in_ptr<T>(a), b_data, s, out_ptr<uint8_t>(dst),
                     ix, n, k);
    else
      RG_CUDA_LAUNCH((binary_kernel<T, T>), n, stream, op, in_ptr<T>(a), b_data, s, out_ptr<T>(dst), ix, n, k);
  });
}

}  // namespace

void unary_tensor(UnaryOp op, const Tensor& src, const Tensor& dst) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  cudaStream_t stream = stream_for(dst.device().index);
  dispatch(dst.dtype(), [&](auto tag) {
    using T = decltype(tag);
    RG_CUDA_LAUNCH((unary_kernel<T>), n, stream, op, in_ptr<T>(src), out_ptr<T>(dst), indexer_of(dst, src), n);
  });
}

void binary_tensor(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& dst, double alpha) {
  launch_binary(op, a, &b, 0.0, dst, alpha);
}

void binary_scalar_tensor(BinaryOp op, const Tensor& a, double scalar, const Tensor& dst) {
  launch_binary(op, a, nullptr, scalar, dst, 1.0);
}

void where_tensor(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& dst) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  cudaStream_t stream = stream_for(dst.device().index);
  dispatch(dst.dtype(), [&](auto tag) {
    using T = decltype(tag);
    RG_CUDA_LAUNCH((where_kernel<T>), n, stream, in_ptr<uint8_t>(cond), in_ptr<T>(a), in_ptr<T>(b),
                   out_ptr<T>(dst), indexer_of(dst, cond, a, b), n);
  });
}

void clamp_tensor(const Tensor& src, const Tensor& dst, double low, double high) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  cudaStream_t stream = stream_for(dst.device().index);
  dispatch(dst.dtype(), [&](auto tag) {
    using T = decltype(tag);
    RG_CUDA_LAUNCH((clamp_kernel<T>), n, stream, in_ptr<T>(src), out_ptr<T>(dst), indexer_of(dst, src), n,
                   static_cast<T>(low), static_cast<T>(high));
  });
}

}  // namespace rg::cuda
