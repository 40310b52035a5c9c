// Tensor metadata, views and copies. Views only compute new shape/strides/offset;
// anything that moves data goes through the device's Backend.
#include "tensor/tensor.h"

#include <algorithm>
#include <optional>

#include "tensor/backend.h"
#include "tensor/ops.h"

namespace rg {

// Every tensor, fresh or a view, passes here: sizes and strides are >= 0, the element
// count and its bytes fit in int64 (so nbytes() cannot wrap, expanded views included), and
// the last element lies inside the storage. So no view arithmetic (view, narrow, slice,
// expand, select, ...) can reach memory outside the storage it shares, whatever sizes it
// was given.
static void check_layout(const Storage* storage, const Shape& shape, const Shape& strides, int64_t offset,
                         DType dtype) {
  RG_CHECK(storage != nullptr, "tensor: no storage");
  RG_CHECK(shape.size() == strides.size(), "tensor: shape ", shape_str(shape), " and strides ", shape_str(strides),
           " differ in rank");
  const auto element_bytes = static_cast<int64_t>(dtype_size(dtype));
  const int64_t numel = numel_of(shape, "tensor");
  checked_mul(numel, element_bytes, "tensor bytes");
  RG_CHECK(offset >= 0, "tensor: negative offset ", offset);
  int64_t last = offset;  // the element farthest from the start
  for (size_t i = 0; i < shape.size(); ++i) {
    RG_CHECK(strides[i] >= 0, "tensor: negative stride in ", shape_str(strides));
    if (numel > 0) last = checked_add(last, checked_mul(shape[i] - 1, strides[i], "tensor extent"), "tensor extent");
  }
  checked_mul(last, element_bytes, "tensor byte offset");  // raw_data() computes it
  const auto capacity = static_cast<int64_t>(storage->nbytes()) / element_bytes;
  RG_CHECK(numel == 0 || last < capacity, "tensor: a view of shape ", shape_str(shape), ", strides ",
           shape_str(strides), " and offset ", offset, " reaches element ", last, " of a storage of ", capacity);
}

Tensor::Tensor(std::shared_ptr<Storage> storage, Shape shape, Shape strides, int64_t offset, DType dtype)
    : storage_(std::move(storage)), shape_(std::move(shape)), strides_(std::move(strides)), offset_(offset), dtype_(dtype) {
  check_layout(storage_.get(), shape_, strides_, offset_, dtype_);
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  const int64_t nbytes = checked_mul(numel_of(shape, "empty"), static_cast<int64_t>(dtype_size(dtype)), "empty: bytes");
  auto storage = std::make_shared<Storage>(static_cast<size_t>(nbytes), device);
  return Tensor(std::move(storage), shape, contiguous_strides(shape), 0, dtype);
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) { return full(shape, 0.0, dtype, device); }
Tensor Tensor::ones(const Shape& shape, DType dtype, Device device) { return full(shape, 1.0, dtype, device); }

Tensor Tensor::full(const Shape& shape, double value, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  t.fill_(value);
  return t;
}

Tensor Tensor::scalar(double value, DType dtype, Device device) { return full({}, value, dtype, device); }

template <class T>
Tensor Tensor::from_vector(const std::vector<T>& values, const Shape& shape) {
  RG_CHECK(static_cast<int64_t>(values.size()) == numel_of(shape, "from_vector"), "from_vector: ", values.size(),
           " values do not fill shape ", shape_str(shape), " (", numel_of(shape), " elements)");
  Tensor t = empty(shape, dtype_of<T>());
  std::copy(values.begin(), values.end(), t.data<T>());
  return t;
}
template Tensor Tensor::from_vector(const std::vector<float>&, const Shape&);
template Tensor Tensor::from_vector(const std::vector<double>&, const Shape&);
template Tensor Tensor::from_vector(const std::vector<int64_t>&, const Shape&);
template Tensor Tensor::from_vector(const std::vector<int32_t>&, const Shape&);
template Tensor Tensor::from_vector(const std::vector<uint8_t>&, const Shape&);

int64_t Tensor::size(int64_t d) const { return shape_[wrap_dim(d, dim(), "size")]; }

Device Tensor::device() const {
  RG_CHECK(defined(), "device: the tensor is undefined");
  return storage_->device();
}

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (size_t i = shape_.size(); i-- > 0;) {
    if (shape_[i] == 1) continue;
    if (strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

bool Tensor::same_data(const Tensor& other) const {
  return storage_ && storage_ == other.storage_ && offset_ * dtype_size(dtype_) == other.offset_ * dtype_size(other.dtype_);
}

void* Tensor::raw_data() const {
  RG_CHECK(defined(), "data: the tensor is undefined");
  return static_cast<char*>(storage_->data()) + offset_ * static_cast<int64_t>(dtype_size(dtype_));
}

template <class T>
T* Tensor::data() const {
  RG_CHECK(dtype_of<T>() == dtype_, "data<", dtype_name(dtype_of<T>()), ">: the tensor holds ", dtype_name(dtype_));
  return static_cast<T*>(raw_data());
}
template float* Tensor::data() const;
template double* Tensor::data() const;
template int64_t* Tensor::data() const;
template int32_t* Tensor::data() const;
template uint8_t* Tensor::data() const;

// ---- views ----

// Resolves one -1 in a requested shape against the element count.
static Shape infer_shape(const Shape& requested, const Shape& source, const char* op) {
  int64_t numel = numel_of(source);
  Shape shape = requested;
  int64_t known = 1, infer_at = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      RG_CHECK(infer_at < 0, op, ": only one dim may be -1 in ", shape_str(requested));
      infer_at = static_cast<int64_t>(i);
    } else {
      RG_CHECK(shape[i] >= 0, op, ": invalid size ", shape[i], " in ", shape_str(requested));
      known = checked_mul(known, shape[i], op);
    }
  }
  if (infer_at >= 0) {
    RG_CHECK(known != 0 && numel % known == 0, op, ": shape ", shape_str(requested), " is invalid for a tensor of shape ",
             shape_str(source), " (", numel, " elements)");
    shape[infer_at] = numel / known;
  }
  RG_CHECK(numel_of(shape) == numel, op, ": shape ", shape_str(requested), " is invalid for a tensor of shape ",
           shape_str(source), " (", numel, " elements)");
  return shape;
}

// Strides for viewing (shape, strides) as `target` without a copy, or nothing when the
// memory layout does not allow it. Old dims are walked from the back in "chunks" that are
// contiguous in memory; each chunk must be covered exactly by a run of new dims
// (the algorithm of PyTorch's computeStride).
static std::optional<Shape> view_strides(const Shape& shape, const Shape& strides, const Shape& target) {
  if (shape.empty() || numel_of(shape) == 0) return contiguous_strides(target);
  Shape out(target.size());
  int64_t view_d = static_cast<int64_t>(target.size()) - 1;
  int64_t chunk_base_stride = strides.back(), chunk_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    chunk_numel *= shape[d];
    bool chunk_ends = d == 0 || (shape[d - 1] != 1 && strides[d - 1] != chunk_numel * chunk_base_stride);
    if (!chunk_ends) continue;
    while (view_d >= 0 && (view_numel < chunk_numel || target[view_d] == 1)) {
      out[view_d] = view_numel * chunk_base_stride;
      view_numel *= target[view_d];
      --view_d;
    }
    if (view_numel != chunk_numel) return std::nullopt;
    if (d > 0) {
      chunk_base_stride = strides[d - 1];
      chunk_numel = view_numel = 1;
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

Tensor Tensor::view(const Shape& requested) const {
  Shape shape = infer_shape(requested, shape_, "view");
  auto strides = view_strides(shape_, strides_, shape);
  RG_CHECK(strides.has_value(), "view: cannot view a tensor of shape ", shape_str(shape_), " with strides ",
           shape_str(strides_), " as ", shape_str(shape), " without a copy; use reshape()");
  return Tensor(storage_, shape, *strides, offset_, dtype_);
}

Tensor Tensor::reshape(const Shape& requested) const {
  Shape shape = infer_shape(requested, shape_, "reshape");
  if (auto strides = view_strides(shape_, strides_, shape)) return Tensor(storage_, shape, *strides, offset_, dtype_);
  return contiguous().view(shape);
}

Tensor Tensor::permute(const std::vector<int64_t>& dims) const {
  RG_CHECK(static_cast<int64_t>(dims.size()) == dim(), "permute: got ", dims.size(), " dims for a tensor with ", dim(),
           " dims ", shape_str(shape_));
  Shape shape(dims.size()), strides(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = wrap_dim(dims[i], dim(), "permute");
    RG_CHECK(!seen[d], "permute: dim ", d, " appears twice in ", shape_str(dims));
    seen[d] = true;
    shape[i] = shape_[d];
    strides[i] = strides_[d];
  }
  return Tensor(storage_, shape, strides, offset_, dtype_);
}

Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const {
  int64_t a = wrap_dim(dim0, dim(), "transpose"), b = wrap_dim(dim1, dim(), "transpose");
  Shape shape = shape_, strides = strides_;
  std::swap(shape[a], shape[b]);
  std::swap(strides[a], strides[b]);
  return Tensor(storage_, shape, strides, offset_, dtype_);
}

Tensor Tensor::t() const {
  RG_CHECK(dim() == 2, "t: expects a 2-d tensor, got shape ", shape_str(shape_));
  return transpose(0, 1);
}

// The offset of element `index` along a dim of `stride` (checked: the strides of an empty
// view are not bounded by its storage).
static int64_t moved_offset(int64_t offset, int64_t index, int64_t stride, const char* op) {
  return checked_add(offset, checked_mul(index, stride, op), op);
}

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  d = wrap_dim(d, dim(), "narrow");
  RG_CHECK(start >= 0 && length >= 0 && start <= shape_[d] && length <= shape_[d] - start, "narrow: start ", start,
           " and length ", length, " are outside dim ", d, " of size ", shape_[d], " (shape ", shape_str(shape_), ")");
  Shape shape = shape_;
  shape[d] = length;
  return Tensor(storage_, shape, strides_, moved_offset(offset_, start, strides_[d], "narrow"), dtype_);
}

Tensor Tensor::slice(int64_t d, int64_t start, int64_t end, int64_t step) const {
  d = wrap_dim(d, dim(), "slice");
  RG_CHECK(step > 0, "slice: step must be positive, got ", step);
  int64_t n = shape_[d];
  auto clip = [n](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + n : i, 0, n); };
  start = clip(start);
  end = std::max(clip(end), start);
  Shape shape = shape_, strides = strides_;
  shape[d] = end > start ? (end - start - 1) / step + 1 : 0;
  if (shape[d] > 1) strides[d] = checked_mul(strides[d], step, "slice");  // else the stride is never used
  return Tensor(storage_, shape, strides, moved_offset(offset_, start, strides_[d], "slice"), dtype_);
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  d = wrap_dim(d, dim(), "select");
  RG_CHECK(index >= -shape_[d] && index < shape_[d], "select: index ", index, " is out of range for dim ", d,
           " of size ", shape_[d]);
  if (index < 0) index += shape_[d];
  Shape shape = shape_, strides = strides_;
  shape.erase(shape.begin() + d);
  strides.erase(strides.begin() + d);
  return Tensor(storage_, shape, strides, moved_offset(offset_, index, strides_[d], "select"), dtype_);
}

Tensor Tensor::expand(const Shape& target) const {
  RG_CHECK(target.size() >= shape_.size(), "expand: cannot expand shape ", shape_str(shape_), " to fewer dims ",
           shape_str(target));
  size_t lead = target.size() - shape_.size();
  Shape shape(target.size()), strides(target.size(), 0);
  for (size_t i = 0; i < target.size(); ++i) {
    if (i < lead) {
      RG_CHECK(target[i] >= 0, "expand: new leading dim ", i, " cannot be ", target[i]);
      shape[i] = target[i];
      continue;
    }
    int64_t have = shape_[i - lead], want = target[i] == -1 ? have : target[i];
    RG_CHECK(want >= 0 && (have == want || have == 1), "expand: shape ", shape_str(shape_), " cannot be expanded to ",
             shape_str(target), " (dim ", i, ": ", have, " vs ", want, ")");
    shape[i] = want;
    strides[i] = have == want ? strides_[i - lead] : 0;
  }
  return Tensor(storage_, shape, strides, offset_, dtype_);
}

Tensor Tensor::squeeze() const {
  Shape shape, strides;
  for (size_t i = 0; i < shape_.size(); ++i)
    if (shape_[i] != 1) shape.push_back(shape_[i]), strides.push_back(strides_[i]);
  return Tensor(storage_, shape, strides, offset_, dtype_);
}

Tensor Tensor::squeeze(int64_t d) const {
  d = wrap_dim(d, dim(), "squeeze");
  if (shape_[d] != 1) return *this;
  return select(d, 0);
}

Tensor Tensor::unsqueeze(int64_t d) const {
  d = wrap_dim(d, dim() + 1, "unsqueeze");
  Shape shape = shape_, strides = strides_;
  int64_t stride = d < dim() ? checked_mul(strides_[d], shape_[d], "unsqueeze") : 1;
  shape.insert(shape.begin() + d, 1);
  strides.insert(strides.begin() + d, stride);
  return Tensor(storage_, shape, strides, offset_, dtype_);
}

Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  if (dim() == 0) return reshape({1});
  int64_t s = wrap_dim(start_dim, dim(), "flatten"), e = wrap_dim(end_dim, dim(), "flatten");
  RG_CHECK(s <= e, "flatten: start_dim ", start_dim, " comes after end_dim ", end_dim);
  Shape shape(shape_.begin(), shape_.begin() + s);
  int64_t merged = 1;
  for (int64_t i = s; i <= e; ++i) merged = checked_mul(merged, shape_[i], "flatten");
  shape.push_back(merged);
  shape.insert(shape.end(), shape_.begin() + e + 1, shape_.end());
  return reshape(shape);
}

