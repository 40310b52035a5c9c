// Elementwise CPU kernels: unary, binary (+ comparisons), where, clamp. Each op is a small
// lambda handed to a loop that has fast paths for the common layouts (all contiguous;
// one operand a broadcast scalar) which the compiler can vectorise.
#include <cmath>
#include <type_traits>

#include "tensor/cpu/cpu_backend.h"
#include "tensor/cpu/strided.h"

namespace rg::cpu {

namespace {

char* bytes(const Tensor& t) {
  return static_cast<char*>(t.raw_data());
}

template <class Out, class In, class F>
void apply_unary(const Tensor& src, const Tensor& dst, F f) {
  for_each_run<2>(dst.shape(), {&dst.strides(), &src.strides()}, {bytes(dst), bytes(src)},
                  {sizeof(Out), sizeof(In)}, [&](auto p, auto s, int64_t n) {
                    Out* out = reinterpret_cast<Out*>(p[0]);
                    const In* in = reinterpret_cast<const In*>(p[1]);
                    if (s[0] == 1 && s[1] == 1) {
                      for (int64_t i = 0; i < n; ++i) out[i] = f(in[i]);
                    } else {
                      for (int64_t i = 0; i < n; ++i) out[i * s[0]] = f(in[i * s[1]]);
                    }
                  });
}

// An input of a binary op: its bytes and its strides in elements.
struct Operand {
  char* data;
  const Shape* strides;
};

template <class Out, class In, class F>
void apply_binary(const Operand& a, const Operand& b, const Tensor& dst, F f) {
  for_each_run<3>(dst.shape(), {&dst.strides(), a.strides, b.strides}, {bytes(dst), a.data, b.data},
                  {sizeof(Out), sizeof(In), sizeof(In)}, [&](auto p, auto s, int64_t n) {
                    Out* out = reinterpret_cast<Out*>(p[0]);
                    const In* x = reinterpret_cast<const In*>(p[1]);
                    const In* y = reinterpret_cast<const In*>(p[2]);
                    if (s[0] == 1 && s[1] == 1 && s[2] == 1) {
                      for (int64_t i = 0; i < n; ++i) out[i] = f(x[i], y[i]);
                    } else if (s[0] == 1 && s[1] == 1 && s[2] == 0) {
                      const In yv = *y;
                      for (int64_t i = 0; i < n; ++i) out[i] = f(x[i], yv);
                    } else if (s[0] == 1 && s[1] == 0 && s[2] == 1) {
                      const In xv = *x;
                      for (int64_t i = 0; i < n; ++i) out[i] = f(xv, y[i]);
                    } else {
                      for (int64_t i = 0; i < n; ++i) out[i * s[0]] = f(x[i * s[1]], y[i * s[2]]);
                    }
                  });
}

template <class T>
void unary_typed(UnaryOp op, const Tensor& src, const Tensor& dst) {
  auto run = [&](auto f) { apply_unary<T, T>(src, dst, f); };
  switch (op) {
    case UnaryOp::neg: return run([](T x) { return static_cast<T>(-x); });
    case UnaryOp::exp: return run([](T x) { return static_cast<T>(std::exp(x)); });
    case UnaryOp::log: return run([](T x) { return static_cast<T>(std::log(x)); });
    case UnaryOp::sqrt: return run([](T x) { return static_cast<T>(std::sqrt(x)); });
    case UnaryOp::tanh: return run([](T x) { return static_cast<T>(std::tanh(x)); });
    case UnaryOp::sigmoid: return run([](T x) { return static_cast<T>(T(1) / (T(1) + std::exp(-x))); });
    case UnaryOp::relu: return run([](T x) { return x < T(0) ? T(0) : x; });  // keeps NaN, as PyTorch
    case UnaryOp::abs: return run([](T x) { return x < T(0) ? static_cast<T>(-x) : x; });
    case UnaryOp::sign: return run([](T x) { return static_cast<T>((T(0) < x) - (x < T(0))); });
    case UnaryOp::square: return run([](T x) { return static_cast<T>(x * x); });
    case UnaryOp::reciprocal: return run([](T x) { return static_cast<T>(T(1) / x); });
  }
}

// NaN-propagating max/min, as PyTorch's maximum/minimum.
template <class T>
T nan_max(T a, T b) {
  return (a != a || a > b) ? a : b;
}
template <class T>
T nan_min(T a, T b) {
  return (a != a || a < b) ? a : b;
}

template <class T>
void binary_typed(BinaryOp op, const Operand& a, const Operand& b, const Tensor& dst, double alpha) {
  auto run = [&](auto f) { apply_binary<T, T>(a, b, dst, f); };
  auto compare = [&](auto f) { apply_binary<uint8_t, T>(a, b, dst, f); };
  const T k = static_cast<T>(alpha);
  switch (op) {
    case BinaryOp::add:
      if (alpha == 1.0) return run([](T x, T y) { return static_cast<T>(x + y); });
      return run([k](T x, T y) { return static_cast<T>(x + k * y); });
    case BinaryOp::sub:
      if (alpha == 1.0) return run([](T x, T y) { return static_cast<T>(x - y); });
      return run([k](T x, T y) { return static_cast<T>(x - k * y); });
    case BinaryOp::mul: return run([](T x, T y) { return static_cast<T>(x * y); });
    case BinaryOp::div: return run([](T x, T y) { return static_cast<T>(x / y); });
    case BinaryOp::pow: return run([](T x, T y) { return static_cast<T>(std::pow(x, y)); });
    case BinaryOp::maximum: return run([](T x, T y) { return nan_max(x, y); });
    case BinaryOp::minimum: return run([](T x, T y) { return nan_min(x, y); });
    case BinaryOp::where_positive: return run([](T x, T y) { return y > T{0} ? x : T{0}; });
    case BinaryOp::eq: return compare([](T x, T y) { return uint8_t(x == y); });
    case BinaryOp::ne: return compare([](T x, T y) { return uint8_t(x != y); });
    case BinaryOp::lt: return compare([](T x, T y) { return uint8_t(x < y); });
    case BinaryOp::le: return compare([](T x, T y) { return uint8_t(x <= y); });
    case BinaryOp::gt: return compare([](T x, T y) { return uint8_t(x > y); });
    case BinaryOp::ge: return compare([](T x, T y) { return uint8_t(x >= y); });
  }
}

}  // namespace

void unary(UnaryOp op, const Tensor& src, const Tensor& dst) {
  dispatch(dst.dtype(), [&](auto tag) { unary_typed<decltype(tag)>(op, src, dst); });
}

void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& dst, double alpha) {
  dispatch(a.dtype(), [&](auto tag) {
    binary_typed<decltype(tag)>(op, {bytes(a), &a.strides()}, {bytes(b), &b.strides()}, dst, alpha);
  });
}

