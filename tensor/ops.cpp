// The public tensor ops: argument checks, broadcasting, dtype rules and output
// allocation, then one Backend primitive (or a few, for composite ops). Nothing here
// touches device memory directly, so every op works on every device. Convolution and
// pooling are in ops_conv_pool.cpp, joining and indexing in ops_index.cpp.
#include "tensor/ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "tensor/op_checks.h"

namespace rg {

using namespace detail;

namespace {

// Float-only math on integer tensors computes in float32, as PyTorch does.
Tensor as_floating(const Tensor& x) { return is_floating(x.dtype()) ? x : x.to(DType::float32); }

Tensor unary(UnaryOp op, const Tensor& x) {
  check_defined(op_name(op), x);
  bool float_only = op == UnaryOp::exp || op == UnaryOp::log || op == UnaryOp::sqrt || op == UnaryOp::tanh ||
                    op == UnaryOp::sigmoid || op == UnaryOp::reciprocal;
  Tensor in = float_only ? as_floating(x) : x;
  Tensor out = Tensor::empty(in.shape(), in.dtype(), in.device());
  backend_for(in).unary(op, in, out);
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
  backend_for(in).reduce(op, in, out);
  return keepdim ? out : out.view(out_shape);
}

}  // namespace

// ---- creation ----

Tensor arange(double start, double end, double step, DType dtype, Device device) {
  RG_CHECK(step != 0 && std::isfinite(start) && std::isfinite(end) && std::isfinite(step),
           "arange: invalid range start=", start, " end=", end, " step=", step);
  RG_CHECK((end - start) * step >= 0, "arange: step ", step, " moves away from end (start=", start, ", end=", end, ")");
  const double count = std::ceil((end - start) / step);
  RG_CHECK(count < 0x1p62, "arange: ", count, " elements (start=", start, ", end=", end, ", step=", step,
           ") are too many");  // and the cast below is defined
  auto n = static_cast<int64_t>(count);
  Tensor out = Tensor::empty({n}, dtype, device);
  backend_for(out).arange(out, start, step);
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
  backend_for(t).random(t, kind, gen.seed(), offset, a, b);
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
  backend_for(x).unary(op, x.to(out.dtype()), out);
}

void binary_into(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out, double alpha) {
  const char* name = op_name(op);
  check_same_device(name, a, b);
  check_same_device(name, a, out);
  Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
  RG_CHECK(shape == out.shape(), name, ": the result of shapes ", shape_str(a.shape()), " and ", shape_str(b.shape()),
           " is ", shape_str(shape), " but the output has shape ", shape_str(out.shape()));
  DType compute = is_comparison(op) ? promote(a.dtype(), b.dtype()) : out.dtype();
  backend_for(a).binary(op, a.to(compute).expand(shape), b.to(compute).expand(shape), out, alpha);
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
  backend_for(a).where(cond.expand(shape), a.to(dtype).expand(shape), b.to(dtype).expand(shape), out);
  return out;
}

Tensor clamp(const Tensor& x, double low, double high) {
  check_defined("clamp", x);
  RG_CHECK(low <= high, "clamp: low ", low, " must not exceed high ", high);
  Tensor out = empty_like(x);
  backend_for(x).clamp(x, out, low, high);
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
  if (out.numel() > 0) backend_for(a).matmul(as_batched(left, m, k), as_batched(right, k, n), out);
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
  if (x.numel() > 0) backend_for(x).softmax(x, out, d, log);
  return out;
}

Tensor softmax(const Tensor& x, int64_t dim) { return softmax_impl(x, dim, false); }
Tensor log_softmax(const Tensor& x, int64_t dim) { return softmax_impl(x, dim, true); }

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
