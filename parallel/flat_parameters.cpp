// FlatParameters and the FNV-1a hashes.
#include "parallel/flat_parameters.h"

#include <algorithm>

#include "tensor/ops.h"

namespace rg::parallel {

uint64_t fnv1a(const void* bytes, size_t n, uint64_t hash) {
  const auto* p = static_cast<const unsigned char*>(bytes);
  for (size_t i = 0; i < n; ++i) hash = (hash ^ p[i]) * 1099511628211ULL;
  return hash;
}

uint64_t hash_tensor(const Tensor& t) {
  const Tensor dense = t.to(Device::cpu()).contiguous();
  return fnv1a(dense.raw_data(), dense.nbytes());
}

FlatParameters::FlatParameters(std::vector<Variable> parameters) : parameters_(std::move(parameters)) {
  for (const Variable& p : parameters_) {
    auto group = std::find(dtypes_.begin(), dtypes_.end(), p.dtype());
    if (group == dtypes_.end()) {
      dtypes_.push_back(p.dtype());
      lengths_.push_back(0);
      group = dtypes_.end() - 1;
    }
    const auto g = static_cast<size_t>(group - dtypes_.begin());
    places_.push_back({g, lengths_[g]});
    lengths_[g] += p.numel();
  }
}

std::vector<Tensor> FlatParameters::make_buffers() const {
  const Device device = parameters_.empty() ? Device::cpu() : parameters_.front().device();
  std::vector<Tensor> buffers;
  for (size_t g = 0; g < dtypes_.size(); ++g) buffers.push_back(Tensor::zeros({lengths_[g]}, dtypes_[g], device));
  return buffers;
}

Tensor FlatParameters::slice(const std::vector<Tensor>& buffers, size_t i) const {
  const Variable& p = parameters_[i];
  return buffers[places_[i].group].narrow(0, places_[i].offset, p.numel()).view(p.shape());
}

int64_t FlatParameters::structure_hash() const {
  uint64_t hash = kFnvOffsetBasis;
  auto mix = [&](int64_t v) { hash = fnv1a(&v, sizeof v, hash); };
  for (const Variable& p : parameters_) {
    mix(static_cast<int64_t>(p.dtype()));
    for (int64_t d : p.shape()) mix(d);
    mix(-1);
  }
  return static_cast<int64_t>(hash);
}

void FlatParameters::pack_data(const std::vector<Tensor>& buffers) const {
  for (size_t i = 0; i < parameters_.size(); ++i) slice(buffers, i).copy_(parameters_[i].data());
}

void FlatParameters::unpack_data(const std::vector<Tensor>& buffers) const {
  for (size_t i = 0; i < parameters_.size(); ++i) parameters_[i].data().copy_(slice(buffers, i));
}

void FlatParameters::pack_grads(const std::vector<Tensor>& buffers) const {
  for (size_t i = 0; i < parameters_.size(); ++i) {
    const Tensor& grad = parameters_[i].grad();
    if (grad.defined())
      slice(buffers, i).copy_(grad);
    else
      slice(buffers, i).zero_();
  }
}

void FlatParameters::unpack_grads(const std::vector<Tensor>& buffers) const {
  for (size_t i = 0; i < parameters_.size(); ++i) {
    Variable p = parameters_[i];
    if (!p.grad().defined()) p.set_grad(zeros_like(p.data()));
    p.grad().copy_(slice(buffers, i));
  }
}

void FlatParameters::add_to_grads(const std::vector<Tensor>& buffers, double scale) const {
  for (size_t i = 0; i < parameters_.size(); ++i) {
    Variable p = parameters_[i];
    if (!p.grad().defined()) p.set_grad(zeros_like(p.data()));
    p.grad().add_(slice(buffers, i), scale);
  }
}

}  // namespace rg::parallel
