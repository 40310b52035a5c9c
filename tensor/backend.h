// The device backend: the small set of primitives every device implements (the needle
// idea). Everything else — broadcasting, cat, one_hot, max-pool backward, ... — is
// composed from these in tensor/ops*.cpp, once for all devices. Shape letters as in
// tensor/ops.h.
//
// Contracts shared by all primitives:
//  - every tensor argument lives on this backend's device type; the ops (tensor/ops*.cpp)
//    have already checked devices, dtypes and shapes, so primitives only compute;
//  - inputs may have any strides (transposed, sliced, stride-0 broadcast views);
//  - outputs are written through their strides and never alias an input unless the
//    primitive says so (elementwise ops allow dst == input, element for element).
#pragma once
#include <cstddef>
#include <cstdint>

#include "tensor/caching_allocator.h"
#include "tensor/tensor.h"

namespace rg {

enum class UnaryOp { neg, exp, log, sqrt, tanh, sigmoid, relu, abs, sign, square, reciprocal };
// add/sub compute a + alpha*b; where_positive is a where b > 0, else 0 (one pass, and an
// infinite a where b <= 0 still gives 0, not a * 0 = NaN); comparisons write uint8 0/1.
enum class BinaryOp { add, sub, mul, div, pow, maximum, minimum, where_positive, eq, ne, lt, le, gt, ge };
// Reductions along the dims of one tensor (not parallel::ReduceOp, which combines one
// tensor across ranks).
enum class DimReduction { sum, mean, max, min, argmax, argmin };
enum class RandomKind { uniform, normal, randint };

const char* op_name(UnaryOp op);
const char* op_name(BinaryOp op);
const char* op_name(DimReduction op);
inline bool is_comparison(BinaryOp op) { return op >= BinaryOp::eq; }

struct Conv2dGeometry {  // shared by im2col/col2im and pooling
  int64_t kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w;
  int64_t out_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad) const {
    return (in + 2 * pad - kernel) / stride + 1;
  }
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;

  // ---- memory ----
  virtual void* allocate(size_t nbytes, int device_index) = 0;
  virtual void deallocate(void* ptr, size_t nbytes, int device_index) = 0;
  virtual void synchronize(int /*device_index*/) {}
  virtual AllocatorStats memory_stats(int device_index) = 0;
  virtual void empty_cache(int device_index) = 0;  // return cached free blocks to the system

  // ---- data movement ----
  // dst = cast(src): same shape, any dtypes and strides. Either tensor may be on the
  // host when this backend is not the CPU's (host<->device copies), or on another
  // device of the same type (peer copies).
  virtual void copy(const Tensor& src, const Tensor& dst) = 0;
  virtual void fill(const Tensor& dst, double value) = 0;
  virtual void arange(const Tensor& dst, double start, double step) = 0;  // dst contiguous, 1-d
  // Counter-based random fill: element i uses Philox words starting at `offset`
  // (see tensor/philox.h), so every device produces the same stream.
  virtual void random(const Tensor& dst, RandomKind kind, uint64_t seed, uint64_t offset, double a, double b) = 0;

  // ---- elementwise ----
  virtual void unary(UnaryOp op, const Tensor& src, const Tensor& dst) = 0;
  // a and b are already broadcast to dst's shape and converted to one dtype.
  virtual void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& dst, double alpha) = 0;
  // dst = op(a, scalar), the scalar on the right (e.g. x * 0.9 in an optimizer step).
  // The default wraps the scalar in a 0-d tensor; backends override it to skip that allocation.
  virtual void binary_scalar(BinaryOp op, const Tensor& a, double scalar, const Tensor& dst);
  virtual void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& dst) = 0;
  virtual void clamp(const Tensor& src, const Tensor& dst, double low, double high) = 0;

  // ---- reductions ----
  // dst has src's rank with size 1 in every reduced dim (keepdim form). For argmax and
  // argmin exactly one dim is reduced and dst is int64.
  virtual void reduce(DimReduction op, const Tensor& src, const Tensor& dst) = 0;
  // Softmax or log-softmax of src along `dim`, written to dst (same shape).
  virtual void softmax(const Tensor& src, const Tensor& dst, int64_t dim, bool log) = 0;

  // ---- linear algebra ----
  // out[b] = a[b] @ b[b]: a (B, M, K), b (B, K, N), out (B, M, N) contiguous.
  // a and b may have batch stride 0 (broadcast) and transposed last two dims.
  virtual void matmul(const Tensor& a, const Tensor& b, const Tensor& out) = 0;

  // ---- convolution and pooling helpers; x (B, C, H, W) contiguous ----
  // cols (B, C*kh*kw, OH*OW), row index c*kh*kw + i*kw + j, as PyTorch's unfold.
  virtual void im2col(const Tensor& x, const Tensor& cols, const Conv2dGeometry& g) = 0;
  virtual void col2im(const Tensor& cols, const Tensor& x, const Conv2dGeometry& g) = 0;  // x = sum of patches
  // y = conv(x, w) + bias: w (O, C, kh, kw), bias (O) or undefined, y (B, O, OH, OW); all
  // contiguous. The default is im2col + matmul on the whole batch; a backend overrides it
  // with a version that needs less memory traffic.
  virtual void conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y, const Conv2dGeometry& g);
  // The gradients of conv2d from grad_y (like y): each of grad_x (like x), grad_w (like w)
  // and grad_bias (O) that is defined is overwritten. Same default and contiguity as conv2d.
  virtual void conv2d_backward(const Tensor& x, const Tensor& w, const Tensor& grad_y, const Tensor& grad_x,
                               const Tensor& grad_w, const Tensor& grad_bias, const Conv2dGeometry& g);
  // out (B, C, OH, OW); indices int64, the argmax's flat position h*W + w in its input plane.
  virtual void max_pool2d(const Tensor& x, const Tensor& out, const Tensor& indices, const Conv2dGeometry& g) = 0;
  // Average over the window, padding counted (PyTorch's count_include_pad=true).
  virtual void avg_pool2d(const Tensor& x, const Tensor& out, const Conv2dGeometry& g) = 0;
  virtual void avg_pool2d_backward(const Tensor& grad_out, const Tensor& grad_in, const Conv2dGeometry& g) = 0;

  // ---- indexing; index tensors are int64 and already range-checked ----
  virtual void index_select(const Tensor& src, int64_t dim, const Tensor& index, const Tensor& dst) = 0;
  virtual void gather(const Tensor& src, int64_t dim, const Tensor& index, const Tensor& dst) = 0;
  // dst[..., index[i], ...] += src[..., i, ...] along dim (index has src's shape).
  virtual void scatter_add(const Tensor& dst, int64_t dim, const Tensor& index, const Tensor& src) = 0;
};

// The backend for a device type. The CUDA one is loaded on first use (see cuda_loader.cpp);
// asking for it in a build or on a machine without CUDA throws rg::Error.
Backend& backend_for(DeviceType type);
inline Backend& backend_for(const Tensor& t) { return backend_for(t.device().type); }

}  // namespace rg
