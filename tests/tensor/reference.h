// Helpers shared by the tensor tests: a naive strided reader, hand-made broadcasting, seeded inputs, checks.
#pragma once
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iomanip>
#include <random>
#include <source_location>
#include <vector>

#include "tensor/ops.h"
#include "tensor/thread_pool.h"

namespace ref {

using Index = std::vector<int64_t>;

// Number of elements of `shape`, counted by hand.
inline int64_t count(const rg::Shape& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

// t[idx], read straight from memory through t's strides and offset (CPU tensors only).
inline double at(const rg::Tensor& t, const Index& idx) {
  int64_t pos = 0;
  for (size_t d = 0; d < idx.size(); ++d) pos += idx[d] * t.strides()[d];
  return rg::dispatch(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return static_cast<double>(t.data<T>()[pos]);
  });
}

// Calls fn(idx) for every index of `shape`, in row-major order.
inline void for_each_index(const rg::Shape& shape, const std::function<void(const Index&)>& fn) {
  if (count(shape) == 0) return;
  Index idx(shape.size(), 0);
  for (;;) {
    fn(idx);
    int64_t d = static_cast<int64_t>(shape.size()) - 1;
    while (d >= 0 && ++idx[d] == shape[d]) idx[d--] = 0;
    if (d < 0) return;
  }
}

// Every element in row-major order, read through at().
inline std::vector<double> values(const rg::Tensor& t) {
  std::vector<double> out;
  for_each_index(t.shape(), [&](const Index& i) { out.push_back(at(t, i)); });
  return out;
}

// Row-major position of idx in a tensor of `shape`.
inline int64_t flat(const rg::Shape& shape, const Index& idx) {
  int64_t pos = 0;
  for (size_t d = 0; d < shape.size(); ++d) pos = pos * shape[d] + idx[d];
  return pos;
}

// NumPy broadcasting by hand: align trailing dims, a size-1 dim stretches.
inline rg::Shape broadcast_shape(const rg::Shape& a, const rg::Shape& b) {
  const size_t n = std::max(a.size(), b.size());
  rg::Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i + a.size() < n ? 1 : a[i + a.size() - n];
    const int64_t db = i + b.size() < n ? 1 : b[i + b.size() - n];
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// The index into an operand of shape `in` that broadcasting reads for output index out_idx.
inline Index broadcast_index(const Index& out_idx, const rg::Shape& in) {
  Index idx(in.size());
  const size_t lead = out_idx.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) idx[d] = in[d] == 1 ? 0 : out_idx[lead + d];
  return idx;
}

// A new contiguous CPU tensor of `dtype` holding `v` (static_cast to the element type).
inline rg::Tensor from_doubles(const std::vector<double>& v, const rg::Shape& shape,
                               rg::DType dtype = rg::DType::float32) {
  return rg::dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    std::vector<T> typed;
    for (double x : v) typed.push_back(static_cast<T>(x));
    return rg::Tensor::from_vector(typed, shape);
  });
}

// 0, 1, 2, ... in row-major order.
inline rg::Tensor iota(const rg::Shape& shape, rg::DType dtype = rg::DType::float32) {
  std::vector<double> v(count(shape));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  return from_doubles(v, shape, dtype);
}

// Uniform values in [low, high) from std::mt19937_64 (not the library's generator);
// integer dtypes get whole numbers.
inline rg::Tensor random_tensor(const rg::Shape& shape, uint64_t seed, rg::DType dtype = rg::DType::float32,
                                double low = -1.0, double high = 1.0) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(low, high);
  std::vector<double> v(count(shape));
  for (double& x : v) x = rg::is_floating(dtype) ? uniform(rng) : std::floor(uniform(rng));
  return from_doubles(v, shape, dtype);
}

// |actual - expected| <= atol + rtol * |expected|; NaN and infinities must match exactly.
inline bool close(double actual, double expected, double rtol, double atol) {
  if (std::isnan(expected)) return std::isnan(actual);
  if (std::isinf(expected)) return actual == expected;
  return std::fabs(actual - expected) <= atol + rtol * std::fabs(expected);
}

// Checks the shape, then every element, reporting the first one that differs and the caller's line.
inline void require_close(const rg::Tensor& actual, const rg::Shape& shape, const std::vector<double>& expected,
                          double rtol = 1e-6, double atol = 1e-6,
                          std::source_location caller = std::source_location::current()) {
  INFO("checked at " << caller.file_name() << ":" << caller.line());
  REQUIRE(actual.shape() == shape);
  const std::vector<double> got = values(actual);
  REQUIRE(got.size() == expected.size());
  size_t bad = 0;
  while (bad < got.size() && close(got[bad], expected[bad], rtol, atol)) ++bad;
  if (bad < got.size()) {
    INFO("element " << bad << ": got " << std::setprecision(10) << got[bad] << ", expected " << expected[bad]);
    REQUIRE(bad == got.size());
  }
}

// Restores the current pool's thread count when a test ends, even when it fails.
struct NumThreadsGuard {
  int saved = rg::get_num_threads();
  ~NumThreadsGuard() { rg::set_num_threads(saved); }
};

}  // namespace ref

// `expr` must throw an rg::Error whose message satisfies `matcher`, e.g. Catch::Contains("add").
#define REQUIRE_ERROR(expr, matcher)    \
  do {                                  \
    REQUIRE_THROWS_AS(expr, rg::Error); \
    REQUIRE_THROWS_WITH(expr, matcher); \
  } while (0)
