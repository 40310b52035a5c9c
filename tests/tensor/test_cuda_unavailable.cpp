// What CUDA looks like from a CPU-only machine or build: the queries answer without
// throwing, say why there is no GPU, and using a cuda device throws a clear rg::Error.
// On a machine with a GPU these contracts do not apply; tests/cuda covers that case.
#include <catch2/catch.hpp>

#include "tensor/cuda.h"
#include "tensor/tensor.h"

using namespace rg;

TEST_CASE("tensor.cuda_unavailable_queries", "[tensor][cuda]") {
  if (cuda::device_count() > 0) {
    REQUIRE(cuda::is_available());
    REQUIRE(cuda::unavailable_reason().empty());
    return;
  }
  REQUIRE_FALSE(cuda::is_available());
  REQUIRE(cuda::device_count() == 0);
  REQUIRE_FALSE(cuda::unavailable_reason().empty());
  REQUIRE_THROWS_AS(cuda::device_name(0), Error);
  REQUIRE_THROWS_AS(cuda::memory_stats(0), Error);
}

TEST_CASE("tensor.cuda_unavailable_tensor_throws", "[tensor][cuda]") {
  if (cuda::device_count() > 0) return;
  REQUIRE_THROWS_WITH(Tensor::empty({2}, DType::float32, Device::cuda(0)), Catch::Contains("cuda"));
  REQUIRE_THROWS_AS(Tensor::empty({2}, DType::float32, Device::cuda(0)), Error);
}
