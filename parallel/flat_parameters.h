// Many tensors as few flat buffers, and hashes of their bytes: what the flat reducer, the
// asynchronous parameter server's messages and the replica checks share.
#pragma once
#include <cstdint>
#include <vector>

#include "autograd/variable.h"

namespace rg::parallel {

// 64-bit FNV-1a (Fowler, Noll, Vo) of n bytes, continuing from `hash`: fast, and enough to
// tell replicas or structures apart (not a cryptographic hash).
constexpr uint64_t kFnvOffsetBasis = 1469598103934665603ULL;
uint64_t fnv1a(const void* bytes, size_t n, uint64_t hash = kFnvOffsetBasis);
// Of a tensor's elements in order (copied to the CPU and made contiguous first).
uint64_t hash_tensor(const Tensor& t);

// `parameters` laid out back to back in one flat buffer per dtype (in order of first
// appearance), so that one message carries every parameter of a dtype. Buffers come from
// make_buffers() and live on the parameters' device.
class FlatParameters {
 public:
  explicit FlatParameters(std::vector<Variable> parameters);

  const std::vector<Variable>& parameters() const { return parameters_; }
  std::vector<Tensor> make_buffers() const;
  // Parameter i's slice of `buffers`, shaped like the parameter, and the buffer it is in.
  Tensor slice(const std::vector<Tensor>& buffers, size_t i) const;
  size_t group_of(size_t i) const { return places_[i].group; }
  // Of the dtypes and shapes, in order: equal on two ranks when their models match.
  int64_t structure_hash() const;

  void pack_data(const std::vector<Tensor>& buffers) const;
  void unpack_data(const std::vector<Tensor>& buffers) const;
  void pack_grads(const std::vector<Tensor>& buffers) const;    // an undefined grad packs as zeros
  void unpack_grads(const std::vector<Tensor>& buffers) const;  // creates grads where there are none
  void add_to_grads(const std::vector<Tensor>& buffers, double scale) const;  // grad += scale * slice

 private:
  struct Place {
    size_t group;  // which buffer
    int64_t offset;
  };

  std::vector<Variable> parameters_;
  std::vector<Place> places_;  // by parameter
  std::vector<DType> dtypes_;   // by group
  std::vector<int64_t> lengths_;
};

}  // namespace rg::parallel
