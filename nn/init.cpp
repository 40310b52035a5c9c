// Initialisation formulas; the bounds follow torch/nn/init.py (PyTorch 1.13).
#include "nn/init.h"

#include <cmath>

#include "nn/module.h"
#include "tensor/ops.h"

namespace rg::nn::init {

std::pair<int64_t, int64_t> fans(const Tensor& weight) {
  RG_CHECK(weight.dim() >= 2, "init: fan in and fan out need a weight of at least 2 dims, got shape ",
           shape_str(weight.shape()));
  int64_t receptive = weight.numel() / (weight.size(0) * weight.size(1));
  return {weight.size(1) * receptive, weight.size(0) * receptive};
}

void uniform_(const Tensor& t, Generator& gen, double low, double high) {
  if (!is_init_skipped()) rg::uniform_(t, gen, low, high);
}

void normal_(const Tensor& t, Generator& gen, double mean, double std) {
  if (!is_init_skipped()) rg::normal_(t, gen, mean, std);
}

void constant_(const Tensor& t, double value) {
  if (!is_init_skipped()) t.fill_(value);
}

void kaiming_uniform_(const Tensor& weight, Generator& gen, double a) {
  double gain = std::sqrt(2.0 / (1.0 + a * a));
  double bound = gain * std::sqrt(3.0 / static_cast<double>(fans(weight).first));
  init::uniform_(weight, gen, -bound, bound);
}

void xavier_uniform_(const Tensor& weight, Generator& gen, double gain) {
  auto [fan_in, fan_out] = fans(weight);
  double bound = gain * std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  init::uniform_(weight, gen, -bound, bound);
}

}  // namespace rg::nn::init
