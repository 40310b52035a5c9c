// The public tensor ops: argument checks, broadcasting, dtype rules and output
// allocation, then one Backend primitive (or a few, for composite ops). Nothing here
// touches device memory directly, so every op works on every device.
#include "tensor/ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace rg {

namespace {

void check_defined(const char* op, const Tensor& t) { RG_CHECK(t.defined(), op, ": got an undefined tensor"); }

void check_same_device(const char* op, const Tensor& a, const Tensor& b) {
  check_defined(op, a);
  check_defined(op, b);
  RG_CHECK(a.device() == b.device(), op, ": tensors are on different devices, ", a.device().str(), " and ",
           b.device().str(), " (move one with .to(device))");
}

void check_floating(const char* op, const Tensor& t) {
  RG_CHECK(is_floating(t.dtype()), op, ": expects a float32 or float64 tensor, got ", dtype_name(t.dtype()),
           " with shape ", shape_str(t.shape()));
}

void check_index_dtype(const char* op, const Tensor& index) {
  RG_CHECK(index.dtype() == DType::int64, op, ": index tensor must be int64, got ", dtype_name(index.dtype()));
}

// Checks every index value is in [0, size) — on the host, since a bad index must be an
// error and not a wild memory access on any device.
void check_index_range(const char* op, const Tensor& index, int64_t size, int64_t dim) {
  if (index.numel() == 0) return;
  std::vector<int64_t> values = index.to_vector<int64_t>();
  auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  RG_CHECK(*lo >= 0 && *hi < size, op, ": index ", (*lo < 0 ? *lo : *hi), " is out of range for dim ", dim,
           " of size ", size);
}

Backend& backend_of(const Tensor& t) { return backend_for(t.device().type); }

// Float-only math on integer tensors computes in float32, as PyTorch does.
Tensor as_floating(const Tensor& x) { return is_floating(x.dtype()) ? x : x.to(DType::float32); }

Tensor unary(UnaryOp op, const Tensor& x) {
  check_defined(op_name(op), x);
  bool float_only = op == UnaryOp::exp || op == UnaryOp::log || op == UnaryOp::sqrt || op == UnaryOp::tanh ||
                    op == UnaryOp::sigmoid || op == UnaryOp::reciprocal;
  Tensor in = float_only ? as_floating(x) : x;
  Tensor out = Tensor::empty(in.shape(), in.dtype(), in.device());
  backend_of(in).unary(op, in, out);
  return out;
}

DType result_dtype(BinaryOp op, const Tensor& a, const Tensor& b) {
  if (is_comparison(op)) return DType::uint8;
  DType dtype = promote(a.dtype(), b.dtype());
  if ((op == BinaryOp::div || op == BinaryOp::pow) && !is_floating(dtype)) return DType::float32;
  return dtype;
}

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b, double alpha = 1.0) {
  check_same_device(op_name(op), a, b);
  Tensor out = Tensor::empty(broadcast_shapes(a.shape(), b.shape(), op_name(op)), result_dtype(op, a, b), a.device());
  binary_into(op, a, b, out, alpha);
  return out;
}

// A scalar operand takes the tensor's dtype, unless a fraction would be lost.
Tensor scalar_like(const Tensor& t, double value) {
  DType dtype = is_floating(t.dtype()) || value == std::floor(value) ? t.dtype() : DType::float32;
  return Tensor::scalar(value, dtype, t.device());
}

