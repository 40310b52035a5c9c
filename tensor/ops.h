// Tensor operations: the public, device-independent API. Each op checks its arguments
// (devices, dtypes, shapes, dims, index ranges), broadcasts, allocates the result and
// calls one Backend primitive; composite ops (cat, one_hot, max-pool backward, ...) are
// written once from primitives, in ops.cpp, ops_conv_pool.cpp and ops_index.cpp.
//
// Shape letters in the comments of tensor/ (autograd/functions.h adds its own):
//   B        batch: the samples, or the matrices of a batched matmul
//   C, H, W  channels, height and width of images: x (B, C, H, W)
//   O        output channels: a convolution's weight is (O, C, kh, kw)
//   kh, kw   kernel height and width
//   OH, OW   output height and width of a window sweep; L = OH*OW output positions
//   M, K, N  a matmul's (M, K) @ (K, N)
#pragma once
#include <optional>
#include <utility>
#include <vector>

#include "tensor/backend.h"
#include "tensor/generator.h"
#include "tensor/tensor.h"

namespace rg {

// ---- creation ----
Tensor arange(double start, double end, double step = 1.0, DType dtype = DType::float32, Device device = Device::cpu());
Tensor arange(int64_t end, DType dtype = DType::int64, Device device = Device::cpu());
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor empty_like(const Tensor& t);
Tensor full_like(const Tensor& t, double value);
// Uniform in [low, high), normal(mean, std), integers in [low, high): Philox streams
// (tensor/philox.h), identical on every device for a given generator state.
Tensor rand(const Shape& shape, Generator& gen, double low = 0.0, double high = 1.0, DType dtype = DType::float32,
            Device device = Device::cpu());
Tensor randn(const Shape& shape, Generator& gen, double mean = 0.0, double std = 1.0, DType dtype = DType::float32,
             Device device = Device::cpu());
Tensor randint(int64_t low, int64_t high, const Shape& shape, Generator& gen, DType dtype = DType::int64,
               Device device = Device::cpu());
void uniform_(const Tensor& t, Generator& gen, double low, double high);
void normal_(const Tensor& t, Generator& gen, double mean, double std);

// ---- elementwise, NumPy broadcasting; mixed dtypes promote (see promote()) ----
Tensor add(const Tensor& a, const Tensor& b, double alpha = 1.0);  // a + alpha*b
Tensor sub(const Tensor& a, const Tensor& b, double alpha = 1.0);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, double exponent);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor where_positive(const Tensor& a, const Tensor& b);  // a where b > 0, else 0 (ReLU's backward)
// Comparisons give uint8 tensors of 0/1.
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);  // cond: uint8, broadcast
Tensor clamp(const Tensor& x, double low, double high);
Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);
Tensor square(const Tensor& x);
Tensor reciprocal(const Tensor& x);
// The same computation into a given output (which may be one of the inputs).
void unary_into(UnaryOp op, const Tensor& x, const Tensor& out);
void binary_into(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out, double alpha = 1.0);

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(double a, const Tensor& b);

// ---- reductions over `dims` (empty = all dims) ----
Tensor sum(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor mean(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor max(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor min(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false);  // int64
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim = false);
// Sums x down to `shape` (the inverse of broadcasting x from `shape`): what a backward
// does to undo broadcasting.
Tensor sum_to(const Tensor& x, const Shape& shape);

// ---- linear algebra ----
// 1-d·1-d, 2-d @ 2-d, and batched (..., M, K) @ (..., K, N) with broadcast batch dims.
Tensor matmul(const Tensor& a, const Tensor& b);

// ---- softmax family ----
Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);

// ---- convolution and pooling (ops_conv_pool.cpp); x: (B, C, H, W) ----
struct Pool2dOptions {
  int64_t kernel_h, kernel_w;
  int64_t stride_h = 0, stride_w = 0;  // 0: same as the kernel
  int64_t pad_h = 0, pad_w = 0;
};
Tensor im2col(const Tensor& x, const Conv2dGeometry& g);  // (B, C*kh*kw, OH*OW)
Tensor col2im(const Tensor& cols, const Shape& x_shape, const Conv2dGeometry& g);
// y = conv(x, w) + bias: w (O, C, kh, kw), bias (O) or undefined; y (B, O, OH, OW).
Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dGeometry& g);
struct Conv2dGrads {
  Tensor x, weight, bias;  // each undefined unless asked for
};
Conv2dGrads conv2d_backward(const Tensor& x, const Tensor& w, const Tensor& grad_y, bool want_x, bool want_weight,
                            bool want_bias, const Conv2dGeometry& g);
// Returns (values, indices); indices are what max_pool2d_backward needs.
std::pair<Tensor, Tensor> max_pool2d(const Tensor& x, const Pool2dOptions& options);
Tensor max_pool2d_backward(const Tensor& grad_out, const Tensor& indices, const Shape& x_shape);
Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& options);
Tensor avg_pool2d_backward(const Tensor& grad_out, const Shape& x_shape, const Pool2dOptions& options);

// ---- joining, splitting, indexing (ops_index.cpp) ----
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim = 0);  // views; last may be smaller
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);      // views, as PyTorch
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);          // index: 1-d int64
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);                // out[i][j] = x[index[i][j]][j] (dim 0)
// In place: x[index[i][j]][j] += src[i][j] (dim 0); returns x.
const Tensor& scatter_add_(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor one_hot(const Tensor& labels, int64_t num_classes, DType dtype = DType::float32);

// ---- comparing ----
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8);
double max_abs_diff(const Tensor& a, const Tensor& b);

}  // namespace rg
