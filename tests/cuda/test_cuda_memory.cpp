// CUDA memory and data movement: host<->device round trips of every dtype, strided and
// casting copies in every direction, fill, the caching allocator's accounting, and copies
// between GPUs when there are two.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "tensor/caching_allocator.h"
#include "tensor/cuda.h"
#include "tensor/tensor.h"

using namespace rg;

namespace {

const DType kAllDTypes[] = {DType::float32, DType::float64, DType::int64, DType::int32, DType::uint8};

// 0, 1, 2, ... as `dtype` on the host (values below 256 fit every dtype).
Tensor host_iota(const Shape& shape, DType dtype) {
  std::vector<double> values(static_cast<size_t>(numel_of(shape)));
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i % 200);
  return Tensor::from_vector(values, shape).to(dtype);
}

std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

}  // namespace

TEST_CASE("cuda.round_trip_every_dtype", "[cuda]") {
  for (DType dtype : kAllDTypes) {
    INFO(dtype_name(dtype));
    Tensor host = host_iota({3, 5, 7}, dtype);
    Tensor device = host.to(Device::cuda(0));
    REQUIRE(device.device() == Device::cuda(0));
    REQUIRE(device.dtype() == dtype);
    Tensor back = device.to(Device::cpu());
    REQUIRE(back.device() == Device::cpu());
    REQUIRE(values(back) == values(host));
  }
}

TEST_CASE("cuda.strided_copies", "[cuda]") {
  Tensor host = host_iota({4, 6, 5}, DType::float32);
  const std::vector<double> expected = values(host.permute({2, 0, 1}));

  SECTION("strided host source") {
    Tensor device = Tensor::empty({5, 4, 6}, DType::float32, Device::cuda(0));
    device.copy_(host.permute({2, 0, 1}));
    REQUIRE(values(device) == expected);
  }
  SECTION("strided device source, dense host destination") {
    Tensor device = host.to(Device::cuda(0));
    REQUIRE(values(device.permute({2, 0, 1})) == expected);
  }
  SECTION("dense device source, strided host destination") {
    Tensor device = host.permute({2, 0, 1}).contiguous().to(Device::cuda(0));
    Tensor target = Tensor::zeros({4, 6, 5}).permute({2, 0, 1});
    target.copy_(device);
    REQUIRE(values(target) == expected);
  }
  SECTION("strided device to strided device, with slices and a cast") {
    Tensor device = host.to(Device::cuda(0));
    Tensor target = Tensor::zeros({6, 10}, DType::float64, Device::cuda(0));
    Tensor src = device.select(2, 1).slice(0, 0, 4, 2);          // (2, 6), strided
    target.slice(1, 0, 10, 5).copy_(src.t());                     // (6, 2) view with stride 5
    Tensor expected_target = Tensor::zeros({6, 10}, DType::float64);
    expected_target.slice(1, 0, 10, 5).copy_(host.select(2, 1).slice(0, 0, 4, 2).t());
    REQUIRE(values(target) == values(expected_target));
  }
  SECTION("broadcast source") {
    Tensor row = host_iota({1, 5}, DType::int32).to(Device::cuda(0));
    Tensor target = Tensor::empty({3, 5}, DType::float32, Device::cuda(0));
    target.copy_(row.expand({3, 5}));
    REQUIRE(values(target) == values(host_iota({1, 5}, DType::float32).expand({3, 5})));
  }
}

TEST_CASE("cuda.casting_copies", "[cuda]") {
  for (DType from : kAllDTypes) {
    for (DType to : kAllDTypes) {
      INFO(dtype_name(from) << " -> " << dtype_name(to));
      Tensor host = host_iota({17}, from);
      REQUIRE(values(host.to(Device::cuda(0)).to(to)) == values(host.to(to)));
      Tensor device_target = Tensor::empty({17}, to, Device::cuda(0));
      device_target.copy_(host);  // cast during host -> device
      REQUIRE(values(device_target) == values(host.to(to)));
      Tensor host_target = Tensor::empty({17}, to);
      host_target.copy_(host.to(Device::cuda(0)));  // cast during device -> host
      REQUIRE(values(host_target) == values(host.to(to)));
    }
  }
}

TEST_CASE("cuda.fill", "[cuda]") {
  for (DType dtype : kAllDTypes) {
    INFO(dtype_name(dtype));
    Tensor t = Tensor::full({4, 3}, 7, dtype, Device::cuda(0));
    REQUIRE(values(t) == std::vector<double>(12, 7.0));
    t.zero_();
    REQUIRE(values(t) == std::vector<double>(12, 0.0));
    t.select(1, 1).fill_(3);  // strided fill
    REQUIRE(values(t) == std::vector<double>{0, 3, 0, 0, 3, 0, 0, 3, 0, 0, 3, 0});
  }
}

TEST_CASE("cuda.allocator_reuse", "[cuda]") {
  cuda::synchronize(0);
  const size_t nbytes = 1000 * sizeof(float);
  const uint64_t block = CachingAllocator::size_class(nbytes);
  const AllocatorStats before = cuda::memory_stats(0);
  {
    Tensor first = Tensor::empty({1000}, DType::float32, Device::cuda(0));
    const AllocatorStats during = cuda::memory_stats(0);
    REQUIRE(during.allocated == before.allocated + block);
    REQUIRE(during.peak_allocated >= during.allocated);
  }
  const AllocatorStats freed = cuda::memory_stats(0);
  REQUIRE(freed.allocated == before.allocated);
  REQUIRE(freed.reserved >= block);  // the block went back to the cache, not to the driver
  {
    Tensor second = Tensor::empty({1000}, DType::float32, Device::cuda(0));
    const AllocatorStats reused = cuda::memory_stats(0);
    REQUIRE(reused.cache_hits == freed.cache_hits + 1);
    REQUIRE(reused.system_allocs == freed.system_allocs);
  }
  cuda::empty_cache(0);
  const AllocatorStats emptied = cuda::memory_stats(0);
  REQUIRE(emptied.reserved == emptied.allocated);  // nothing cached any more
  REQUIRE(emptied.peak_allocated >= before.allocated + block);
}

TEST_CASE("cuda.device_queries", "[cuda]") {
  REQUIRE(cuda::is_available());
  REQUIRE(cuda::unavailable_reason().empty());
  REQUIRE_FALSE(cuda::device_name(0).empty());
  REQUIRE_THROWS_AS(cuda::device_name(cuda::device_count()), Error);
  REQUIRE_THROWS_AS(Tensor::empty({2}, DType::float32, Device::cuda(cuda::device_count())), Error);
}

TEST_CASE("cuda.peer_copies", "[cuda]") {
  if (cuda::device_count() < 2) {
    WARN("one GPU: peer copies not tested");
    return;
  }
  Tensor host = host_iota({8, 9}, DType::float32);
  Tensor on0 = host.to(Device::cuda(0));
  Tensor on1 = on0.to(Device::cuda(1));
  REQUIRE(on1.device() == Device::cuda(1));
  REQUIRE(values(on1) == values(host));

  Tensor target = Tensor::zeros({9, 8}, DType::float64, Device::cuda(1));
  target.copy_(on0.t());  // strided source, casting destination, across devices
  REQUIRE(values(target) == values(host.t()));

  Tensor back = Tensor::zeros({8, 9}, DType::float32, Device::cuda(0));
  back.t().copy_(target.to(DType::float32));  // strided destination on the other GPU
  REQUIRE(values(back) == values(host));
}
