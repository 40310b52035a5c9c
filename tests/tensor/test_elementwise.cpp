// Elementwise ops, promotion, scalar operators and in-place ops against std:: loops, on every layout.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>

#include "reference.h"

using namespace rg;
using ref::at;
using ref::random_tensor;
using ref::values;
using Values = std::vector<double>;
using BinaryFn = std::function<Tensor(const Tensor&, const Tensor&)>;
using UnaryFn = std::function<Tensor(const Tensor&)>;
using Ref2 = std::function<double(double, double)>;
using Ref1 = std::function<double(double)>;

namespace {

// f(a, b) for every element of the broadcast result, from the inputs read through ref::at.
Values binary_ref(const Tensor& a, const Tensor& b, const Ref2& f) {
  Values out;
  ref::for_each_index(ref::broadcast_shape(a.shape(), b.shape()), [&](const ref::Index& i) {
    out.push_back(f(at(a, ref::broadcast_index(i, a.shape())), at(b, ref::broadcast_index(i, b.shape()))));
  });
  return out;
}

Values unary_ref(const Tensor& x, const Ref1& f) {
  Values out;
  for (double v : values(x)) out.push_back(f(v));
  return out;
}

struct Layout {
  const char* name;
  Tensor a, b;
};

// Operand pairs covering contiguous, transposed, step-2 sliced, broadcast, 0-d and empty
// inputs, with values in [low, high).
std::vector<Layout> layouts(DType dtype, double low, double high) {
  auto r = [&](const Shape& shape, uint64_t seed) { return random_tensor(shape, seed, dtype, low, high); };
  return {
      {"contiguous", r({3, 4}, 1), r({3, 4}, 2)},
      {"transposed", r({4, 3}, 3).t(), r({3, 4}, 4)},
      {"sliced step 2", r({3, 8}, 5).slice(1, 0, 8, 2), r({6, 4}, 6).slice(0, 1, 6, 2)},
      {"size-1 dims", r({3, 1}, 7), r({1, 4}, 8)},
      {"trailing dims", r({2, 3, 4}, 9), r({4}, 10)},
      {"0-d scalar", r({}, 11), r({3, 4}, 12)},
      {"expanded view", r({3, 1}, 13).expand({3, 4}), r({3, 4}, 14).t().t()},
      {"empty", r({0, 4}, 15), r({1, 4}, 16)},
  };
}

void check_binary(const char* name, const BinaryFn& op, const Ref2& f, DType dtype, double low, double high,
                  double tol) {
  for (const Layout& l : layouts(dtype, low, high)) {
    INFO(name << " on " << dtype_name(dtype) << ", " << l.name);
    Tensor out = op(l.a, l.b);
    REQUIRE(out.dtype() == dtype);
    ref::require_close(out, ref::broadcast_shape(l.a.shape(), l.b.shape()), binary_ref(l.a, l.b, f), tol, tol);
  }
}

}  // namespace

TEST_CASE("tensor.binary_ops_float", "[tensor]") {
  for (DType dtype : {DType::float32, DType::float64}) {
    const double tol = dtype == DType::float32 ? 1e-6 : 1e-14;
    check_binary("add", [](auto& a, auto& b) { return add(a, b); }, std::plus<>(), dtype, -2, 2, tol);
    check_binary("add alpha", [](auto& a, auto& b) { return add(a, b, 0.5); },
                 [](double a, double b) { return a + 0.5 * b; }, dtype, -2, 2, tol);
    check_binary("sub", [](auto& a, auto& b) { return sub(a, b); }, std::minus<>(), dtype, -2, 2, tol);
    check_binary("sub alpha", [](auto& a, auto& b) { return sub(a, b, 2.0); },
                 [](double a, double b) { return a - 2.0 * b; }, dtype, -2, 2, tol);
    check_binary("mul", [](auto& a, auto& b) { return mul(a, b); }, std::multiplies<>(), dtype, -2, 2, tol);
    check_binary("div", [](auto& a, auto& b) { return div(a, b); }, std::divides<>(), dtype, 0.5, 2, tol);
    check_binary("pow", [](auto& a, auto& b) { return pow(a, b); },
                 [](double a, double b) { return std::pow(a, b); }, dtype, 0.5, 2, 10 * tol);
    check_binary("maximum", [](auto& a, auto& b) { return maximum(a, b); },
                 [](double a, double b) { return std::max(a, b); }, dtype, -2, 2, 0);
    check_binary("minimum", [](auto& a, auto& b) { return minimum(a, b); },
                 [](double a, double b) { return std::min(a, b); }, dtype, -2, 2, 0);
    check_binary("where_positive", [](auto& a, auto& b) { return where_positive(a, b); },
                 [](double a, double b) { return b > 0 ? a : 0.0; }, dtype, -2, 2, 0);
  }
}

