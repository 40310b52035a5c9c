// Reductions (sum/mean/max/min, argmax/argmin, sum_to) and softmax/log_softmax against naive loops.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "reference.h"

using namespace rg;
using ref::at;
using ref::random_tensor;
using ref::values;
using Values = std::vector<double>;
using Dims = std::vector<int64_t>;

namespace {

enum class Kind { sum, mean, max, min };

// Reduces x over `dims` (empty: all) by hand; returns the expected shape and values.
std::pair<Shape, Values> reduce_ref(const Tensor& x, Kind kind, Dims dims, bool keepdim) {
  const int64_t n = x.dim();
  std::vector<bool> reduced(n, dims.empty());
  for (int64_t d : dims) reduced[d < 0 ? d + n : d] = true;
  Shape kept = x.shape(), shape;
  for (int64_t d = 0; d < n; ++d) {
    if (reduced[d]) kept[d] = 1;
    if (!reduced[d] || keepdim) shape.push_back(kept[d]);
  }
  const double init = kind == Kind::max ? -INFINITY : kind == Kind::min ? INFINITY : 0.0;
  Values acc(ref::count(kept), init);
  ref::for_each_index(x.shape(), [&](const ref::Index& i) {
    double& a = acc[ref::flat(kept, ref::broadcast_index(i, kept))];
    const double v = at(x, i);
    a = kind == Kind::max ? std::max(a, v) : kind == Kind::min ? std::min(a, v) : a + v;
  });
  if (kind == Kind::mean)
    for (double& a : acc) a /= static_cast<double>(x.numel() / ref::count(kept));
  return {shape, acc};
}

Tensor run(Kind kind, const Tensor& x, const Dims& dims, bool keepdim) {
  switch (kind) {
    case Kind::sum: return sum(x, dims, keepdim);
    case Kind::mean: return mean(x, dims, keepdim);
    case Kind::max: return max(x, dims, keepdim);
    case Kind::min: return min(x, dims, keepdim);
  }
  return {};
}

// argmax/argmin along one dim by hand, first occurrence on ties.
std::pair<Shape, Values> arg_ref(const Tensor& x, int64_t dim, bool is_max, bool keepdim) {
  dim = dim < 0 ? dim + x.dim() : dim;
  Shape kept = x.shape(), shape;
  kept[dim] = 1;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (d != dim || keepdim) shape.push_back(kept[d]);
  Values out;
  ref::for_each_index(kept, [&](ref::Index i) {
    int64_t best = 0;
    double best_value = at(x, i);
    for (i[dim] = 1; i[dim] < x.size(dim); ++i[dim]) {
      const double v = at(x, i);
      if (is_max ? v > best_value : v < best_value) best = i[dim], best_value = v;
    }
    out.push_back(static_cast<double>(best));
  });
  return {shape, out};
}

// softmax (or log_softmax) along `dim` in double, shifted by the max for stability.
Values softmax_ref(const Tensor& x, int64_t dim, bool log) {
  dim = dim < 0 ? dim + x.dim() : dim;
  Values out(x.numel());
  Shape rows = x.shape();
  rows[dim] = 1;
  ref::for_each_index(rows, [&](ref::Index i) {
    double top = -INFINITY, total = 0;
    for (i[dim] = 0; i[dim] < x.size(dim); ++i[dim]) top = std::max(top, at(x, i));
    for (i[dim] = 0; i[dim] < x.size(dim); ++i[dim]) total += std::exp(at(x, i) - top);
    for (i[dim] = 0; i[dim] < x.size(dim); ++i[dim]) {
      const double shifted = at(x, i) - top;
      out[ref::flat(x.shape(), i)] = log ? shifted - std::log(total) : std::exp(shifted) / total;
    }
  });
  return out;
}

}  // namespace

TEST_CASE("tensor.reductions", "[tensor]") {
  const std::vector<std::pair<const char*, Kind>> kinds = {
      {"sum", Kind::sum}, {"mean", Kind::mean}, {"max", Kind::max}, {"min", Kind::min}};
  const std::vector<Dims> dim_sets = {{}, {0}, {1}, {2}, {-1}, {0, 2}, {-3, -1}, {1, 0}, {0, 1, 2}};
  for (DType dtype : {DType::float32, DType::float64}) {
    const Tensor base = random_tensor({6, 5, 8}, 1, dtype);
    const std::vector<std::pair<const char*, Tensor>> inputs = {
        {"contiguous", base.narrow(0, 0, 2).narrow(1, 0, 3).narrow(2, 0, 4).contiguous()},
        {"permuted", base.narrow(0, 0, 4).narrow(1, 0, 2).narrow(2, 0, 3).permute({2, 0, 1})},
        {"sliced step 2", base.slice(0, 0, 6, 3).slice(1, 1, 5, 2).slice(2, 0, 8, 2)},
        {"expanded", base.narrow(0, 0, 1).narrow(1, 0, 3).narrow(2, 0, 4).expand({2, 3, 4})},
    };
    const double tol = dtype == DType::float32 ? 1e-6 : 1e-14;
    for (const auto& [input_name, x] : inputs) {
      for (const auto& [kind_name, kind] : kinds) {
        for (const Dims& dims : dim_sets) {
          for (bool keepdim : {false, true}) {
            INFO(kind_name << " on " << dtype_name(dtype) << " " << input_name << ", dims "
                           << Catch::Detail::stringify(dims) << ", keepdim " << keepdim);
            const Tensor out = run(kind, x, dims, keepdim);
            REQUIRE(out.dtype() == dtype);
            const auto [shape, expected] = reduce_ref(x, kind, dims, keepdim);
            ref::require_close(out, shape, expected, tol, tol);
          }
        }
      }
    }
  }
}

