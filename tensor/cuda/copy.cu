// Copies host<->device, within a device and across devices, with any strides and any
// pair of dtypes, and fill. A dense copy of one dtype is one cudaMemcpyAsync; everything
// else goes through one strided casting kernel, run on the device side of the copy.
#include <cmath>
#include <mutex>
#include <optional>
#include <set>
#include <utility>

#include "tensor/cuda/cuda_common.cuh"
#include "tensor/cuda/cuda_ops.h"

namespace rg::cuda {
namespace {

template <class S, class D>
__global__ void cast_copy_kernel(const S* src, D* dst, Indexer<2> ix, int64_t n) {
  RG_GRID_STRIDE_LOOP(i, n) {
    int64_t off[2];
    ix.offsets(i, off);
    dst[off[0]] = static_cast<D>(src[off[1]]);
  }
}

template <class T>
__global__ void fill_kernel(T* dst, Indexer<1> ix, int64_t n, T value) {
  RG_GRID_STRIDE_LOOP(i, n) {
    int64_t off[1];
    ix.offsets(i, off);
    dst[off[0]] = value;
  }
}

// Device memory seen as a strided array: a Tensor, or a dense scratch buffer.
struct View {
  void* data;
  DType dtype;
  Shape shape;
  Shape strides;

  static View of(const Tensor& t) { return {t.raw_data(), t.dtype(), t.shape(), t.strides()}; }
  static View dense(void* data, DType dtype, const Shape& shape) {
    return {data, dtype, shape, contiguous_strides(shape)};
  }
};

// dst = cast(src), both in the memory of `device`, on that device's stream.
void copy_on_device(const View& src, const View& dst, int device) {
  const int64_t n = numel_of(dst.shape);
  if (n == 0) return;
  cudaStream_t stream = stream_for(device);
  const Indexer<2> ix = make_indexer<2>(dst.shape, {&dst.strides, &src.strides});
  const bool dense = ix.ndim == 0 || (ix.ndim == 1 && ix.strides[0][0] == 1 && ix.strides[1][0] == 1);
  if (dense && src.dtype == dst.dtype) {
    RG_CUDA_CHECK(cudaMemcpyAsync(dst.data, src.data, static_cast<size_t>(n) * dtype_size(dst.dtype),
                                  cudaMemcpyDeviceToDevice, stream));
    return;
  }
  dispatch(src.dtype, [&](auto src_tag) {
    using S = decltype(src_tag);
    dispatch(dst.dtype, [&](auto dst_tag) {
      using D = decltype(dst_tag);
      RG_CUDA_LAUNCH((cast_copy_kernel<S, D>), n, stream, static_cast<const S*>(src.data), static_cast<D*>(dst.data),
                     ix, n);
    });
  });
}

// Host memory from the CPU allocator is pageable: cudaMemcpyAsync returns once it has
// staged the bytes, so the host buffer may be released right after the call.
void host_to_device(const Tensor& src, const Tensor& dst) {
  const int device = dst.device().index;
  cudaStream_t stream = stream_for(device);
  const Tensor host = src.contiguous();  // a staging copy on the host when src is strided
  if (dst.is_contiguous() && dst.dtype() == host.dtype()) {
    RG_CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), host.raw_data(), host.nbytes(), cudaMemcpyHostToDevice, stream));
    return;
  }
  DeviceBuffer staging(device, host.nbytes());
  RG_CUDA_CHECK(cudaMemcpyAsync(staging.data(), host.raw_data(), host.nbytes(), cudaMemcpyHostToDevice, stream));
  copy_on_device(View::dense(staging.data(), host.dtype(), host.shape()), View::of(dst), device);
}

// Casts and gathers on the device, so one dense block of dst's dtype crosses the bus;
// a strided host dst receives it through a host staging tensor.
void device_to_host(const Tensor& src, const Tensor& dst) {
  const int device = src.device().index;
  cudaStream_t stream = stream_for(device);
  std::optional<DeviceBuffer> packed;
  const void* bytes = src.raw_data();
  if (!src.is_contiguous() || src.dtype() != dst.dtype()) {
    packed.emplace(device, dst.nbytes());
    copy_on_device(View::of(src), View::dense(packed->data(), dst.dtype(), dst.shape()), device);
    bytes = packed->data();
  }
  const Tensor host = dst.is_contiguous() ? dst : Tensor::empty(dst.shape(), dst.dtype(), dst.device());
  RG_CUDA_CHECK(cudaMemcpyAsync(host.raw_data(), bytes, dst.nbytes(), cudaMemcpyDeviceToHost, stream));
  RG_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (!host.same_data(dst)) backend_for(DeviceType::cpu).copy(host, dst);
}