TEST_CASE("tensor.binary_ops_int", "[tensor]") {
  for (DType dtype : {DType::int64, DType::int32}) {
    check_binary("add", [](auto& a, auto& b) { return add(a, b); }, std::plus<>(), dtype, -50, 50, 0);
    check_binary("sub", [](auto& a, auto& b) { return a - b; }, std::minus<>(), dtype, -50, 50, 0);
    check_binary("mul", [](auto& a, auto& b) { return mul(a, b); }, std::multiplies<>(), dtype, -50, 50, 0);
    check_binary("maximum", [](auto& a, auto& b) { return maximum(a, b); },
                 [](double a, double b) { return std::max(a, b); }, dtype, -50, 50, 0);
    check_binary("minimum", [](auto& a, auto& b) { return minimum(a, b); },
                 [](double a, double b) { return std::min(a, b); }, dtype, -50, 50, 0);
  }
}

TEST_CASE("tensor.pow_scalar_exponent", "[tensor]") {
  Tensor x = random_tensor({3, 5}, 20, DType::float64, 0.5, 2).t();
  ref::require_close(pow(x, 3.0), {5, 3}, unary_ref(x, [](double v) { return v * v * v; }), 1e-14, 1e-14);
  ref::require_close(pow(x, 0.5), {5, 3}, unary_ref(x, [](double v) { return std::sqrt(v); }), 1e-14, 1e-14);
  ref::require_close(pow(x, -1.0), {5, 3}, unary_ref(x, [](double v) { return 1 / v; }), 1e-14, 1e-14);
}

TEST_CASE("tensor.comparisons", "[tensor]") {
  const std::vector<std::tuple<const char*, BinaryFn, std::function<bool(double, double)>>> ops = {
      {"eq", [](auto& a, auto& b) { return eq(a, b); }, std::equal_to<>()},
      {"ne", [](auto& a, auto& b) { return ne(a, b); }, std::not_equal_to<>()},
      {"lt", [](auto& a, auto& b) { return lt(a, b); }, std::less<>()},
      {"le", [](auto& a, auto& b) { return le(a, b); }, std::less_equal<>()},
      {"gt", [](auto& a, auto& b) { return gt(a, b); }, std::greater<>()},
      {"ge", [](auto& a, auto& b) { return ge(a, b); }, std::greater_equal<>()},
  };
  for (DType dtype : {DType::float32, DType::float64, DType::int64, DType::int32}) {
    for (const auto& [name, op, cmp] : ops) {
      for (const Layout& l : layouts(dtype, -3, 3)) {  // integer dtypes get whole numbers: many ties
        INFO(name << " on " << dtype_name(dtype) << ", " << l.name);
        Tensor out = op(l.a, l.b);
        REQUIRE(out.dtype() == DType::uint8);
        ref::require_close(out, ref::broadcast_shape(l.a.shape(), l.b.shape()),
                           binary_ref(l.a, l.b, [&](double x, double y) { return cmp(x, y) ? 1.0 : 0.0; }), 0, 0);
      }
    }
  }
  Tensor a = Tensor::from_vector(std::vector<float>{1, 2, 3}, {3});
  Tensor b = Tensor::from_vector(std::vector<float>{3, 2, 1}, {3});
  REQUIRE(values(eq(a, b)) == Values{0, 1, 0});
  REQUIRE(values(le(a, b)) == Values{1, 1, 0});
}

