// SynthDataset ("Synthetic"): K classes of Gaussian blobs around random class prototypes in
// C×H×W images, fully determined by the seed and linearly separable at the default noise.
// For tests and demos that must run in a blink without any files.
#pragma once
#include <cstdint>

#include "data/dataset.h"

namespace rg::data {

struct SynthOptions {
  int64_t size = 1024;
  int64_t num_classes = 10;
  int64_t channels = 1;
  int64_t height = 8;
  int64_t width = 8;
  double noise = 0.1;  // std of the per-pixel Gaussian noise, in [0, 1] pixel units
  uint64_t seed = 0;
};

class SynthDataset : public InMemoryDataset {
 public:
  explicit SynthDataset(SynthOptions options = {});
};

}  // namespace rg::data
