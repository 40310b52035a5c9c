// The CPU Backend object (memory per virtual device, forwarding to the kernel files) and
// the data-movement kernels: strided copy with casts, fill, arange, random.
#include "tensor/cpu/cpu_backend.h"

#include <cblas.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "tensor/cpu/strided.h"
#include "tensor/philox.h"

namespace rg {

namespace {

constexpr size_t kAlignment = 64;  // a cache line, and enough for any SIMD load

class CpuBackend final : public Backend {
 public:
  CpuBackend() {
    // Parallelism comes from our own pool; OpenBLAS threads would fight it (see thread_pool.h).
    openblas_set_num_threads(1);
  }
  const char* name() const override { return "cpu"; }

  void* allocate(size_t nbytes, int device) override { return allocator(device).allocate(nbytes); }
  void deallocate(void* ptr, size_t nbytes, int device) override { allocator(device).deallocate(ptr, nbytes); }
  AllocatorStats memory_stats(int device) override { return allocator(device).stats(); }
  void empty_cache(int device) override { allocator(device).empty_cache(); }

  void copy(const Tensor& src, const Tensor& dst) override { cpu::copy(src, dst); }
  void fill(const Tensor& dst, double value) override { cpu::fill(dst, value); }
  void arange(const Tensor& dst, double start, double step) override { cpu::arange(dst, start, step); }
  void random(const Tensor& dst, RandomKind kind, uint64_t seed, uint64_t offset, double a, double b) override {
    cpu::random(dst, kind, seed, offset, a, b);
  }
  void unary(UnaryOp op, const Tensor& src, const Tensor& dst) override { cpu::unary(op, src, dst); }
  void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& dst, double alpha) override {
    cpu::binary(op, a, b, dst, alpha);
  }
  void binary_scalar(BinaryOp op, const Tensor& a, double scalar, const Tensor& dst) override {
    cpu::binary_scalar(op, a, scalar, dst);
  }
  void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& dst) override {
    cpu::where(cond, a, b, dst);
  }
  void clamp(const Tensor& src, const Tensor& dst, double low, double high) override {
    cpu::clamp(src, dst, low, high);
  }
  void reduce(DimReduction op, const Tensor& src, const Tensor& dst) override { cpu::reduce(op, src, dst); }
  void softmax(const Tensor& src, const Tensor& dst, int64_t dim, bool log) override {
    cpu::softmax(src, dst, dim, log);
  }
  void matmul(const Tensor& a, const Tensor& b, const Tensor& out) override { cpu::matmul(a, b, out); }
  void im2col(const Tensor& x, const Tensor& cols, const Conv2dGeometry& g) override { cpu::im2col(x, cols, g); }
  void col2im(const Tensor& cols, const Tensor& x, const Conv2dGeometry& g) override { cpu::col2im(cols, x, g); }
  void conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y, const Conv2dGeometry& g) override {
    cpu::conv2d(x, w, bias, y, g);
  }
  void conv2d_backward(const Tensor& x, const Tensor& w, const Tensor& grad_y, const Tensor& grad_x,
                       const Tensor& grad_w, const Tensor& grad_bias, const Conv2dGeometry& g) override {
    cpu::conv2d_backward(x, w, grad_y, grad_x, grad_w, grad_bias, g);
  }
  void max_pool2d(const Tensor& x, const Tensor& out, const Tensor& indices, const Conv2dGeometry& g) override {
    cpu::max_pool2d(x, out, indices, g);
  }
  void avg_pool2d(const Tensor& x, const Tensor& out, const Conv2dGeometry& g) override {
    cpu::avg_pool2d(x, out, g);
  }
  void avg_pool2d_backward(const Tensor& grad_out, const Tensor& grad_in, const Conv2dGeometry& g) override {
    cpu::avg_pool2d_backward(grad_out, grad_in, g);
  }
  void index_select(const Tensor& src, int64_t dim, const Tensor& index, const Tensor& dst) override {
    cpu::index_select(src, dim, index, dst);
  }
  void gather(const Tensor& src, int64_t dim, const Tensor& index, const Tensor& dst) override {
    cpu::gather(src, dim, index, dst);
  }
  void scatter_add(const Tensor& dst, int64_t dim, const Tensor& index, const Tensor& src) override {
    cpu::scatter_add(dst, dim, index, src);
  }

 private:
  // One allocator per virtual CPU device: `cpu:i` owns its memory, as a GPU would. Each
  // thread remembers the allocators it has used (they live as long as the backend), so an
  // allocation takes no lock besides the allocator's own.
  CachingAllocator& allocator(int device) {
    thread_local std::map<int, CachingAllocator*> known;
    CachingAllocator*& mine = known[device];
    if (!mine) mine = &shared_allocator(device);
    return *mine;
  }
  CachingAllocator& shared_allocator(int device) {
    std::lock_guard lock(mutex_);
    auto& slot = allocators_[device];
    if (!slot) {
      slot = std::make_unique<CachingAllocator>(
          [](size_t n) { return std::aligned_alloc(kAlignment, (n + kAlignment - 1) / kAlignment * kAlignment); },
          [](void* p) { std::free(p); });
    }
    return *slot;
  }
  std::mutex mutex_;
  std::map<int, std::unique_ptr<CachingAllocator>> allocators_;
};

}  // namespace