TEST_CASE("tensor.unary_ops", "[tensor]") {
  const std::vector<std::tuple<const char*, UnaryFn, Ref1, bool>> ops = {  // name, op, reference, positive input only
      {"neg", [](auto& x) { return neg(x); }, [](double v) { return -v; }, false},
      {"exp", [](auto& x) { return exp(x); }, [](double v) { return std::exp(v); }, false},
      {"log", [](auto& x) { return log(x); }, [](double v) { return std::log(v); }, true},
      {"sqrt", [](auto& x) { return sqrt(x); }, [](double v) { return std::sqrt(v); }, true},
      {"tanh", [](auto& x) { return tanh(x); }, [](double v) { return std::tanh(v); }, false},
      {"sigmoid", [](auto& x) { return sigmoid(x); }, [](double v) { return 1 / (1 + std::exp(-v)); }, false},
      {"relu", [](auto& x) { return relu(x); }, [](double v) { return std::max(v, 0.0); }, false},
      {"abs", [](auto& x) { return abs(x); }, [](double v) { return std::fabs(v); }, false},
      {"sign", [](auto& x) { return sign(x); }, [](double v) { return double((v > 0) - (v < 0)); }, false},
      {"square", [](auto& x) { return square(x); }, [](double v) { return v * v; }, false},
      {"reciprocal", [](auto& x) { return reciprocal(x); }, [](double v) { return 1 / v; }, true},
  };
  for (DType dtype : {DType::float32, DType::float64}) {
    const double tol = dtype == DType::float32 ? 1e-6 : 1e-14;
    for (const auto& [name, op, f, positive] : ops) {
      for (const Layout& l : layouts(dtype, positive ? 0.1 : -3, 3)) {
        INFO(name << " on " << dtype_name(dtype) << ", " << l.name);
        Tensor out = op(l.a);
        REQUIRE(out.dtype() == dtype);
        ref::require_close(out, l.a.shape(), unary_ref(l.a, f), tol, tol);
      }
    }
  }
  Tensor edges = Tensor::from_vector(std::vector<float>{-2, 0, 3}, {3});
  REQUIRE(values(sign(edges)) == Values{-1, 0, 1});
  REQUIRE(values(relu(edges)) == Values{0, 0, 3});
}

TEST_CASE("tensor.unary_ops_int", "[tensor]") {
  for (DType dtype : {DType::int64, DType::int32}) {
    INFO(dtype_name(dtype));
    Tensor x = Tensor::from_vector(std::vector<int64_t>{-7, 0, 3, -1}, {2, 2}).to(dtype).t();
    REQUIRE(neg(x).dtype() == dtype);
    REQUIRE(values(neg(x)) == Values{7, -3, 0, 1});
    REQUIRE(values(abs(x)) == Values{7, 3, 0, 1});
    REQUIRE(values(square(x)) == Values{49, 9, 0, 1});
    REQUIRE(values(sign(x)) == Values{-1, 1, 0, -1});
    REQUIRE(values(relu(x)) == Values{0, 3, 0, 0});
  }
}

TEST_CASE("tensor.dtype_promotion", "[tensor]") {
  REQUIRE(promote(DType::int64, DType::float32) == DType::float32);
  REQUIRE(promote(DType::float32, DType::float64) == DType::float64);
  REQUIRE(promote(DType::int32, DType::int64) == DType::int64);
  REQUIRE(promote(DType::uint8, DType::int32) == DType::int32);

  Tensor i = Tensor::from_vector(std::vector<int64_t>{1, 2, 3}, {3});
  Tensor f = Tensor::from_vector(std::vector<float>{0.5f, 0.25f, -1.0f}, {3});
  REQUIRE((i + f).dtype() == DType::float32);
  REQUIRE(values(i + f) == Values{1.5, 2.25, 2});
  REQUIRE(values(f * i) == Values{0.5, 0.5, -3});
  REQUIRE((f + f.to(DType::float64)).dtype() == DType::float64);
  REQUIRE((i + i.to(DType::int32)).dtype() == DType::int64);
  REQUIRE((i.to(DType::uint8) + i.to(DType::int32)).dtype() == DType::int32);
  REQUIRE(values(lt(i, Tensor::scalar(1.5))) == Values{1, 0, 0});
  const Tensor picked = where(Tensor::from_vector(std::vector<uint8_t>{1, 0, 1}, {3}), i, f);
  REQUIRE(picked.dtype() == DType::float32);
  REQUIRE(values(picked) == Values{1, 0.25, 3});
}

