// Parameter initialisation, as PyTorch's torch.nn.init, from an explicit Generator. Every
// function fills its tensor in place, and does nothing under an InitSkipGuard (clone()).
#pragma once
#include <utility>

#include "tensor/generator.h"
#include "tensor/tensor.h"

namespace rg::nn::init {

// (fan_in, fan_out) of a weight (out, in, k...): fan_in = in * prod(k), fan_out = out * prod(k).
std::pair<int64_t, int64_t> fans(const Tensor& weight);
void uniform_(const Tensor& t, Generator& gen, double low, double high);
void normal_(const Tensor& t, Generator& gen, double mean, double std);
void constant_(const Tensor& t, double value);
// He et al. 2015, uniform: bound = gain * sqrt(3 / fan_in), gain = sqrt(2 / (1 + a^2)).
// Linear and Conv2d use a = sqrt(5), i.e. bound = 1 / sqrt(fan_in).
void kaiming_uniform_(const Tensor& weight, Generator& gen, double a);
// Glorot & Bengio 2010: bound = gain * sqrt(6 / (fan_in + fan_out)).
void xavier_uniform_(const Tensor& weight, Generator& gen, double gain = 1.0);

}  // namespace rg::nn::init