// ---- copies ----

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  return clone();
}

Tensor Tensor::clone() const {
  RG_CHECK(defined(), "clone: the tensor is undefined");
  Tensor out = empty(shape_, dtype_, device());
  backend_for(device().type).copy(*this, out);
  return out;
}

Tensor Tensor::to(Device target) const {
  RG_CHECK(defined(), "to: the tensor is undefined");
  Tensor out = empty(shape_, dtype_, target);
  out.copy_(*this);
  return out;
}

Tensor Tensor::to(DType target) const {
  RG_CHECK(defined(), "to: the tensor is undefined");
  if (target == dtype_) return *this;
  Tensor out = empty(shape_, target, device());
  backend_for(device().type).copy(*this, out);
  return out;
}

// ---- in place ----

const Tensor& Tensor::copy_(const Tensor& src) const {
  Tensor from = src.expand(shape_);
  Device here = device(), there = src.device();
  if (here != there) record_copy(there, here, nbytes());
  // A copy touching a CUDA device is the CUDA backend's job (host<->device, peer).
  DeviceType type = here.is_cuda() || there.is_cuda() ? DeviceType::cuda : DeviceType::cpu;
  backend_for(type).copy(from, *this);
  return *this;
}

const Tensor& Tensor::zero_() const { return fill_(0.0); }