Tensor reduce(DimReduction op, const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  const char* name = op_name(op);
  check_defined(name, x);
  std::set<int64_t> reduced;
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, x.dim(), name);
    RG_CHECK(reduced.insert(w).second, name, ": dim ", d, " is listed twice");
  }
  if (dims.empty())
    for (int64_t d = 0; d < x.dim(); ++d) reduced.insert(d);
  Shape keep_shape = x.shape(), out_shape;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (reduced.count(d)) {
      RG_CHECK(x.shape()[d] > 0 || op == DimReduction::sum || op == DimReduction::mean, name,
               ": cannot reduce over dim ", d, " of size 0 (shape ", shape_str(x.shape()), ")");
      keep_shape[d] = 1;
    } else {
      out_shape.push_back(x.shape()[d]);
    }
  }
  DType dtype = x.dtype();
  if (op == DimReduction::argmax || op == DimReduction::argmin) dtype = DType::int64;
  if (op == DimReduction::sum && !is_floating(dtype)) dtype = DType::int64;
  // The kernels read and write one dtype (argmax/argmin aside): integer sums run in int64
  // (no uint8 overflow), means in floating point.
  Tensor in = op == DimReduction::mean ? as_floating(x) : op == DimReduction::sum ? x.to(dtype) : x;
  if (op == DimReduction::mean) dtype = in.dtype();
  Tensor out = Tensor::empty(keep_shape, dtype, x.device());
  backend_of(in).reduce(op, in, out);
  return keepdim ? out : out.view(out_shape);
}

}  // namespace

// ---- creation ----

Tensor arange(double start, double end, double step, DType dtype, Device device) {
  RG_CHECK(step != 0 && std::isfinite(start) && std::isfinite(end) && std::isfinite(step),
           "arange: invalid range start=", start, " end=", end, " step=", step);
  RG_CHECK((end - start) * step >= 0, "arange: step ", step, " moves away from end (start=", start, ", end=", end, ")");
  auto n = static_cast<int64_t>(std::ceil((end - start) / step));
  Tensor out = Tensor::empty({n}, dtype, device);
  backend_of(out).arange(out, start, step);
  return out;
}

Tensor arange(int64_t end, DType dtype, Device device) { return arange(0.0, static_cast<double>(end), 1.0, dtype, device); }
Tensor zeros_like(const Tensor& t) { return Tensor::zeros(t.shape(), t.dtype(), t.device()); }
Tensor ones_like(const Tensor& t) { return Tensor::ones(t.shape(), t.dtype(), t.device()); }
Tensor empty_like(const Tensor& t) { return Tensor::empty(t.shape(), t.dtype(), t.device()); }
Tensor full_like(const Tensor& t, double value) { return Tensor::full(t.shape(), value, t.dtype(), t.device()); }

// Random fills reserve their Philox words from the generator first: 1 word per element
// for float32 uniforms and integers, 2 for float64 uniforms and normals (philox.h).
static void random_fill(const Tensor& t, Generator& gen, RandomKind kind, double a, double b) {
  uint64_t words_per_element = kind == RandomKind::normal || (kind == RandomKind::uniform && t.dtype() == DType::float64) ? 2 : 1;
  uint64_t offset = gen.reserve(static_cast<uint64_t>(t.numel()) * words_per_element);
  backend_of(t).random(t, kind, gen.seed(), offset, a, b);
}

void uniform_(const Tensor& t, Generator& gen, double low, double high) {
  check_floating("uniform_", t);
  RG_CHECK(low <= high, "uniform_: low ", low, " must not exceed high ", high);
  random_fill(t, gen, RandomKind::uniform, low, high);
}

void normal_(const Tensor& t, Generator& gen, double mean, double std) {
  check_floating("normal_", t);
  RG_CHECK(std >= 0, "normal_: std ", std, " must be >= 0");
  random_fill(t, gen, RandomKind::normal, mean, std);
}

Tensor rand(const Shape& shape, Generator& gen, double low, double high, DType dtype, Device device) {
  Tensor t = Tensor::empty(shape, dtype, device);
  uniform_(t, gen, low, high);
  return t;
}

Tensor randn(const Shape& shape, Generator& gen, double mean, double std, DType dtype, Device device) {
  Tensor t = Tensor::empty(shape, dtype, device);
  normal_(t, gen, mean, std);
  return t;
}

Tensor randint(int64_t low, int64_t high, const Shape& shape, Generator& gen, DType dtype, Device device) {
  RG_CHECK(high > low && static_cast<uint64_t>(high - low) <= (uint64_t{1} << 32), "randint: need low < high and ",
           "high - low <= 2^32, got low=", low, ", high=", high);
  Tensor t = Tensor::empty(shape, dtype, device);
  random_fill(t, gen, RandomKind::randint, static_cast<double>(low), static_cast<double>(high));
  return t;
}

