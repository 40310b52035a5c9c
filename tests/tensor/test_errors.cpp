// Bad input throws rg::Error whose message names the op and the offending shapes, dims or values.
#include <catch2/catch.hpp>

#include "reference.h"
#include "tensor/cuda.h"

using namespace rg;
using Catch::Contains;

TEST_CASE("tensor.error_shape_mismatch", "[tensor]") {
  const Tensor a = Tensor::ones({2, 3}), b = Tensor::ones({4});
  REQUIRE_ERROR(add(a, b), Contains("add") && Contains("[2, 3]") && Contains("[4]"));
  REQUIRE_ERROR(a * b, Contains("mul") && Contains("[2, 3]") && Contains("[4]"));
  REQUIRE_ERROR(Tensor(a).add_(Tensor::ones({3, 3})), Contains("[2, 3]") && Contains("[3, 3]"));
  REQUIRE_ERROR(a.expand({4, 3}), Contains("expand") && Contains("[2, 3]") && Contains("[4, 3]"));
}

TEST_CASE("tensor.error_matmul_inner_dims", "[tensor]") {
  REQUIRE_ERROR(matmul(Tensor::ones({2, 3}), Tensor::ones({4, 5})),
                Contains("matmul") && Contains("[2, 3]") && Contains("[4, 5]"));
  REQUIRE_ERROR(matmul(Tensor::ones({3}), Tensor::ones({4})), Contains("matmul") && Contains("[3]") && Contains("[4]"));
  REQUIRE_ERROR(matmul(Tensor::ones({2, 2, 3}), Tensor::ones({3, 3, 2})),
                Contains("matmul") && Contains("[2, 2, 3]") && Contains("[3, 3, 2]"));  // batch dims 2 vs 3
}

TEST_CASE("tensor.error_dim_out_of_range", "[tensor]") {
  const Tensor x = Tensor::ones({2, 3});
  REQUIRE_ERROR(sum(x, {5}), Contains("sum") && Contains("5"));
  REQUIRE_ERROR(softmax(x, -3), Contains("softmax") && Contains("-3"));
  REQUIRE_ERROR(argmax(x, 9), Contains("argmax") && Contains("9"));
  REQUIRE_ERROR(x.transpose(0, 7), Contains("transpose") && Contains("7"));
  REQUIRE_ERROR(cat({x, x}, 4), Contains("cat") && Contains("4"));
  REQUIRE_ERROR(x.select(1, 5), Contains("select") && Contains("5"));
  REQUIRE_ERROR(x.narrow(0, 1, 2), Contains("narrow"));
}

TEST_CASE("tensor.error_index_out_of_range", "[tensor]") {
  const Tensor x = Tensor::ones({3, 4});
  const Tensor bad = Tensor::from_vector(std::vector<int64_t>{0, 17, 1}, {3});
  REQUIRE_ERROR(index_select(x, 0, bad), Contains("index_select") && Contains("17"));
  REQUIRE_ERROR(index_select(x, 0, Tensor::from_vector(std::vector<int64_t>{-1}, {1})),
                Contains("index_select") && Contains("-1"));
  const Tensor gather_index = Tensor::from_vector(std::vector<int64_t>{0, 1, 42, 2}, {2, 2});
  REQUIRE_ERROR(gather(x, 1, gather_index), Contains("gather") && Contains("42"));
  REQUIRE_ERROR(scatter_add_(x, 1, gather_index, Tensor::ones({2, 2})), Contains("scatter_add") && Contains("42"));
  REQUIRE_ERROR(one_hot(Tensor::from_vector(std::vector<int64_t>{1, 9}, {2}), 3), Contains("one_hot") && Contains("9"));
}

TEST_CASE("tensor.error_wrong_dtype", "[tensor]") {
  const Tensor x = Tensor::ones({3, 4});
  const Tensor float_index = Tensor::zeros({2});
  REQUIRE_ERROR(index_select(x, 0, float_index), Contains("index_select") && Contains("float32"));
  REQUIRE_ERROR(gather(x, 0, Tensor::zeros({2, 4})), Contains("gather") && Contains("float32"));
  REQUIRE_ERROR(softmax(Tensor::ones({3}, DType::int64), 0), Contains("softmax") && Contains("int64"));
  REQUIRE_ERROR(where(Tensor::ones({3, 4}), x, x), Contains("where") && Contains("float32"));
}

