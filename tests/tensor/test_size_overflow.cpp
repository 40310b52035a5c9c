// Huge and negative sizes: every op that multiplies or adds sizes (creation, views, joins,
// matmul, convolution and pooling geometry, one_hot, arange) refuses a result whose element
// count, bytes, strides or offsets overflow int64 with an rg::Error naming the op, instead of
// wrapping to a small allocation that later writes run past. Valid edge cases still work.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>

#include "reference.h"

using namespace rg;
using Catch::Contains;

namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t k2e62 = int64_t{1} << 62;
constexpr int64_t k2e40 = int64_t{1} << 40;

// A view of `shape` over one element (every stride 0): its sizes cost no memory. uint8, so
// that its bytes fit wherever its element count does.
Tensor huge_view(const Shape& shape, DType dtype = DType::uint8) {
  return Tensor::ones({1}, dtype).view(Shape(shape.size(), 1)).expand(shape);
}

}  // namespace

TEST_CASE("tensor.size_overflow_checked_arithmetic", "[tensor]") {
  CHECK(checked_mul(k2e62, 1, "t") == k2e62);
  CHECK(checked_add(kMax - 1, 1, "t") == kMax);
  REQUIRE_ERROR(checked_mul(k2e62, 2, "what"), Contains("what") && Contains("overflows int64"));
  REQUIRE_ERROR(checked_mul(-k2e62, 4, "what"), Contains("overflows"));
  REQUIRE_ERROR(checked_add(kMax, 1, "what"), Contains("what") && Contains("overflows"));
  CHECK(numel_of({}) == 1);
  CHECK(numel_of({0, 5}) == 0);
  CHECK(numel_of({k2e62, 1}) == k2e62);
  REQUIRE_ERROR(numel_of({k2e62 + 1, 4}), Contains("more elements than int64 holds"));
  // An empty shape is refused too when its other sizes overflow: its strides would.
  REQUIRE_ERROR(numel_of({0, k2e62, k2e62}, "op"), Contains("op:") && Contains("more elements"));
  REQUIRE_ERROR(numel_of({k2e62, k2e62, 0}), Contains("more elements"));
  REQUIRE_ERROR(numel_of({3, -2}), Contains("negative size -2"));
  REQUIRE_ERROR(numel_of({kMax, kMax}), Contains("more elements"));
}

TEST_CASE("tensor.size_overflow_creation", "[tensor]") {
  Generator gen(1);
  // The probe that found the class: 2^62 + 1 rows of 4 wrapped to 4 elements of storage.
  REQUIRE_ERROR(Tensor::empty({k2e62 + 1, 4}), Contains("empty") && Contains("more elements"));
  REQUIRE_ERROR(Tensor::zeros({k2e62, 4}), Contains("more elements"));
  REQUIRE_ERROR(Tensor::ones({0, k2e62, 8}), Contains("more elements"));
  REQUIRE_ERROR(Tensor::full({kMax, 2}, 1.0), Contains("more elements"));
  // Elements that fit whose bytes do not: 2^61 float64 are 2^64 bytes.
  REQUIRE_ERROR(Tensor::empty({int64_t{1} << 61}, DType::float64), Contains("bytes") && Contains("overflows"));
  REQUIRE_ERROR(Tensor::empty({k2e62}, DType::int32), Contains("overflows"));
  REQUIRE_ERROR(Tensor::empty({-1}), Contains("empty") && Contains("-1"));
  REQUIRE_ERROR(Tensor::empty({4, -k2e62}), Contains("negative"));
  REQUIRE_ERROR(rand({k2e62, k2e62}, gen), Contains("more elements"));
  REQUIRE_ERROR(randn({3, -3}, gen), Contains("-3"));
  REQUIRE_ERROR(randint(0, 5, {k2e62, 5}, gen), Contains("more elements"));
  REQUIRE_ERROR(Tensor::from_vector<float>({1, 2}, {k2e62 + 1, 4}), Contains("from_vector"));
  REQUIRE_ERROR(Tensor::from_vector<float>({}, {-2, 0}), Contains("from_vector") && Contains("-2"));
  REQUIRE_ERROR(arange(0.0, 1e300), Contains("arange") && Contains("too many"));
  REQUIRE_ERROR(arange(-1e19, 1e19, 1.0), Contains("arange"));
  // Sizes that fit but memory that does not exist: an error, not a crash.
  REQUIRE_ERROR(Tensor::empty({k2e62}, DType::uint8), Contains("out of memory"));
  CHECK(Tensor::empty({0, k2e40, 8}).numel() == 0);  // empty, with strides that fit
}

