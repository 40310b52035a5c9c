// Tensor: an n-d view (shape, strides, offset, dtype) onto a shared Storage on a device.
// Views (view, permute, narrow, expand, ...) change metadata only and share storage;
// contiguous(), clone() and to() copy, and reshape() copies when no view fits the strides.
// Tensors know nothing of gradients (see autograd/).
#pragma once
#include <iosfwd>
#include <memory>
#include <vector>

#include "tensor/device.h"
#include "tensor/dtype.h"
#include "tensor/error.h"
#include "tensor/shape.h"
#include "tensor/storage.h"

namespace rg {

class Tensor {
 public:
  Tensor() = default;  // an undefined tensor; most calls on it throw
  Tensor(std::shared_ptr<Storage> storage, Shape shape, Shape strides, int64_t offset, DType dtype);

  // Fresh contiguous tensors; contents of empty() are unspecified.
  static Tensor empty(const Shape& shape, DType dtype = DType::float32, Device device = Device::cpu());
  static Tensor zeros(const Shape& shape, DType dtype = DType::float32, Device device = Device::cpu());
  static Tensor ones(const Shape& shape, DType dtype = DType::float32, Device device = Device::cpu());
  static Tensor full(const Shape& shape, double value, DType dtype = DType::float32, Device device = Device::cpu());
  static Tensor scalar(double value, DType dtype = DType::float32, Device device = Device::cpu());
  // Copies host values into a new CPU tensor of the matching dtype and the given shape.
  template <class T>
  static Tensor from_vector(const std::vector<T>& values, const Shape& shape);

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  int64_t dim() const { return static_cast<int64_t>(shape_.size()); }
  int64_t size(int64_t dim) const;  // negative dims count from the end
  int64_t numel() const { return numel_of(shape_); }
  int64_t offset() const { return offset_; }
  DType dtype() const { return dtype_; }
  Device device() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  bool is_contiguous() const;
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  // True when both views start at the same byte of the same storage.
  bool same_data(const Tensor& other) const;

  // Pointer to the first element (offset applied). T must match dtype(); CPU and CUDA
  // pointers alike (a CUDA pointer must only be handed to CUDA code).
  template <class T>
  T* data() const;
  void* raw_data() const;

  // ---- views: no copy (reshape copies only when no view fits the strides) ----
  Tensor view(const Shape& shape) const;     // needs compatible strides; one dim may be -1
  Tensor reshape(const Shape& shape) const;  // a view when possible, else a copy
  Tensor permute(const std::vector<int64_t>& dims) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor t() const;  // transpose of a 2-d tensor
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;  // Python-style bounds
  Tensor select(int64_t dim, int64_t index) const;  // removes `dim`
  Tensor expand(const Shape& shape) const;           // size-1 dims get stride 0; -1 keeps a dim
  Tensor broadcast_to(const Shape& shape) const { return expand(shape); }
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;

  // ---- copies ----
  Tensor contiguous() const;  // *this when already contiguous
  Tensor clone() const;
  Tensor to(Device device) const;  // always copies across devices (and counts the bytes)
  Tensor to(DType dtype) const;    // *this when the dtype already matches

  // ---- in place: no allocation. const, like PyTorch's: they change the data, not the view ----
  const Tensor& copy_(const Tensor& src) const;  // broadcasts src; casts dtype; may cross devices
  const Tensor& zero_() const;
  const Tensor& fill_(double value) const;
  const Tensor& add_(const Tensor& other, double alpha = 1.0) const;  // this += alpha * other
  const Tensor& sub_(const Tensor& other, double alpha = 1.0) const;
  const Tensor& mul_(const Tensor& other) const;
  const Tensor& mul_(double value) const;
  const Tensor& div_(const Tensor& other) const;
  const Tensor& add_(double value) const;

  // ---- reading values (copies to the host) ----
  double item() const;  // one-element tensors only
  template <class T>
  std::vector<T> to_vector() const;  // row-major, cast to T

 private:
  std::shared_ptr<Storage> storage_;
  Shape shape_;
  Shape strides_;
  int64_t offset_ = 0;
  DType dtype_ = DType::float32;
};

std::ostream& operator<<(std::ostream& out, const Tensor& t);

}  // namespace rg