TEST_CASE("tensor.reductions_int_and_empty", "[tensor]") {
  Tensor i = Tensor::from_vector(std::vector<int64_t>{4, -9, 7, 3000000000, 1, 0}, {2, 3});
  REQUIRE(sum(i).dtype() == DType::int64);
  REQUIRE(sum(i).item() == 3000000003.0);
  REQUIRE(values(sum(i, {0})) == Values{3000000004.0, -8, 7});
  REQUIRE(values(max(i, {1})) == Values{7, 3000000000.0});
  Tensor j = Tensor::from_vector(std::vector<int32_t>{4, -9, 7, 3, 1, 0}, {2, 3}).t();
  REQUIRE(min(j, {1}).dtype() == DType::int32);
  REQUIRE(values(min(j, {1})) == Values{3, -9, 0});

  Tensor empty = Tensor::zeros({0, 3});
  REQUIRE(sum(empty, {0}).shape() == Shape{3});
  REQUIRE(values(sum(empty, {0})) == Values{0, 0, 0});
  REQUIRE(sum(empty).item() == 0);
}

TEST_CASE("tensor.argmax_argmin", "[tensor]") {
  const Tensor x = Tensor::from_vector(std::vector<float>{1, 3, 3, 0, -1,  //
                                                          2, 2, 2, 1, -1,  //
                                                          0, 5, 0, 5, 0},
                                       {3, 5});
  REQUIRE(argmax(x, 1).dtype() == DType::int64);
  REQUIRE(argmax(x, 1).to_vector<int64_t>() == std::vector<int64_t>{1, 0, 1});  // first of the ties
  REQUIRE(argmin(x, 1).to_vector<int64_t>() == std::vector<int64_t>{4, 4, 0});
  REQUIRE(argmax(x, 0).to_vector<int64_t>() == std::vector<int64_t>{1, 2, 0, 2, 2});
  REQUIRE(argmin(x, 0).to_vector<int64_t>() == std::vector<int64_t>{2, 1, 2, 0, 0});
  REQUIRE(argmax(x, -1, true).shape() == Shape{3, 1});

  const Tensor r = random_tensor({4, 5, 6}, 2, DType::float32).permute({1, 2, 0}).slice(1, 0, 6, 2);
  for (int64_t dim : {0, 1, 2, -1}) {
    for (bool keepdim : {false, true}) {
      INFO("dim " << dim << ", keepdim " << keepdim);
      const auto [max_shape, max_index] = arg_ref(r, dim, true, keepdim);
      ref::require_close(argmax(r, dim, keepdim), max_shape, max_index, 0, 0);
      const auto [min_shape, min_index] = arg_ref(r, dim, false, keepdim);
      ref::require_close(argmin(r, dim, keepdim), min_shape, min_index, 0, 0);
    }
  }
}

TEST_CASE("tensor.sum_to_undoes_broadcasting", "[tensor]") {
  const Tensor x = random_tensor({2, 3, 4}, 3, DType::float64);
  for (const Shape& target : std::vector<Shape>{{3, 1}, {4}, {}, {1, 3, 4}, {2, 1, 1}, {2, 3, 4}}) {
    INFO("target " << Catch::Detail::stringify(target));
    Values expected(ref::count(target), 0.0);
    ref::for_each_index(x.shape(), [&](const ref::Index& i) {
      expected[ref::flat(target, ref::broadcast_index(i, target))] += at(x, i);
    });
    ref::require_close(sum_to(x, target), target, expected, 1e-14, 1e-14);
  }
  ref::require_close(sum_to(x.transpose(0, 2), {4, 1, 1}), {4, 1, 1},
                     reduce_ref(x, Kind::sum, {0, 1}, false).second, 1e-14, 1e-14);
}