Backend& cpu_backend() {
  static CpuBackend instance;  // built on first use, never during static initialisation
  return instance;
}

namespace cpu {

template <class To, class From>
static void copy_typed(const Tensor& src, const Tensor& dst) {
  if (src.is_contiguous() && dst.is_contiguous() && std::is_same_v<To, From>) {
    std::memcpy(dst.raw_data(), src.raw_data(), dst.nbytes());
    return;
  }
  for_each_run<2>(dst.shape(), {&dst.strides(), &src.strides()}, {(char*)dst.raw_data(), (char*)src.raw_data()},
                  {sizeof(To), sizeof(From)}, [](auto p, auto s, int64_t n) {
                    To* out = reinterpret_cast<To*>(p[0]);
                    const From* in = reinterpret_cast<const From*>(p[1]);
                    for (int64_t i = 0; i < n; ++i) out[i * s[0]] = static_cast<To>(in[i * s[1]]);
                  });
}

void copy(const Tensor& src, const Tensor& dst) {
  dispatch(dst.dtype(), [&](auto to) {
    dispatch(src.dtype(), [&](auto from) { copy_typed<decltype(to), decltype(from)>(src, dst); });
  });
}

void fill(const Tensor& dst, double value) {
  dispatch(dst.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T v = static_cast<T>(value);
    for_each_run<1>(dst.shape(), {&dst.strides()}, {(char*)dst.raw_data()}, {sizeof(T)},
                    [v](auto p, auto s, int64_t n) {
                      T* out = reinterpret_cast<T*>(p[0]);
                      if (s[0] == 1)
                        std::fill(out, out + n, v);
                      else
                        for (int64_t i = 0; i < n; ++i) out[i * s[0]] = v;
                    });
  });
}

void arange(const Tensor& dst, double start, double step) {
  dispatch(dst.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* out = dst.data<T>();
    for (int64_t i = 0; i < dst.numel(); ++i) out[i] = static_cast<T>(start + static_cast<double>(i) * step);
  });
}

// Element i of a fill is a pure function of (seed, offset, i) — see philox.h — so the
// work can be split over threads without changing a single value.
template <class T>
static T random_value(RandomKind kind, uint64_t seed, uint64_t offset, int64_t i, double a, double b) {
  using namespace philox;
  uint64_t w = offset + static_cast<uint64_t>(i);
  switch (kind) {
    case RandomKind::uniform:
      if constexpr (std::is_same_v<T, float>) {
        return uniform_in(uniform_float(word(seed, w)), static_cast<float>(a), static_cast<float>(b));
      } else {
        uint64_t w2 = offset + 2 * static_cast<uint64_t>(i);
        return static_cast<T>(uniform_in(uniform_double(word(seed, w2), word(seed, w2 + 1)), a, b));
      }
    case RandomKind::normal: {
      uint64_t w2 = offset + 2 * static_cast<uint64_t>(i);
      return static_cast<T>(a + b * normal_from(word(seed, w2), word(seed, w2 + 1)));
    }
    case RandomKind::randint:
      return static_cast<T>(static_cast<int64_t>(a) + bounded(word(seed, w), static_cast<uint64_t>(b - a)));
  }
  return T{};
}

void random(const Tensor& dst, RandomKind kind, uint64_t seed, uint64_t offset, double a, double b) {
  dispatch(dst.dtype(), [&](auto tag) {
    using T = decltype(tag);
    Tensor out = dst.is_contiguous() ? dst : Tensor::empty(dst.shape(), dst.dtype());
    T* p = out.data<T>();
    parallel_for(0, out.numel(), 16384, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) p[i] = random_value<T>(kind, seed, offset, i, a, b);
    });
    if (!out.same_data(dst)) copy(out, dst);
  });
}

}  // namespace cpu
}  // namespace rg