TEST_CASE("tensor.scalar_operators", "[tensor]") {
  Tensor t = Tensor::from_vector(std::vector<float>{1, -2, 4}, {3});
  REQUIRE(values(t + 2.0) == Values{3, 0, 6});
  REQUIRE(values(2.0 + t) == Values{3, 0, 6});
  REQUIRE(values(t - 2.0) == Values{-1, -4, 2});
  REQUIRE(values(2.0 - t) == Values{1, 4, -2});
  REQUIRE(values(t * 3.0) == Values{3, -6, 12});
  REQUIRE(values(3.0 * t) == Values{3, -6, 12});
  REQUIRE(values(t / 2.0) == Values{0.5, -1, 2});
  REQUIRE(values(2.0 / t) == Values{2, -1, 0.5});
  REQUIRE(values(-t) == Values{-1, 2, -4});
  REQUIRE(values(t + t) == Values{2, -4, 8});
  REQUIRE(values(t - t * t / t) == Values{0, 0, 0});
  REQUIRE((t * 3.0).dtype() == DType::float32);
  REQUIRE((2.0 - t.to(DType::float64)).dtype() == DType::float64);
}

TEST_CASE("tensor.where_and_clamp", "[tensor]") {
  Tensor cond = Tensor::from_vector(std::vector<uint8_t>{1, 0, 1}, {3, 1});
  Tensor a = random_tensor({1, 4}, 30);
  Tensor b = Tensor::scalar(-5);
  Tensor w = where(cond, a, b);
  Values expected;
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) expected.push_back(i == 1 ? -5.0 : at(a, {0, j}));
  ref::require_close(w, {3, 4}, expected, 0, 0);

  Tensor c2 = Tensor::from_vector(std::vector<uint8_t>{1, 0, 0, 1, 1, 0}, {3, 2}).t();  // non-contiguous cond
  Tensor x = random_tensor({2, 3}, 31, DType::float64);
  Tensor y = random_tensor({2, 3}, 32, DType::float64);
  ref::require_close(where(c2, x, y), {2, 3},
                     {at(x, {0, 0}), at(y, {0, 1}), at(x, {0, 2}), at(y, {1, 0}), at(x, {1, 1}), at(y, {1, 2})}, 0, 0);

  // contiguous cond and a, scalar b: relu's backward, through the vectorised select
  Tensor mask = gt(random_tensor({40000}, 34), Tensor::scalar(0.0));
  Tensor g = random_tensor({40000}, 35);
  Values mask_values = values(mask), selected = values(g);
  for (size_t i = 0; i < selected.size(); ++i) selected[i] = mask_values[i] ? selected[i] : 0.0;
  ref::require_close(where(mask, g, Tensor::scalar(0.0)), {40000}, selected, 0, 0);

  Tensor v = random_tensor({6, 5}, 33, DType::float32, -3, 3).slice(0, 0, 6, 2);
  ref::require_close(clamp(v, -1, 0.5), {3, 5}, unary_ref(v, [](double e) { return std::clamp(e, -1.0, 0.5); }), 0, 0);
  Tensor n = Tensor::from_vector(std::vector<int64_t>{-9, -2, 0, 4, 12}, {5});
  REQUIRE(values(clamp(n, -5, 5)) == Values{-5, -2, 0, 4, 5});
  REQUIRE(clamp(n, -5, 5).dtype() == DType::int64);
}