const Tensor& Tensor::fill_(double value) const {
  backend_for(device().type).fill(*this, value);
  return *this;
}

const Tensor& Tensor::add_(const Tensor& other, double alpha) const {
  binary_into(BinaryOp::add, *this, other, *this, alpha);
  return *this;
}
const Tensor& Tensor::sub_(const Tensor& other, double alpha) const {
  binary_into(BinaryOp::sub, *this, other, *this, alpha);
  return *this;
}
const Tensor& Tensor::mul_(const Tensor& other) const {
  binary_into(BinaryOp::mul, *this, other, *this);
  return *this;
}
const Tensor& Tensor::div_(const Tensor& other) const {
  binary_into(BinaryOp::div, *this, other, *this);
  return *this;
}
const Tensor& Tensor::mul_(double value) const {
  backend_for(device().type).binary_scalar(BinaryOp::mul, *this, value, *this);
  return *this;
}
const Tensor& Tensor::add_(double value) const {
  backend_for(device().type).binary_scalar(BinaryOp::add, *this, value, *this);
  return *this;
}

// ---- reading values ----

double Tensor::item() const {
  RG_CHECK(defined(), "item: the tensor is undefined");
  RG_CHECK(numel() == 1, "item: expects a tensor with one element, got shape ", shape_str(shape_));
  return to_vector<double>()[0];
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  RG_CHECK(defined(), "to_vector: the tensor is undefined");
  Tensor host = (device().is_cpu() ? *this : to(Device::cpu())).to(dtype_of<T>()).contiguous();
  const T* p = host.data<T>();
  return std::vector<T>(p, p + host.numel());
}
template std::vector<float> Tensor::to_vector() const;
template std::vector<double> Tensor::to_vector() const;
template std::vector<int64_t> Tensor::to_vector() const;
template std::vector<int32_t> Tensor::to_vector() const;
template std::vector<uint8_t> Tensor::to_vector() const;

}  // namespace rg
