// SynthDataset: prototypes uniform in [0.2, 0.8] per pixel, label i % K so classes are
// balanced, pixels clamp(prototype + noise) quantised to uint8 like a real image file.
#include "data/synthetic.h"

#include <algorithm>
#include <cmath>

#include "tensor/generator.h"

namespace rg::data {

namespace {

InMemoryDataset make_synthetic(const SynthOptions& o) {
  RG_CHECK(o.size >= 0 && o.num_classes > 0 && o.channels > 0 && o.height > 0 && o.width > 0 && o.noise >= 0,
           "SynthDataset: bad options: size ", o.size, ", num_classes ", o.num_classes, ", image ", o.channels, "x",
           o.height, "x", o.width, ", noise ", o.noise);
  const int64_t pixels = o.channels * o.height * o.width;
  Generator gen(o.seed);
  std::vector<float> prototypes(o.num_classes * pixels), noise(o.size * pixels);
  gen.fill_uniform(prototypes.data(), static_cast<int64_t>(prototypes.size()), 0.2, 0.8);
  gen.fill_normal(noise.data(), static_cast<int64_t>(noise.size()), 0.0, o.noise);
  Tensor images = Tensor::empty({o.size, o.channels, o.height, o.width}, DType::uint8);
  Tensor labels = Tensor::empty({o.size}, DType::int64);
  uint8_t* x = images.data<uint8_t>();
  int64_t* y = labels.data<int64_t>();
  std::vector<double> sum(o.channels), sum_sq(o.channels);
  for (int64_t i = 0; i < o.size; ++i) {
    y[i] = i % o.num_classes;
    for (int64_t p = 0; p < pixels; ++p) {
      const float v = std::clamp(prototypes[y[i] * pixels + p] + noise[i * pixels + p], 0.0f, 1.0f);
      x[i * pixels + p] = static_cast<uint8_t>(std::lround(v * 255.0f));
      const double scaled = x[i * pixels + p] / 255.0;
      sum[p / (o.height * o.width)] += scaled;
      sum_sq[p / (o.height * o.width)] += scaled * scaled;
    }
  }
  // The normalisation is measured, as one would for a new real dataset.
  Normalization norm{std::vector<float>(o.channels, 0.0f), std::vector<float>(o.channels, 1.0f)};
  const double count = static_cast<double>(o.size * o.height * o.width);
  for (int64_t c = 0; c < o.channels && o.size > 0; ++c) {
    const double mean = sum[c] / count, var = sum_sq[c] / count - mean * mean;
    norm.mean[c] = static_cast<float>(mean);
    norm.std[c] = static_cast<float>(std::sqrt(std::max(var, 1e-12)));
  }
  return InMemoryDataset(images, labels, {"Synthetic", o.num_classes, norm, {}});
}

}  // namespace

SynthDataset::SynthDataset(SynthOptions options) : InMemoryDataset(make_synthetic(options)) {}

}  // namespace rg::data