TEST_CASE("tensor.size_overflow_views", "[tensor]") {
  const Tensor x = Tensor::ones({2, 3});
  REQUIRE_ERROR(x.view({k2e62 + 1, 4}), Contains("view"));
  REQUIRE_ERROR(x.reshape({-1, k2e40, k2e40}), Contains("reshape") && Contains("overflows"));
  REQUIRE_ERROR(x.view({6, -3}), Contains("view") && Contains("-3"));
  REQUIRE_ERROR(Tensor::ones({1, 4}, DType::uint8).expand({k2e62, 4}), Contains("more elements"));
  REQUIRE_ERROR(Tensor::ones({1}).expand({int64_t{1} << 61}), Contains("bytes"));  // 2^61 floats
  REQUIRE_ERROR(Tensor::ones({1, 3}).expand({-5, 3}), Contains("expand") && Contains("-5"));
  REQUIRE_ERROR(Tensor::ones({1, 3}).expand({2, -7}), Contains("expand") && Contains("-7"));
  REQUIRE_ERROR(huge_view({k2e40, k2e40}).unsqueeze(0).expand({k2e40, k2e40, k2e40}), Contains("more elements"));
  // narrow's start + length once overflowed past its range check.
  REQUIRE_ERROR(x.narrow(1, 1, kMax), Contains("narrow"));
  REQUIRE_ERROR(x.narrow(1, kMax, 1), Contains("narrow"));
  REQUIRE_ERROR(x.narrow(1, -1, 2), Contains("narrow"));
  REQUIRE_ERROR(x.select(0, kMax), Contains("select"));
  REQUIRE_ERROR(x.select(0, std::numeric_limits<int64_t>::min()), Contains("select"));
  // Steps and bounds at the limits: valid views, sized right.
  CHECK(x.slice(1, 0, kMax, kMax).shape() == Shape{2, 1});
  CHECK(x.slice(1, std::numeric_limits<int64_t>::min(), kMax, 2).shape() == Shape{2, 2});
  CHECK(ref::values(x.slice(1, 1, kMax, kMax)) == std::vector<double>{1, 1});
  CHECK(x.narrow(1, 3, 0).numel() == 0);
  // A huge but valid view (stride 0) is fine; copying it needs memory that does not exist.
  const Tensor wide = huge_view({int64_t{1} << 31, int64_t{1} << 31});
  CHECK(wide.flatten().numel() == k2e62);  // still a view
  REQUIRE_ERROR(wide.contiguous(), Contains("out of memory"));
}

TEST_CASE("tensor.size_overflow_ops", "[tensor]") {
  const Tensor column = huge_view({k2e40, 1}), row = huge_view({1, k2e40});
  REQUIRE_ERROR(add(column, row), Contains("more elements"));  // broadcast to 2^80
  REQUIRE_ERROR(mul(huge_view({k2e62, 1}), Tensor::ones({1, 4})), Contains("more elements"));
  REQUIRE_ERROR(mul(huge_view({int64_t{1} << 60, 1}, DType::float32), Tensor::ones({1, 4})),
                Contains("bytes") && Contains("overflows"));  // 2^62 floats
  REQUIRE_ERROR(where(column, column, row), Contains("more elements"));
  REQUIRE_ERROR(matmul(column, row), Contains("more elements"));  // (2^40, 2^40) out
  REQUIRE_ERROR(matmul(huge_view({k2e40, k2e40, 1, 1}), Tensor::ones({1, 1})), Contains("more elements"));
  REQUIRE_ERROR(matmul(huge_view({0, k2e40, 1}), huge_view({0, 1, k2e40})), Contains("more elements"));
  REQUIRE_ERROR(cat({huge_view({k2e62, 1}), huge_view({k2e62, 1})}), Contains("cat") && Contains("overflows"));
  REQUIRE_ERROR(cat({huge_view({k2e62, 1}), huge_view({k2e62, 1}), huge_view({k2e62, 1}), huge_view({k2e62, 1})}),
                Contains("cat"));  // a sum that would wrap all the way round to 0
  REQUIRE_ERROR(stack({huge_view({k2e62}), huge_view({k2e62})}), Contains("more elements"));
  const Tensor labels = Tensor::from_vector<int64_t>({0, 1, 2, 3}, {4});
  REQUIRE_ERROR(one_hot(labels, k2e62), Contains("more elements"));
  REQUIRE_ERROR(one_hot(labels, kMax), Contains("more elements"));
  REQUIRE_ERROR(index_select(huge_view({k2e62, 1}), 1, Tensor::zeros({4}, DType::int64)), Contains("more elements"));
  // split and chunk with sizes at the limit: one part, or parts of one.
  const Tensor x = Tensor::ones({5, 2});
  CHECK(split(x, kMax).size() == 1);
  CHECK(split(x, kMax - 2).at(0).shape() == Shape{5, 2});
  CHECK(chunk(x, kMax).size() == 5);
  CHECK(chunk(x, kMax - 1).at(4).shape() == Shape{1, 2});
}