// Makes `waiter`'s stream wait, without blocking the host, for the work queued so far on
// `producer`'s stream. Events must be recorded on their own device's stream.
void wait_for(int waiter, int producer) {
  cudaStream_t producer_stream = stream_for(producer);  // also makes `producer` current
  cudaEvent_t event = nullptr;
  RG_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  RG_CUDA_CHECK(cudaEventRecord(event, producer_stream));
  RG_CUDA_CHECK(cudaStreamWaitEvent(stream_for(waiter), event, 0));
  RG_CUDA_CHECK(cudaEventDestroy(event));  // released once the wait is satisfied
}

// Lets `device` read `peer`'s memory directly over NVLink/PCIe when the hardware allows;
// otherwise cudaMemcpyPeerAsync stages through host memory by itself.
void enable_peer_access(int device, int peer) {
  static std::mutex mutex;
  static std::set<std::pair<int, int>> tried;
  std::lock_guard lock(mutex);
  if (!tried.insert({device, peer}).second) return;
  int can_access = 0;
  RG_CUDA_CHECK(cudaDeviceCanAccessPeer(&can_access, device, peer));
  if (!can_access) return;
  RG_CUDA_CHECK(cudaSetDevice(device));
  const cudaError_t status = cudaDeviceEnablePeerAccess(peer, 0);
  if (status == cudaErrorPeerAccessAlreadyEnabled) {
    cudaGetLastError();  // someone else enabled it: not an error, but it is sticky until read
    return;
  }
  RG_CUDA_CHECK(status);
}

// src on one GPU, dst on another: pack src densely on its device, copy the bytes on
// dst's stream, then cast/scatter into dst there. Events order the two streams both
// ways, so src is complete before the read and is not overwritten until it is done.
void peer_copy(const Tensor& src, const Tensor& dst) {
  const int from = src.device().index;
  const int to = dst.device().index;
  enable_peer_access(to, from);
  enable_peer_access(from, to);
  const size_t nbytes = src.nbytes();
  std::optional<DeviceBuffer> packed;
  const void* bytes = src.raw_data();
  if (!src.is_contiguous()) {
    packed.emplace(from, nbytes);
    copy_on_device(View::of(src), View::dense(packed->data(), src.dtype(), src.shape()), from);
    bytes = packed->data();
  }
  const bool direct = dst.is_contiguous() && dst.dtype() == src.dtype();
  std::optional<DeviceBuffer> landing;
  if (!direct) landing.emplace(to, nbytes);
  void* target = direct ? dst.raw_data() : landing->data();
  wait_for(to, from);
  RG_CUDA_CHECK(cudaMemcpyPeerAsync(target, to, bytes, from, nbytes, stream_for(to)));
  wait_for(from, to);
  if (!direct) copy_on_device(View::dense(target, src.dtype(), src.shape()), View::of(dst), to);
}

}  // namespace

void copy_tensor(const Tensor& src, const Tensor& dst) {
  if (dst.numel() == 0) return;
  const Device from = src.device();
  const Device to = dst.device();
  RG_CHECK(from.is_cuda() || to.is_cuda(), "cuda copy: neither ", from.str(), " nor ", to.str(), " is a cuda device");
  if (from.is_cpu()) return host_to_device(src, dst);
  if (to.is_cpu()) return device_to_host(src, dst);
  if (from.index == to.index) return copy_on_device(View::of(src), View::of(dst), to.index);
  peer_copy(src, dst);
}

void fill_tensor(const Tensor& dst, double value) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  cudaStream_t stream = stream_for(dst.device().index);
  if (value == 0.0 && !std::signbit(value) && dst.is_contiguous()) {  // all-zero bits in every dtype
    RG_CUDA_CHECK(cudaMemsetAsync(dst.raw_data(), 0, dst.nbytes(), stream));
    return;
  }
  dispatch(dst.dtype(), [&](auto tag) {
    using T = decltype(tag);
    RG_CUDA_LAUNCH((fill_kernel<T>), n, stream, out_ptr<T>(dst), indexer_of(dst), n,
                   static_cast<T>(value));
  });
}

}  // namespace rg::cuda
