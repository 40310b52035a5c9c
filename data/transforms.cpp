// The transforms of transforms.h, written on contiguous float32 batches: a single image is
// handled as a batch of one so each transform has one code path.
#include "data/transforms.h"

#include <algorithm>

#include "tensor/ops.h"

namespace rg::data {

namespace {

// x as a contiguous float32 (B, C, H, W), and whether it was a single (C, H, W) image.
std::pair<Tensor, bool> as_batch(const Tensor& x, const char* op) {
  RG_CHECK(x.dim() == 3 || x.dim() == 4, op, ": expected an image (C, H, W) or a batch (B, C, H, W), got ",
           shape_str(x.shape()));
  RG_CHECK(x.dtype() == DType::float32, op, ": expected float32, got ", dtype_name(x.dtype()),
           " (apply ToFloat first)");
  const bool single = x.dim() == 3;
  return {(single ? x.unsqueeze(0) : x).contiguous(), single};
}

Tensor restore(const Tensor& batch, bool single) { return single ? batch.squeeze(0) : batch; }

}  // namespace

Tensor ToFloat::operator()(const Tensor& x, Generator&) const { return x.to(DType::float32) * scale; }

Tensor Normalize::operator()(const Tensor& x, Generator&) const {
  auto [in, single] = as_batch(x, "Normalize");
  const int64_t b = in.size(0), c = in.size(1), hw = in.size(2) * in.size(3);
  const auto n = static_cast<int64_t>(mean.size());
  RG_CHECK(n == static_cast<int64_t>(std.size()) && (n == 1 || n == c), "Normalize: needs 1 or ", c,
           " means and stds, got ", mean.size(), " and ", std.size());
  Tensor out = Tensor::empty(in.shape());
  const float* src = in.data<float>();
  float* dst = out.data<float>();
  for (int64_t i = 0; i < b; ++i)
    for (int64_t ch = 0; ch < c; ++ch) {
      const float m = mean[n == 1 ? 0 : ch], s = std[n == 1 ? 0 : ch];
      RG_CHECK(s > 0.0f, "Normalize: std must be > 0, got ", s);
      const int64_t base = (i * c + ch) * hw;
      for (int64_t p = 0; p < hw; ++p) dst[base + p] = (src[base + p] - m) / s;
    }
  return restore(out, single);
}

Tensor RandomCrop::operator()(const Tensor& x, Generator& gen) const {
  auto [in, single] = as_batch(x, "RandomCrop");
  const int64_t b = in.size(0), c = in.size(1), h = in.size(2), w = in.size(3);
  RG_CHECK(size > 0 && padding >= 0 && size <= h + 2 * padding && size <= w + 2 * padding, "RandomCrop: size ",
           size, " with padding ", padding, " does not fit images of ", h, "x", w);
  // (top, left) per image in padded coordinates.
  std::vector<int64_t> top(b), left(b);
  gen.fill_randint(top.data(), b, 0, h + 2 * padding - size + 1);
  gen.fill_randint(left.data(), b, 0, w + 2 * padding - size + 1);
  Tensor out = Tensor::zeros({b, c, size, size});
  const float* src = in.data<float>();
  float* dst = out.data<float>();
  for (int64_t i = 0; i < b; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t y = 0; y < size; ++y) {
        const int64_t sy = top[i] + y - padding;
        const int64_t x0 = std::max<int64_t>(0, padding - left[i]);
        const int64_t x1 = std::min<int64_t>(size, w + padding - left[i]);
        if (sy < 0 || sy >= h || x1 <= x0) continue;
        const float* row = src + ((i * c + ch) * h + sy) * w;
        std::copy(row + left[i] - padding + x0, row + left[i] - padding + x1, dst + ((i * c + ch) * size + y) * size + x0);
      }
  return restore(out, single);
}

Tensor RandomHorizontalFlip::operator()(const Tensor& x, Generator& gen) const {
  auto [in, single] = as_batch(x, "RandomHorizontalFlip");
  const int64_t b = in.size(0), rows = in.size(1) * in.size(2), w = in.size(3);
  std::vector<float> u(b);
  gen.fill_uniform(u.data(), b, 0.0, 1.0);
  Tensor out = in.clone();
  float* data = out.data<float>();
  for (int64_t i = 0; i < b; ++i) {
    if (u[i] >= p) continue;
    for (int64_t r = 0; r < rows; ++r) std::reverse(data + (i * rows + r) * w, data + (i * rows + r + 1) * w);
  }
  return restore(out, single);
}

Transform compose(std::vector<Transform> transforms) {
  return [transforms = std::move(transforms)](const Tensor& x, Generator& gen) {
    Tensor out = x;
    for (const Transform& t : transforms) out = t(out, gen);
    return out;
  };
}

}  // namespace rg::data