TEST_CASE("tensor.inplace_ops", "[tensor]") {
  Tensor x = random_tensor({3, 4}, 40, DType::float64);
  Tensor y = random_tensor({3, 4}, 41, DType::float64, 0.5, 2);
  Values ex = values(x), ey = values(y);
  auto expect = [&](const std::function<double(double, double)>& f) {
    for (size_t i = 0; i < ex.size(); ++i) ex[i] = f(ex[i], ey[i % ey.size()]);
    ref::require_close(x, {3, 4}, ex, 1e-14, 1e-14);
  };
  REQUIRE(&x.add_(y, 0.5) == &x);
  expect([](double a, double b) { return a + 0.5 * b; });
  x.sub_(y, 2.0);
  expect([](double a, double b) { return a - 2.0 * b; });
  x.mul_(y);
  expect(std::multiplies<>());
  x.div_(y);
  expect(std::divides<>());
  x.mul_(3.0);
  expect([](double a, double) { return a * 3.0; });
  x.add_(1.5);
  expect([](double a, double) { return a + 1.5; });

  ey = ex;
  x.add_(x);  // an input may also be the output, element for element
  expect(std::plus<>());

  Tensor row = random_tensor({4}, 42, DType::float64);  // broadcast over the rows
  ey = values(row);
  x.add_(row);
  expect(std::plus<>());
  REQUIRE_THROWS_AS(row.add_(x), Error);  // the result would not fit in `row`
}

TEST_CASE("tensor.inplace_ops_on_views_change_only_the_view", "[tensor]") {
  Tensor base = random_tensor({4, 6}, 50);
  const Values before = values(base);
  // Expected: `before` with f applied to the elements (i, j) that `in_view` selects.
  auto expected = [&](const std::function<bool(int64_t, int64_t)>& in_view,
                      const std::function<double(double, int64_t, int64_t)>& f) {
    Values e = before;
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 6; ++j)
        if (in_view(i, j)) e[i * 6 + j] = f(before[i * 6 + j], i, j);
    return e;
  };
  auto even_column = [](int64_t, int64_t j) { return j % 2 == 0; };

  SECTION("add_ on a step-2 slice") {
    base.slice(1, 0, 6, 2).add_(Tensor::ones({4, 3}), 2.0);
    ref::require_close(base, {4, 6}, expected(even_column, [](double v, auto, auto) { return v + 2; }));
  }
  SECTION("sub_ and mul_ on a transposed narrow") {
    base.t().narrow(1, 1, 2).sub_(Tensor::full({6, 2}, 1.0)).mul_(Tensor::full({6, 1}, 3.0));
    ref::require_close(base, {4, 6},
                       expected([](int64_t i, int64_t) { return i == 1 || i == 2; },
                                [](double v, auto, auto) { return (v - 1) * 3; }));
  }
  SECTION("div_, fill_ and zero_ on selected columns and rows") {
    base.select(1, 3).div_(Tensor::scalar(4));
    base.select(0, 0).fill_(9);
    base.narrow(0, 3, 1).zero_();
    ref::require_close(base, {4, 6},
                       expected([](int64_t i, int64_t j) { return j == 3 || i == 0 || i == 3; },
                                [](double v, int64_t i, int64_t) { return i == 0 ? 9.0 : i == 3 ? 0.0 : v / 4; }));
  }
  SECTION("copy_ broadcasts and casts into a view") {
    Tensor row = Tensor::from_vector(std::vector<double>{1, 2, 3}, {3});  // float64 into float32
    base.narrow(0, 1, 2).slice(1, 0, 6, 2).copy_(row);
    ref::require_close(base, {4, 6},
                       expected([](int64_t i, int64_t j) { return (i == 1 || i == 2) && j % 2 == 0; },
                                [](double, int64_t, int64_t j) { return 1.0 + j / 2; }));
  }
  SECTION("copy_ from a transposed source") {
    Tensor src = ref::iota({6, 4}, DType::int64).t();
    base.copy_(src);
    ref::require_close(base, {4, 6}, values(src));
  }
}