TEST_CASE("tensor.size_overflow_conv_pool_geometry", "[tensor]") {
  const Tensor x = Tensor::ones({1, 2, 5, 5});
  const Tensor w = Tensor::ones({3, 2, 3, 3});
  auto geometry = [](int64_t k, int64_t s, int64_t p) { return Conv2dGeometry{k, k, s, s, p, p}; };
  // in + 2 * pad overflows: once a wrapped output size.
  REQUIRE_ERROR(im2col(x, geometry(3, 1, k2e62)), Contains("im2col") && Contains("overflows"));
  REQUIRE_ERROR(im2col(x, geometry(3, 1, kMax / 2)), Contains("im2col") && Contains("overflows"));
  REQUIRE_ERROR(conv2d(x, w, Tensor(), geometry(3, 1, k2e62)), Contains("conv2d") && Contains("overflows"));
  // Fits in int64 but not in memory: the output shape is refused, not allocated small.
  REQUIRE_ERROR(im2col(x, geometry(3, 1, int64_t{1} << 60)), Contains("im2col") && Contains("overflows"));  // OH*OW
  REQUIRE_ERROR(conv2d(x, w, Tensor(), geometry(3, 1, int64_t{1} << 31)), Contains("more elements"));
  REQUIRE_ERROR(im2col(x, geometry(kMax, 1, 0)), Contains("does not fit"));
  REQUIRE_ERROR(im2col(x, {k2e62, k2e62, 1, 1, k2e62 / 2, k2e62 / 2}),
                Contains("im2col") && Contains("overflows"));  // C*kh
  REQUIRE_ERROR(im2col(x, geometry(3, -1, 0)), Contains("not valid"));
  REQUIRE_ERROR(max_pool2d(x, {.kernel_h = 2, .kernel_w = 2, .pad_h = k2e62, .pad_w = k2e62}), Contains("padding"));
  REQUIRE_ERROR(max_pool2d(x, {.kernel_h = kMax, .kernel_w = kMax, .pad_h = kMax / 2, .pad_w = 0}),
                Contains("max_pool2d") && Contains("overflows"));
  REQUIRE_ERROR(avg_pool2d(x, {.kernel_h = 2, .kernel_w = 2, .pad_h = kMax / 2, .pad_w = 0}),
                Contains("avg_pool2d") && Contains("overflows"));
  const Tensor cols = im2col(x, geometry(3, 1, 1));
  REQUIRE_ERROR(col2im(cols, {1, 2, -5, 5}, geometry(3, 1, 1)), Contains("col2im") && Contains("-5"));
  REQUIRE_ERROR(col2im(cols, {k2e62, 2, 5, 5}, geometry(3, 1, 1)), Contains("col2im"));
  REQUIRE_ERROR(col2im(cols, {1, 2, 5}, geometry(3, 1, 1)), Contains("col2im") && Contains("(B, C, H, W)"));
  const Pool2dOptions pool{.kernel_h = 2, .kernel_w = 2};
  const Tensor pooled = avg_pool2d(x, pool);
  REQUIRE_ERROR(avg_pool2d_backward(pooled, {1, 2, 5}, pool), Contains("avg_pool2d_backward"));
  REQUIRE_ERROR(avg_pool2d_backward(pooled, {1, 2, kMax, 5}, pool), Contains("avg_pool2d_backward"));
  auto [values_out, indices] = max_pool2d(x, pool);
  REQUIRE_ERROR(max_pool2d_backward(values_out, indices, {1, 2, -4, 4}), Contains("max_pool2d_backward"));
  REQUIRE_ERROR(max_pool2d_backward(values_out, indices, {k2e62, 2, 4, 4}), Contains("max_pool2d_backward"));
  REQUIRE_ERROR(max_pool2d_backward(values_out, indices, {1, 2, k2e62, k2e62}), Contains("more elements"));
  // The edge that must still work: a kernel as large as the padded input.
  CHECK(im2col(x, geometry(7, 1, 1)).shape() == Shape{1, 2 * 49, 1});
}