TEST_CASE("tensor.softmax_and_log_softmax", "[tensor]") {
  for (DType dtype : {DType::float32, DType::float64}) {
    const double tol = dtype == DType::float32 ? 1e-6 : 1e-14;
    const Tensor small = random_tensor({3, 4, 5}, 4, dtype, -3, 3);
    const Tensor large = random_tensor({3, 4, 5}, 5, dtype, 990, 1010);  // exp would overflow unshifted
    const Tensor permuted = random_tensor({5, 3, 4}, 6, dtype, -3, 3).permute({1, 2, 0});
    for (const auto& [name, x] : std::vector<std::pair<const char*, Tensor>>{
             {"small", small}, {"large", large}, {"permuted", permuted}}) {
      for (int64_t dim : {0, 1, 2, -1}) {
        INFO(name << " " << dtype_name(dtype) << ", dim " << dim);
        ref::require_close(softmax(x, dim), {3, 4, 5}, softmax_ref(x, dim, false), tol, tol);
        ref::require_close(log_softmax(x, dim), {3, 4, 5}, softmax_ref(x, dim, true), tol, 10 * tol);
      }
    }
  }
  const Tensor spread = Tensor::from_vector(std::vector<float>{1000, 0, -1000}, {3});
  REQUIRE(values(softmax(spread, 0)) == Values{1, 0, 0});
  REQUIRE(values(log_softmax(spread, 0)) == Values{0, -1000, -2000});
}

TEST_CASE("tensor.float32_sum_of_a_million_is_accurate", "[tensor]") {
  const Tensor x = random_tensor({1000, 1000}, 7, DType::float32, 0, 1);
  double exact = 0;
  for (double v : values(x)) exact += v;
  REQUIRE(std::fabs(sum(x).item() - exact) <= 1e-6 * exact);
  REQUIRE(std::fabs(sum(x.t()).item() - exact) <= 1e-6 * exact);
  REQUIRE(std::fabs(mean(x).item() - exact / 1e6) <= 1e-6 * exact / 1e6);
  REQUIRE(std::fabs(sum(x.view({-1}), {0}).item() - exact) <= 1e-6 * exact);
}

TEST_CASE("tensor.large_reductions_on_1_and_2_threads", "[tensor]") {
  ref::NumThreadsGuard guard;
  const Tensor x = random_tensor({1000, 1000}, 8, DType::float32, -1, 1);
  const Tensor xt = x.t();
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    INFO(threads << " threads");
    for (const Tensor& input : {x, xt}) {
      for (int64_t dim : {0, 1}) {
        ref::require_close(sum(input, {dim}), {1000}, reduce_ref(input, Kind::sum, {dim}, false).second, 1e-5, 1e-5);
        ref::require_close(max(input, {dim}, true), dim == 0 ? Shape{1, 1000} : Shape{1000, 1},
                           reduce_ref(input, Kind::max, {dim}, true).second, 0, 0);
        const auto [shape, index] = arg_ref(input, dim, false, false);
        ref::require_close(argmin(input, dim), shape, index, 0, 0);
      }
      ref::require_close(softmax(input, 1), {1000, 1000}, softmax_ref(input, 1, false), 1e-6, 1e-7);
    }
  }
}

// Reducing leading dims of a contiguous tensor takes the column-sum path: size-1 dims in
// between, several accumulator blocks (700 columns), integers, and a split over threads.
TEST_CASE("tensor.sum_and_mean_over_leading_dims", "[tensor]") {
  ref::NumThreadsGuard guard;
  for (DType dtype : {DType::float32, DType::float64, DType::int64}) {
    const Tensor x = random_tensor({3, 1, 5, 2, 700}, 9, dtype, -10, 10);
    for (int threads : {1, 2}) {
      set_num_threads(threads);
      INFO(dtype_name(dtype) << ", " << threads << " threads");
      for (const Dims& dims : {Dims{0}, Dims{0, 1, 2}, Dims{0, 2}}) {
        const auto [shape, expected] = reduce_ref(x, Kind::sum, dims, false);
        ref::require_close(sum(x, dims), shape, expected, 1e-6, 1e-5);
        if (dtype != DType::int64) ref::require_close(mean(x, dims, true), reduce_ref(x, Kind::mean, dims, true).first,
                                                      reduce_ref(x, Kind::mean, dims, true).second, 1e-6, 1e-6);
      }
    }
  }
}

TEST_CASE("tensor.nan_propagates_through_reductions", "[tensor]") {
  const Tensor x = Tensor::from_vector(std::vector<float>{1, NAN, 2, 3, 4, 5}, {2, 3});
  for (const Tensor& r : {sum(x, {1}), mean(x, {1}), max(x, {1}), min(x, {1})}) {
    REQUIRE(std::isnan(ref::at(r, {0})));
    REQUIRE_FALSE(std::isnan(ref::at(r, {1})));
  }
  REQUIRE(std::isnan(max(x).item()));
  REQUIRE(std::isnan(min(x.t()).item()));
}

// Integer sums run in int64: a count of matches (uint8 from a comparison) must not wrap
// or be read through the wrong element type.
TEST_CASE("tensor.sum_of_uint8_counts_in_int64", "[tensor]") {
  for (int64_t n : {3, 16, 100, 1000}) {
    Tensor a = arange(n);
    Tensor matches = sum(eq(a, a));
    REQUIRE(matches.dtype() == DType::int64);
    REQUIRE(matches.item() == static_cast<double>(n));
  }
  Tensor bytes = Tensor::full({300}, 255.0, DType::uint8);
  REQUIRE(sum(bytes).item() == 300.0 * 255.0);
}