TEST_CASE("tensor.error_view_impossible", "[tensor]") {
  const Tensor xt = Tensor::zeros({2, 3}).t();
  REQUIRE_ERROR(xt.view({6}), Contains("view") && Contains("[3, 2]") && Contains("[6]"));
  REQUIRE_ERROR(Tensor::zeros({2, 3}).view({4, 2}), Contains("view") && Contains("[4, 2]") && Contains("6"));
}

TEST_CASE("tensor.error_item_of_many_elements", "[tensor]") {
  REQUIRE_ERROR(Tensor::zeros({2, 3}).item(), Contains("item") && (Contains("[2, 3]") || Contains("6")));
  REQUIRE_ERROR(Tensor::zeros({0}).item(), Contains("item"));
}

TEST_CASE("tensor.error_device_mismatch", "[tensor]") {
  const Tensor a = Tensor::ones({2});
  const Tensor b = Tensor::ones({2}, DType::float32, Device::cpu(1));
  REQUIRE_ERROR(add(a, b), Contains("add") && Contains("cpu:0") && Contains("cpu:1"));
  REQUIRE_ERROR(index_select(b, 0, Tensor::from_vector(std::vector<int64_t>{0}, {1})),
                Contains("index_select") && Contains("cpu:0") && Contains("cpu:1"));
}

TEST_CASE("tensor.error_cuda_without_gpu", "[tensor]") {
  if (cuda::device_count() > 0) return;  // this contract is for machines without a GPU
  REQUIRE_ERROR(Tensor::zeros({2}, DType::float32, Device::cuda(0)), Contains("cuda"));
  REQUIRE_ERROR(Tensor::ones({2}).to(Device::cuda(0)), Contains("cuda"));
}

TEST_CASE("tensor.error_negative_size", "[tensor]") {
  REQUIRE_ERROR(Tensor::empty({2, -3}), Contains("empty") && Contains("-3"));
  REQUIRE_ERROR(Tensor::zeros({-1}), Contains("-1"));
}

TEST_CASE("tensor.error_cat_ranks_and_sizes", "[tensor]") {
  REQUIRE_ERROR(cat({Tensor::ones({2, 3}), Tensor::ones({3})}),
                Contains("cat") && Contains("[2, 3]") && Contains("[3]"));
  REQUIRE_ERROR(cat({Tensor::ones({2, 3}), Tensor::ones({2, 4})}, 0),
                Contains("cat") && Contains("[2, 3]") && Contains("[2, 4]"));
  REQUIRE_ERROR(cat({}), Contains("cat"));
  REQUIRE_ERROR(stack({Tensor::ones({2}), Tensor::ones({3})}), Contains("stack") && Contains("[2]") && Contains("[3]"));
}

TEST_CASE("tensor.error_bad_arguments", "[tensor]") {
  const Tensor x = Tensor::ones({2, 3});
  REQUIRE_ERROR(sum(x, {1, 1}), Contains("sum") && Contains("1"));  // a dim twice
  REQUIRE_ERROR(max(Tensor::zeros({0, 3}), {0}), Contains("max"));  // no identity for an empty max
  REQUIRE_ERROR(x.slice(1, 0, 3, 0), Contains("slice") && Contains("step"));
  REQUIRE_ERROR(chunk(x, 0), Contains("chunk") && Contains("0"));
  REQUIRE_ERROR(index_select(x, 0, Tensor::zeros({1, 1}, DType::int64)),
                Contains("index_select") && Contains("[1, 1]"));
  REQUIRE_ERROR(one_hot(Tensor::from_vector(std::vector<int64_t>{-2}, {1}), 3), Contains("one_hot") && Contains("-2"));
}

TEST_CASE("tensor.error_undefined_tensor", "[tensor]") {
  const Tensor undefined;
  REQUIRE_FALSE(undefined.defined());
  REQUIRE_ERROR(add(undefined, Tensor::ones({2})), Contains("add"));
  REQUIRE_ERROR(undefined.item(), Contains("item"));
  REQUIRE_ERROR(undefined.clone(), Contains("clone"));
}