TEST_CASE("tensor.inplace_ops_do_not_allocate", "[tensor]") {
  Tensor x = random_tensor({64, 64}, 60);
  Tensor y = random_tensor({64, 64}, 61, DType::float32, 0.5, 2);
  Tensor row = random_tensor({64}, 62);
  Backend& cpu = backend_for(DeviceType::cpu);
  // Allocations (from the system or the cache) and allocated bytes while fn runs.
  auto allocations_during = [&](const std::function<void()>& fn) {
    const AllocatorStats before = cpu.memory_stats(0);
    fn();
    const AllocatorStats after = cpu.memory_stats(0);
    REQUIRE(after.allocated == before.allocated);
    return (after.system_allocs - before.system_allocs) + (after.cache_hits - before.cache_hits);
  };
  CHECK(allocations_during([&] { x.add_(y); }) == 0);
  CHECK(allocations_during([&] { x.add_(y, 2.0); }) == 0);
  CHECK(allocations_during([&] { x.sub_(y, 0.5); }) == 0);
  CHECK(allocations_during([&] { x.mul_(y); }) == 0);
  CHECK(allocations_during([&] { x.div_(y); }) == 0);
  CHECK(allocations_during([&] { x.add_(row); }) == 0);
  CHECK(allocations_during([&] { x.t().mul_(y); }) == 0);
  CHECK(allocations_during([&] { x.slice(1, 0, 64, 2).copy_(row.narrow(0, 0, 32)); }) == 0);
  CHECK(allocations_during([&] { x.copy_(y.t()); }) == 0);
  CHECK(allocations_during([&] { x.zero_(); }) == 0);
  CHECK(allocations_during([&] { x.fill_(3); }) == 0);
  CHECK(allocations_during([&] { x.mul_(2.0); }) == 0);
  CHECK(allocations_during([&] { x.add_(1.0); }) == 0);
}

TEST_CASE("tensor.large_tensors_same_result_on_1_and_2_threads", "[tensor]") {
  ref::NumThreadsGuard guard;
  Tensor a = random_tensor({1024, 2048}, 70);  // 2M elements: the threaded path
  Tensor b = random_tensor({2048}, 71);
  auto run = [&] {
    Tensor inplace = a.clone();
    inplace.mul_(b);
    return std::vector<Tensor>{add(a, b), exp(a.t()), sigmoid(a), mul(a.t(), a.t()), inplace};
  };
  set_num_threads(1);
  const std::vector<Tensor> one = run();
  set_num_threads(2);
  REQUIRE(get_num_threads() == 2);
  const std::vector<Tensor> two = run();
  for (size_t k = 0; k < one.size(); ++k) REQUIRE(one[k].to_vector<float>() == two[k].to_vector<float>());

  ref::require_close(two[0], {1024, 2048}, binary_ref(a, b, std::plus<>()));
  ref::require_close(two[1], {2048, 1024}, unary_ref(a.t(), [](double v) { return std::exp(v); }));
  ref::require_close(two[4], {1024, 2048}, binary_ref(a, b, std::multiplies<>()));
}

TEST_CASE("tensor.ieee_special_values", "[tensor]") {
  const double inf = INFINITY, nan = NAN;
  const Tensor zero = Tensor::zeros({1}), minus_one = Tensor::full({1}, -1.0);
  ref::require_close(log(zero), {1}, {-inf});
  ref::require_close(reciprocal(zero), {1}, {inf});
  ref::require_close(sqrt(minus_one), {1}, {nan});
  ref::require_close(exp(Tensor::full({1}, 1000.0)), {1}, {inf});
  ref::require_close(sigmoid(Tensor::from_vector(std::vector<float>{-1000, 1000}, {2})), {2}, {0, 1});
  ref::require_close(pow(zero, zero), {1}, {1});

  // NaN propagates, as in PyTorch, whichever side it is on.
  const Tensor x = Tensor::from_vector(std::vector<float>{NAN, 1, NAN}, {3});
  const Tensor y = Tensor::from_vector(std::vector<float>{1, NAN, NAN}, {3});
  ref::require_close(maximum(x, y), {3}, {nan, nan, nan});
  ref::require_close(minimum(x, y), {3}, {nan, nan, nan});
  ref::require_close(relu(x), {3}, {nan, 1, nan});
  ref::require_close(clamp(x, -1, 1), {3}, {nan, 1, nan});
}
