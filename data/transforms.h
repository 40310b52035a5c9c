// Transforms (torchvision's names): callables on an image (C, H, W) or a batch (B, C, H, W)
// that draw any randomness from the Generator they are given, so a loader that hands each
// batch its own stream gets the same augmentation whatever its number of workers.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "tensor/generator.h"
#include "tensor/tensor.h"

namespace rg::data {

using Transform = std::function<Tensor(const Tensor&, Generator&)>;

// Any dtype to float32, times `scale` (uint8 pixels 0..255 become 0..1).
struct ToFloat {
  double scale = 1.0 / 255.0;
  Tensor operator()(const Tensor& x, Generator& gen) const;
};

// (x - mean[c]) / std[c] per channel; one value applies to every channel.
struct Normalize {
  std::vector<float> mean = {};
  std::vector<float> std = {};
  Tensor operator()(const Tensor& x, Generator& gen) const;
};

// Zero-pads each side by `padding`, then cuts a size×size window at a random place,
// independently per image. On normalised input the zeros are the channel mean.
struct RandomCrop {
  int64_t size = 0;
  int64_t padding = 0;
  Tensor operator()(const Tensor& x, Generator& gen) const;
};

// Mirrors each image left-right with probability p.
struct RandomHorizontalFlip {
  double p = 0.5;
  Tensor operator()(const Tensor& x, Generator& gen) const;
};

// The transforms applied in order, all drawing from the same generator.
Transform compose(std::vector<Transform> transforms);

}  // namespace rg::data