// ---- elementwise ----

void unary_into(UnaryOp op, const Tensor& x, const Tensor& out) {
  check_same_device(op_name(op), x, out);
  RG_CHECK(x.shape() == out.shape(), op_name(op), ": output shape ", shape_str(out.shape()), " differs from input ",
           shape_str(x.shape()));
  backend_of(x).unary(op, x.to(out.dtype()), out);
}

void binary_into(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out, double alpha) {
  const char* name = op_name(op);
  check_same_device(name, a, b);
  check_same_device(name, a, out);
  Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
  RG_CHECK(shape == out.shape(), name, ": the result of shapes ", shape_str(a.shape()), " and ", shape_str(b.shape()),
           " is ", shape_str(shape), " but the output has shape ", shape_str(out.shape()));
  DType compute = is_comparison(op) ? promote(a.dtype(), b.dtype()) : out.dtype();
  backend_of(a).binary(op, a.to(compute).expand(shape), b.to(compute).expand(shape), out, alpha);
}

Tensor add(const Tensor& a, const Tensor& b, double alpha) { return binary(BinaryOp::add, a, b, alpha); }
Tensor sub(const Tensor& a, const Tensor& b, double alpha) { return binary(BinaryOp::sub, a, b, alpha); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary(BinaryOp::mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary(BinaryOp::div, a, b); }
Tensor pow(const Tensor& a, const Tensor& b) { return binary(BinaryOp::pow, a, b); }
Tensor pow(const Tensor& a, double exponent) { return binary(BinaryOp::pow, a, scalar_like(a, exponent)); }
Tensor maximum(const Tensor& a, const Tensor& b) { return binary(BinaryOp::maximum, a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return binary(BinaryOp::minimum, a, b); }
Tensor where_positive(const Tensor& a, const Tensor& b) { return binary(BinaryOp::where_positive, a, b); }
Tensor eq(const Tensor& a, const Tensor& b) { return binary(BinaryOp::eq, a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return binary(BinaryOp::ne, a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return binary(BinaryOp::lt, a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return binary(BinaryOp::le, a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return binary(BinaryOp::gt, a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return binary(BinaryOp::ge, a, b); }

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  check_same_device("where", cond, a);
  check_same_device("where", a, b);
  RG_CHECK(cond.dtype() == DType::uint8, "where: condition must be uint8 (as comparisons return), got ",
           dtype_name(cond.dtype()));
  Shape shape = broadcast_shapes(broadcast_shapes(cond.shape(), a.shape(), "where"), b.shape(), "where");
  DType dtype = promote(a.dtype(), b.dtype());
  Tensor out = Tensor::empty(shape, dtype, a.device());
  backend_of(a).where(cond.expand(shape), a.to(dtype).expand(shape), b.to(dtype).expand(shape), out);
  return out;
}

Tensor clamp(const Tensor& x, double low, double high) {
  check_defined("clamp", x);
  RG_CHECK(low <= high, "clamp: low ", low, " must not exceed high ", high);
  Tensor out = empty_like(x);
  backend_of(x).clamp(x, out, low, high);
  return out;
}

Tensor neg(const Tensor& x) { return unary(UnaryOp::neg, x); }
Tensor exp(const Tensor& x) { return unary(UnaryOp::exp, x); }
Tensor log(const Tensor& x) { return unary(UnaryOp::log, x); }
Tensor sqrt(const Tensor& x) { return unary(UnaryOp::sqrt, x); }
Tensor tanh(const Tensor& x) { return unary(UnaryOp::tanh, x); }
Tensor sigmoid(const Tensor& x) { return unary(UnaryOp::sigmoid, x); }
Tensor relu(const Tensor& x) { return unary(UnaryOp::relu, x); }
Tensor abs(const Tensor& x) { return unary(UnaryOp::abs, x); }
Tensor sign(const Tensor& x) { return unary(UnaryOp::sign, x); }
Tensor square(const Tensor& x) { return unary(UnaryOp::square, x); }
Tensor reciprocal(const Tensor& x) { return unary(UnaryOp::reciprocal, x); }

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator-(const Tensor& a) { return neg(a); }
Tensor operator+(const Tensor& a, double b) { return add(a, scalar_like(a, b)); }
Tensor operator-(const Tensor& a, double b) { return sub(a, scalar_like(a, b)); }
Tensor operator*(const Tensor& a, double b) { return mul(a, scalar_like(a, b)); }
Tensor operator/(const Tensor& a, double b) { return div(a, scalar_like(a, b)); }
Tensor operator+(double a, const Tensor& b) { return add(scalar_like(b, a), b); }
Tensor operator-(double a, const Tensor& b) { return sub(scalar_like(b, a), b); }
Tensor operator*(double a, const Tensor& b) { return mul(scalar_like(b, a), b); }
Tensor operator/(double a, const Tensor& b) { return div(scalar_like(b, a), b); }

// ---- reductions ----

Tensor sum(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return reduce(DimReduction::sum, x, dims, keepdim);
}
Tensor mean(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return reduce(DimReduction::mean, x, dims, keepdim);
}
Tensor max(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return reduce(DimReduction::max, x, dims, keepdim);
}
Tensor min(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return reduce(DimReduction::min, x, dims, keepdim);
}
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim) { return reduce(DimReduction::argmax, x, {dim}, keepdim); }
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim) { return reduce(DimReduction::argmin, x, {dim}, keepdim); }

Tensor sum_to(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  RG_CHECK(broadcast_shapes(x.shape(), shape, "sum_to") == x.shape(), "sum_to: shape ", shape_str(x.shape()),
           " is not a broadcast of ", shape_str(shape));
  std::vector<int64_t> dims;
  int64_t lead = x.dim() - static_cast<int64_t>(shape.size());
  for (int64_t d = 0; d < x.dim(); ++d)
    if (d < lead || (shape[d - lead] == 1 && x.shape()[d] != 1)) dims.push_back(d);
  return sum(x, dims, true).reshape(shape);
}

// ---- linear algebra ----

Tensor matmul(const Tensor& a, const Tensor& b) {
  check_same_device("matmul", a, b);
  RG_CHECK(a.dim() >= 1 && b.dim() >= 1, "matmul: both operands need at least 1 dim, got shapes ",
           shape_str(a.shape()), " and ", shape_str(b.shape()));
  // Vectors become matrices ((K) -> (1, K) on the left, (K, 1) on the right) and the
  // added dim is removed from the result, as in NumPy.
  Tensor left = a.dim() == 1 ? a.unsqueeze(0) : a;
  Tensor right = b.dim() == 1 ? b.unsqueeze(1) : b;
  int64_t m = left.size(-2), k = left.size(-1), n = right.size(-1);
  RG_CHECK(right.size(-2) == k, "matmul: inner dimensions differ: ", shape_str(a.shape()), " @ ",
           shape_str(b.shape()), " (", k, " vs ", right.size(-2), ")");
  Shape left_batch(left.shape().begin(), left.shape().end() - 2);
  Shape right_batch(right.shape().begin(), right.shape().end() - 2);
  Shape batch;
  try {
    batch = broadcast_shapes(left_batch, right_batch, "matmul");
  } catch (const Error&) {
    RG_THROW("matmul: batch dims of ", shape_str(a.shape()), " and ", shape_str(b.shape()),
             " cannot be broadcast (", shape_str(left_batch), " vs ", shape_str(right_batch), ")");
  }
  int64_t batch_count = numel_of(batch);
  DType dtype = promote(a.dtype(), b.dtype());
  auto as_batched = [&](const Tensor& t, int64_t rows, int64_t cols) {
    Shape full = batch;
    full.push_back(rows);
    full.push_back(cols);
    return t.to(dtype).expand(full).reshape({batch_count, rows, cols});
  };
  Tensor out = Tensor::empty({batch_count, m, n}, dtype, a.device());
  if (m * n > 0) backend_of(a).matmul(as_batched(left, m, k), as_batched(right, k, n), out);
  Shape out_shape = batch;
  if (a.dim() > 1) out_shape.push_back(m);
  if (b.dim() > 1) out_shape.push_back(n);
  return out.view(out_shape);
}

// ---- softmax family ----

static Tensor softmax_impl(const Tensor& x, int64_t dim, bool log) {
  const char* name = log ? "log_softmax" : "softmax";
  check_defined(name, x);
  check_floating(name, x);
  int64_t d = wrap_dim(dim, x.dim(), name);
  Tensor out = empty_like(x);
  if (x.numel() > 0) backend_of(x).softmax(x, out, d, log);
  return out;
}

Tensor softmax(const Tensor& x, int64_t dim) { return softmax_impl(x, dim, false); }
Tensor log_softmax(const Tensor& x, int64_t dim) { return softmax_impl(x, dim, true); }

// ---- convolution and pooling ----

static void check_image_batch(const char* op, const Tensor& x) {
  check_defined(op, x);
  RG_CHECK(x.dim() == 4, op, ": expects (N, C, H, W), got shape ", shape_str(x.shape()));
  check_floating(op, x);
}

static Conv2dGeometry pool_geometry(const Pool2dOptions& o) {
  return {o.kernel_h, o.kernel_w, o.stride_h ? o.stride_h : o.kernel_h, o.stride_w ? o.stride_w : o.kernel_w, o.pad_h,
          o.pad_w};
}

// Output (OH, OW) of a window sweep, with the checks every conv/pool op needs.
static std::pair<int64_t, int64_t> output_size(const char* op, const Shape& x, const Conv2dGeometry& g) {
  RG_CHECK(g.kernel_h > 0 && g.kernel_w > 0 && g.stride_h > 0 && g.stride_w > 0 && g.pad_h >= 0 && g.pad_w >= 0, op,
           ": kernel ", g.kernel_h, "x", g.kernel_w, ", stride ", g.stride_h, "x", g.stride_w, ", padding ", g.pad_h,
           "x", g.pad_w, " are not valid");
  int64_t oh = g.out_size(x[2], g.kernel_h, g.stride_h, g.pad_h), ow = g.out_size(x[3], g.kernel_w, g.stride_w, g.pad_w);
  RG_CHECK(oh > 0 && ow > 0 && x[2] + 2 * g.pad_h >= g.kernel_h && x[3] + 2 * g.pad_w >= g.kernel_w, op, ": kernel ",
           g.kernel_h, "x", g.kernel_w, " does not fit input ", shape_str(x), " with padding ", g.pad_h, "x", g.pad_w);
  return {oh, ow};
}

Tensor im2col(const Tensor& x, const Conv2dGeometry& g) {
  check_image_batch("im2col", x);
  auto [oh, ow] = output_size("im2col", x.shape(), g);
  Tensor cols = Tensor::empty({x.size(0), x.size(1) * g.kernel_h * g.kernel_w, oh * ow}, x.dtype(), x.device());
  backend_of(x).im2col(x.contiguous(), cols, g);
  return cols;
}

Tensor col2im(const Tensor& cols, const Shape& x_shape, const Conv2dGeometry& g) {
  check_defined("col2im", cols);
  RG_CHECK(x_shape.size() == 4, "col2im: image shape must be (N, C, H, W), got ", shape_str(x_shape));
  auto [oh, ow] = output_size("col2im", x_shape, g);
  Shape expected = {x_shape[0], x_shape[1] * g.kernel_h * g.kernel_w, oh * ow};
  RG_CHECK(cols.shape() == expected, "col2im: columns of shape ", shape_str(cols.shape()), " do not match image ",
           shape_str(x_shape), " (expected ", shape_str(expected), ")");
  Tensor x = Tensor::empty(x_shape, cols.dtype(), cols.device());
  backend_of(cols).col2im(cols.contiguous(), x, g);
  return x;
}

static Shape conv2d_output_shape(const char* op, const Tensor& x, const Tensor& w, const Tensor& bias,
                                 const Conv2dGeometry& g) {
  check_image_batch(op, x);
  check_same_device(op, x, w);
  RG_CHECK(w.dim() == 4 && w.size(1) == x.size(1) && w.dtype() == x.dtype(), op, ": input ", shape_str(x.shape()), " ",
           dtype_name(x.dtype()), " (N, C, H, W) does not match weight ", shape_str(w.shape()), " ",
           dtype_name(w.dtype()), " (O, C, kh, kw)");
  RG_CHECK(w.size(2) == g.kernel_h && w.size(3) == g.kernel_w, op, ": weight ", shape_str(w.shape()),
           " does not match the kernel size ", g.kernel_h, "x", g.kernel_w);
  RG_CHECK(!bias.defined() || (bias.shape() == Shape{w.size(0)} && bias.dtype() == x.dtype() &&
                               bias.device() == x.device()),
           op, ": bias ", bias.defined() ? shape_str(bias.shape()) : "", " must be (", w.size(0), ") like the weight");
  auto [oh, ow] = output_size(op, x.shape(), g);
  return {x.size(0), w.size(0), oh, ow};
}

Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dGeometry& g) {
  Shape shape = conv2d_output_shape("conv2d", x, w, bias, g);
  Tensor y = Tensor::empty(shape, x.dtype(), x.device());
  backend_of(x).conv2d(x.contiguous(), w.contiguous(), bias.defined() ? bias.contiguous() : bias, y, g);
  return y;
}

Conv2dGrads conv2d_backward(const Tensor& x, const Tensor& w, const Tensor& grad_y, bool want_x, bool want_weight,
                            bool want_bias, const Conv2dGeometry& g) {
  Shape shape = conv2d_output_shape("conv2d_backward", x, w, Tensor(), g);
  check_same_device("conv2d_backward", x, grad_y);
  RG_CHECK(grad_y.shape() == shape && grad_y.dtype() == x.dtype(), "conv2d_backward: gradient ",
           shape_str(grad_y.shape()), " does not match the output ", shape_str(shape));
  auto maybe_empty = [&](bool wanted, const Shape& s) { return wanted ? Tensor::empty(s, x.dtype(), x.device()) : Tensor(); };
  Conv2dGrads grads{maybe_empty(want_x, x.shape()), maybe_empty(want_weight, w.shape()),
                    maybe_empty(want_bias, {w.size(0)})};
  if (want_x || want_weight || want_bias)
    backend_of(x).conv2d_backward(x.contiguous(), w.contiguous(), grad_y.contiguous(), grads.x, grads.weight,
                                  grads.bias, g);
  return grads;
}

std::pair<Tensor, Tensor> max_pool2d(const Tensor& x, const Pool2dOptions& options) {
  check_image_batch("max_pool2d", x);
  Conv2dGeometry g = pool_geometry(options);
  RG_CHECK(g.pad_h * 2 <= g.kernel_h && g.pad_w * 2 <= g.kernel_w, "max_pool2d: padding ", g.pad_h, "x", g.pad_w,
           " must be at most half the kernel ", g.kernel_h, "x", g.kernel_w);
  auto [oh, ow] = output_size("max_pool2d", x.shape(), g);
  Tensor out = Tensor::empty({x.size(0), x.size(1), oh, ow}, x.dtype(), x.device());
  Tensor indices = Tensor::empty(out.shape(), DType::int64, x.device());
  backend_of(x).max_pool2d(x.contiguous(), out, indices, g);
  return {out, indices};
}

Tensor max_pool2d_backward(const Tensor& grad_out, const Tensor& indices, const Shape& x_shape) {
  check_same_device("max_pool2d_backward", grad_out, indices);
  RG_CHECK(grad_out.shape() == indices.shape() && x_shape.size() == 4, "max_pool2d_backward: gradient ",
           shape_str(grad_out.shape()), " and indices ", shape_str(indices.shape()), " must match");
  // Each output's gradient goes back to the input position that won the max.
  int64_t planes = x_shape[0] * x_shape[1];
  Tensor grad_in = Tensor::zeros({planes, x_shape[2] * x_shape[3]}, grad_out.dtype(), grad_out.device());
  backend_of(grad_out).scatter_add(grad_in, 1, indices.contiguous().view({planes, -1}),
                                   grad_out.contiguous().view({planes, -1}));
  return grad_in.view(x_shape);
}

Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& options) {
  check_image_batch("avg_pool2d", x);
  Conv2dGeometry g = pool_geometry(options);
  auto [oh, ow] = output_size("avg_pool2d", x.shape(), g);
  Tensor out = Tensor::empty({x.size(0), x.size(1), oh, ow}, x.dtype(), x.device());
  backend_of(x).avg_pool2d(x.contiguous(), out, g);
  return out;
}

Tensor avg_pool2d_backward(const Tensor& grad_out, const Shape& x_shape, const Pool2dOptions& options) {
  check_defined("avg_pool2d_backward", grad_out);
  Conv2dGeometry g = pool_geometry(options);
  auto [oh, ow] = output_size("avg_pool2d_backward", x_shape, g);
  Shape expected = {x_shape[0], x_shape[1], oh, ow};
  RG_CHECK(grad_out.shape() == expected, "avg_pool2d_backward: gradient ", shape_str(grad_out.shape()),
           " does not match the pooled shape ", shape_str(expected));
  Tensor grad_in = Tensor::empty(x_shape, grad_out.dtype(), grad_out.device());
  backend_of(grad_out).avg_pool2d_backward(grad_out.contiguous(), grad_in, g);
  return grad_in;
}

// ---- joining, splitting, indexing ----

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  RG_CHECK(!tensors.empty(), "cat: needs at least one tensor");
  const Tensor& first = tensors[0];
  check_defined("cat", first);
  int64_t d = wrap_dim(dim, first.dim(), "cat");
  Shape shape = first.shape();
  DType dtype = first.dtype();
  shape[d] = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    check_same_device("cat", first, t);
    RG_CHECK(t.dim() == first.dim(), "cat: tensor ", i, " has shape ", shape_str(t.shape()), " but tensor 0 has ",
             shape_str(first.shape()), " (ranks differ)");
    for (int64_t k = 0; k < t.dim(); ++k)
      RG_CHECK(k == d || t.shape()[k] == first.shape()[k], "cat: tensor ", i, " has shape ", shape_str(t.shape()),
               ", tensor 0 has ", shape_str(first.shape()), ": sizes must match except in dim ", d);
    shape[d] += t.shape()[d];
    dtype = promote(dtype, t.dtype());
  }
  Tensor out = Tensor::empty(shape, dtype, first.device());
  int64_t start = 0;
  for (const Tensor& t : tensors) {
    out.narrow(d, start, t.shape()[d]).copy_(t);
    start += t.shape()[d];
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  RG_CHECK(!tensors.empty(), "stack: needs at least one tensor");
  int64_t d = wrap_dim(dim, tensors[0].dim() + 1, "stack");
  std::vector<Tensor> expanded;
  for (size_t i = 0; i < tensors.size(); ++i) {
    RG_CHECK(tensors[i].shape() == tensors[0].shape(), "stack: tensor ", i, " has shape ",
             shape_str(tensors[i].shape()), " but tensor 0 has ", shape_str(tensors[0].shape()));
    expanded.push_back(tensors[i].unsqueeze(d));
  }
  return cat(expanded, d);
}

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim) {
  check_defined("split", x);
  RG_CHECK(split_size > 0, "split: split_size must be positive, got ", split_size);
  int64_t d = wrap_dim(dim, x.dim(), "split");
  std::vector<Tensor> parts;
  for (int64_t start = 0; start < x.size(d); start += split_size)
    parts.push_back(x.narrow(d, start, std::min(split_size, x.size(d) - start)));
  return parts;
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim) {
  check_defined("chunk", x);
  RG_CHECK(chunks > 0, "chunk: number of chunks must be positive, got ", chunks);
  int64_t d = wrap_dim(dim, x.dim(), "chunk");
  return split(x, std::max<int64_t>(1, (x.size(d) + chunks - 1) / chunks), d);
}

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  check_same_device("index_select", x, index);
  check_index_dtype("index_select", index);
  RG_CHECK(index.dim() == 1, "index_select: index must be 1-d, got shape ", shape_str(index.shape()));
  int64_t d = wrap_dim(dim, x.dim(), "index_select");
  check_index_range("index_select", index, x.size(d), d);
  Shape shape = x.shape();
  shape[d] = index.numel();
  Tensor out = Tensor::empty(shape, x.dtype(), x.device());
  if (out.numel() > 0) backend_of(x).index_select(x, d, index, out);
  return out;
}

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  check_same_device("gather", x, index);
  check_index_dtype("gather", index);
  int64_t d = wrap_dim(dim, x.dim(), "gather");
  RG_CHECK(index.dim() == x.dim(), "gather: index ", shape_str(index.shape()), " and input ", shape_str(x.shape()),
           " must have the same number of dims");
  for (int64_t k = 0; k < x.dim(); ++k)
    RG_CHECK(k == d || index.shape()[k] <= x.shape()[k], "gather: index ", shape_str(index.shape()),
             " is larger than input ", shape_str(x.shape()), " in dim ", k);
  check_index_range("gather", index, x.size(d), d);
  Tensor out = Tensor::empty(index.shape(), x.dtype(), x.device());
  if (out.numel() > 0) backend_of(x).gather(x, d, index, out);
  return out;
}

