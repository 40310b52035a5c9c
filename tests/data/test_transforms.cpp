// Transform tests: ToFloat and Normalize arithmetic, RandomCrop's padding and window,
// RandomHorizontalFlip's mirror, all reproducible from the generator's seed.
#include "helpers.h"

#include "tensor/ops.h"

using namespace rg;

namespace {

// (B, C, H, W) float32 holding 0, 1, 2, ... in row-major order.
Tensor numbered(int64_t b, int64_t c, int64_t h, int64_t w) {
  return arange(0.0, static_cast<double>(b * c * h * w)).reshape({b, c, h, w});
}

}  // namespace

TEST_CASE("data.to_float_and_normalize", "[data]") {
  Generator gen(0);
  Tensor pixels = Tensor::from_vector(std::vector<uint8_t>{0, 51, 255, 102}, {2, 1, 2});
  Tensor x = data::ToFloat{}(pixels, gen);
  CHECK(x.dtype() == DType::float32);
  CHECK(x.to_vector<float>()[2] == Approx(1.0));
  Tensor n = data::Normalize{{0.5f, 0.0f}, {0.5f, 2.0f}}(x, gen);
  CHECK(n.shape() == Shape{2, 1, 2});
  const std::vector<float> v = n.to_vector<float>();
  CHECK(v[0] == Approx(-1.0));
  CHECK(v[1] == Approx((0.2 - 0.5) / 0.5));
  CHECK(v[2] == Approx(0.5));
  CHECK(v[3] == Approx(0.2));
  const data::Normalize three{{0.1f, 0.2f, 0.3f}, {1.0f, 1.0f, 1.0f}}, one{{0.1f}, {1.0f}};
  CHECK_THROWS_AS(three(x, gen), Error);
  CHECK_THROWS_AS(one(pixels, gen), Error);  // uint8: ToFloat first
}

TEST_CASE("data.random_crop", "[data]") {
  const Tensor x = numbered(64, 2, 5, 5) + 1.0;  // no zeros inside images
  Generator gen(1);
  const Tensor out = data::RandomCrop{.size = 5, .padding = 2}(x, gen);
  REQUIRE(out.shape() == Shape{64, 2, 5, 5});
  int64_t shifted = 0;
  for (int64_t i = 0; i < 64; ++i) {
    const Tensor img = out.select(0, i);
    if (!allclose(img, x.select(0, i))) ++shifted;
    // Every value is padding (0) or from its own image.
    const std::vector<float> v = img.to_vector<float>();
    for (float value : v) CHECK((value == 0.0f || (value > i * 50 && value <= (i + 1) * 50)));
  }
  CHECK(shifted > 40);  // 25 placements, one of them the identity
  Generator again(1);
  CHECK(allclose(out, data::RandomCrop{.size = 5, .padding = 2}(x, again)));
  Generator g2(2);
  const Tensor small = data::RandomCrop{.size = 3}(x.select(0, 0), g2);
  CHECK(small.shape() == Shape{2, 3, 3});
  CHECK_THROWS_AS(data::RandomCrop{.size = 6}(x, g2), Error);
}

TEST_CASE("data.random_horizontal_flip", "[data]") {
  const Tensor x = numbered(200, 1, 2, 3);
  Generator gen(4);
  const Tensor out = data::RandomHorizontalFlip{}(x, gen);
  int64_t flipped = 0;
  for (int64_t i = 0; i < 200; ++i) {
    const std::vector<float> a = x.select(0, i).to_vector<float>(), b = out.select(0, i).to_vector<float>();
    const bool same = a == b;
    const bool mirrored = b[0] == a[2] && b[1] == a[1] && b[2] == a[0] && b[3] == a[5] && b[5] == a[3];
    CHECK((same || mirrored));
    flipped += mirrored;
  }
  CHECK(flipped > 70);
  CHECK(flipped < 130);
  Generator never(4);
  CHECK(allclose(data::RandomHorizontalFlip{.p = 0.0}(x, never), x));
}

TEST_CASE("data.compose_applies_in_order", "[data]") {
  const data::Transform t = data::compose({data::RandomCrop{.size = 2}, data::Normalize{{1.0f}, {2.0f}}});
  Generator gen(0);
  const Tensor out = t(numbered(3, 1, 4, 4), gen);
  CHECK(out.shape() == Shape{3, 1, 2, 2});
}