// The scalar is read as a stride-0 operand straight from the stack: the broadcast fast
// path of apply_binary runs, and nothing is allocated.
void binary_scalar(BinaryOp op, const Tensor& a, double scalar, const Tensor& dst) {
  dispatch(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T value = static_cast<T>(scalar);
    Shape zero_strides(a.dim(), 0);
    binary_typed<T>(op, {bytes(a), &a.strides()}, {reinterpret_cast<char*>(&value), &zero_strides}, dst, 1.0);
  });
}

void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& dst) {
  dispatch(dst.dtype(), [&](auto tag) {
    using T = decltype(tag);
    for_each_run<4>(dst.shape(), {&dst.strides(), &cond.strides(), &a.strides(), &b.strides()},
                    {bytes(dst), bytes(cond), bytes(a), bytes(b)},
                    {sizeof(T), 1, sizeof(T), sizeof(T)}, [](auto p, auto s, int64_t n) {
                      T* out = reinterpret_cast<T*>(p[0]);
                      const uint8_t* c = reinterpret_cast<const uint8_t*>(p[1]);
                      const T* x = reinterpret_cast<const T*>(p[2]);
                      const T* y = reinterpret_cast<const T*>(p[3]);
                      if (s[0] == 1 && s[1] == 1 && s[2] == 1 && s[3] == 0) {  // e.g. where(mask, g, 0)
                        // x[i] is read whatever c[i] says, so the select compiles to a
                        // vector blend rather than a branch that random masks mispredict.
                        const T yv = *y;
                        for (int64_t i = 0; i < n; ++i) {
                          const T xv = x[i];
                          out[i] = c[i] ? xv : yv;
                        }
                      } else {
                        for (int64_t i = 0; i < n; ++i) out[i * s[0]] = c[i * s[1]] ? x[i * s[2]] : y[i * s[3]];
                      }
                    });
  });
}

void clamp(const Tensor& src, const Tensor& dst, double low, double high) {
  dispatch(dst.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T lo = static_cast<T>(low), hi = static_cast<T>(high);
    apply_unary<T, T>(src, dst, [lo, hi](T x) { return nan_min(nan_max(x, lo), hi); });
  });
}

}  // namespace rg::cpu
