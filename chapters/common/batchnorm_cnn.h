// The chapters' small CNN with BatchNorm (C04, C05): BatchNorm normalises each channel over
// the samples of *this device's* batch, so it is the one layer whose output depends on the
// local batch size and on which classes a device holds; DDP averages gradients but never
// these statistics. Without BatchNorm the same network has biases in its convolutions.
#pragma once
#include <cstdint>
#include <memory>

#include "data/dataset.h"
#include "nn/layers.h"

namespace rg::chapters {

struct BatchNormCNNOptions {
  data::ImageShape shape = {};
  bool batch_norm = true;
  uint64_t seed = 0;  // the weights are drawn from Generator(seed), not the shared default one
};

// x (B, C, H, W) -> conv 3x3, 8 -> [BN] -> ReLU -> pool 2 -> conv 3x3, 16 -> [BN] -> ReLU ->
// pool 2 -> linear -> logits (B, K). About 2k samples/s per core on 28x28 images.
class BatchNormCNN : public nn::Cloneable<BatchNormCNN> {
 public:
  explicit BatchNormCNN(const BatchNormCNNOptions& options);
  Variable forward(const Variable& x) override;
  const BatchNormCNNOptions& options() const { return options_; }

 private:
  static constexpr int64_t kHidden = 64;
  BatchNormCNNOptions options_;
  std::shared_ptr<nn::Sequential> layers_;     // the two convolution stages, flattened
  std::shared_ptr<nn::Linear> hidden_, out_;   // -> 64 -> K
  std::shared_ptr<nn::BatchNorm2d> hidden_norm_;  // null without BatchNorm
};

}  // namespace rg::chapters
