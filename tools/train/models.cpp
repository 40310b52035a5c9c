// The three models of ringgrad-train. mlp and cnn mirror the LibTorch reference in
// bench/libtorch layer for layer; resnet-small is a CIFAR-style ResNet (He et al. 2016,
// "Deep Residual Learning", section 4.2) with two basic blocks per stage.
#include "tools/train/models.h"

#include "nn/layers.h"

namespace rg::train {

namespace {

constexpr int64_t kBlocksPerStage = 2;

std::shared_ptr<nn::Module> make_mlp(const ImageShape& s) {
  // x: (B, C, H, W) -> (B, C*H*W) -> 256 -> 128 -> K
  return std::make_shared<nn::Sequential>(nn::Flatten(), nn::Linear(s.channels * s.height * s.width, 256),
                                          nn::ReLU(), nn::Linear(256, 128), nn::ReLU(), nn::Linear(128, s.num_classes));
}

std::shared_ptr<nn::Module> make_cnn(const ImageShape& s) {
  RG_CHECK(s.height >= 4 && s.width >= 4, "cnn: images must be at least 4x4, got ", s.height, "x", s.width);
  // x: (B, C, H, W) -> (B, 16, H/2, W/2) -> (B, 32, H/4, W/4) -> K
  return std::make_shared<nn::Sequential>(
      nn::Conv2d(s.channels, 16, 5, 1, 2), nn::ReLU(), nn::MaxPool2d(2), nn::Conv2d(16, 32, 5, 1, 2), nn::ReLU(),
      nn::MaxPool2d(2), nn::Flatten(), nn::Linear(32 * (s.height / 4) * (s.width / 4), s.num_classes));
}

nn::Conv2d conv_no_bias(int64_t in, int64_t out, int64_t kernel, int64_t stride) {
  // BatchNorm follows every conv, so a bias would be cancelled by its mean subtraction.
  return nn::Conv2d(nn::Conv2dOptions{.in_channels = in, .out_channels = out, .kernel_size = kernel,
                                      .stride = stride, .padding = kernel / 2, .bias = false});
}

struct BlockOptions {
  int64_t in = 16, out = 16, stride = 1;
};

// relu(bn(conv(relu(bn(conv(x))))) + shortcut(x)); the shortcut is a strided 1x1
// conv + BN when the shape changes, else the identity.
class BasicBlock : public nn::Cloneable<BasicBlock> {
 public:
  explicit BasicBlock(const BlockOptions& o) : options_(o) {
    conv1_ = register_module("conv1", conv_no_bias(o.in, o.out, 3, o.stride));
    bn1_ = register_module("bn1", nn::BatchNorm2d(o.out));
    conv2_ = register_module("conv2", conv_no_bias(o.out, o.out, 3, 1));
    bn2_ = register_module("bn2", nn::BatchNorm2d(o.out));
    if (o.stride != 1 || o.in != o.out) {
      shortcut_ = register_module("shortcut", nn::Sequential(conv_no_bias(o.in, o.out, 1, o.stride),
                                                             nn::BatchNorm2d(o.out)));
    }
  }
  Variable forward(const Variable& x) override {
    Variable y = bn2_->forward(conv2_->forward(relu(bn1_->forward(conv1_->forward(x)))));
    return relu(y + (shortcut_ ? shortcut_->forward(x) : x));
  }
  const BlockOptions& options() const { return options_; }

 private:
  BlockOptions options_;
  std::shared_ptr<nn::Conv2d> conv1_, conv2_;
  std::shared_ptr<nn::BatchNorm2d> bn1_, bn2_;
  std::shared_ptr<nn::Sequential> shortcut_;
};

class ResNetSmall : public nn::Cloneable<ResNetSmall> {
 public:
  explicit ResNetSmall(const ImageShape& s) : options_(s) {
    stem_ = register_module("stem",
                            nn::Sequential(conv_no_bias(s.channels, 16, 3, 1), nn::BatchNorm2d(16), nn::ReLU()));
    auto stages = std::make_shared<nn::Sequential>();
    int64_t in = 16;
    for (int64_t out : {16, 32, 64}) {
      for (int64_t b = 0; b < kBlocksPerStage; ++b) {
        const int64_t stride = (b == 0 && out != 16) ? 2 : 1;
        stages->push_back(BasicBlock({.in = in, .out = out, .stride = stride}));
        in = out;
      }
    }
    stages_ = register_module("stages", stages);
    fc_ = register_module("fc", nn::Linear(64, s.num_classes));
  }
  Variable forward(const Variable& x) override {
    Variable features = stages_->forward(stem_->forward(x));  // (B, 64, H/4, W/4)
    return fc_->forward(mean(features, {2, 3}));              // global average pool -> (B, 64)
  }
  const ImageShape& options() const { return options_; }

 private:
  ImageShape options_;
  std::shared_ptr<nn::Sequential> stem_, stages_;
  std::shared_ptr<nn::Linear> fc_;
};

}  // namespace

const std::vector<std::string>& model_names() {
  static const std::vector<std::string> names = {"mlp", "cnn", "resnet-small"};
  return names;
}

std::shared_ptr<nn::Module> make_model(const std::string& name, const ImageShape& shape) {
  if (name == "mlp") return make_mlp(shape);
  if (name == "cnn") return make_cnn(shape);
  if (name == "resnet-small") return std::make_shared<ResNetSmall>(shape);
  RG_THROW("unknown model '", name, "'");
}

}  // namespace rg::train