const Tensor& scatter_add_(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  check_same_device("scatter_add_", x, index);
  check_same_device("scatter_add_", x, src);
  check_index_dtype("scatter_add_", index);
  int64_t d = wrap_dim(dim, x.dim(), "scatter_add_");
  RG_CHECK(index.shape() == src.shape() && index.dim() == x.dim(), "scatter_add_: index ", shape_str(index.shape()),
           " and source ", shape_str(src.shape()), " must have the same shape and the rank of ", shape_str(x.shape()));
  for (int64_t k = 0; k < x.dim(); ++k)
    RG_CHECK(k == d || index.shape()[k] <= x.shape()[k], "scatter_add_: index ", shape_str(index.shape()),
             " is larger than ", shape_str(x.shape()), " in dim ", k);
  check_index_range("scatter_add_", index, x.size(d), d);
  if (index.numel() > 0) backend_of(x).scatter_add(x, d, index, src.to(x.dtype()));
  return x;
}

Tensor one_hot(const Tensor& labels, int64_t num_classes, DType dtype) {
  check_defined("one_hot", labels);
  check_index_dtype("one_hot", labels);
  RG_CHECK(num_classes > 0, "one_hot: num_classes must be positive, got ", num_classes);
  check_index_range("one_hot", labels, num_classes, labels.dim());
  Shape shape = labels.shape();
  shape.push_back(num_classes);
  Tensor out = Tensor::zeros(shape, dtype, labels.device());
  Tensor index = labels.unsqueeze(-1);
  scatter_add_(out, -1, index, Tensor::ones(index.shape(), dtype, labels.device()));
  return out;
}

// ---- comparing ----

double max_abs_diff(const Tensor& a, const Tensor& b) {
  RG_CHECK(a.shape() == b.shape(), "max_abs_diff: shapes differ, ", shape_str(a.shape()), " vs ", shape_str(b.shape()));
  std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    double d = std::fabs(x[i] - y[i]);
    if (std::isnan(d)) return std::numeric_limits<double>::infinity();
    worst = std::max(worst, d);
  }
  return worst;
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol) {
  if (a.shape() != b.shape()) return false;
  std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i)
    if (!(std::fabs(x[i] - y[i]) <= atol + rtol * std::fabs(y[i]))) return false;
  return true;
}

}  // namespace rg
