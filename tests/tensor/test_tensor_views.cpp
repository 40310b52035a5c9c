// Tensor creation, dtypes, views sharing storage, copies and casts, virtual CPU devices, printing.
#include <catch2/catch.hpp>

#include <sstream>

#include "reference.h"

using namespace rg;
using Catch::Contains;
using ref::at;
using ref::iota;
using ref::values;
using Values = std::vector<double>;

TEST_CASE("tensor.creation", "[tensor]") {
  Tensor e = Tensor::empty({2, 3});
  REQUIRE(e.shape() == Shape{2, 3});
  REQUIRE(e.strides() == Shape{3, 1});
  REQUIRE(e.dtype() == DType::float32);
  REQUIRE(e.device() == Device::cpu());
  REQUIRE(e.is_contiguous());
  REQUIRE(e.numel() == 6);
  REQUIRE(e.nbytes() == 24);

  REQUIRE(values(Tensor::zeros({2, 2})) == Values(4, 0.0));
  REQUIRE(values(Tensor::ones({3})) == Values(3, 1.0));
  REQUIRE(values(Tensor::full({2}, 2.5, DType::float64)) == Values{2.5, 2.5});

  Tensor s = Tensor::scalar(4.5);
  REQUIRE(s.dim() == 0);
  REQUIRE(s.shape().empty());
  REQUIRE(s.numel() == 1);
  REQUIRE(s.item() == 4.5);

  Tensor v = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  REQUIRE(v.dtype() == DType::float32);
  REQUIRE(at(v, {1, 0}) == 4);
  REQUIRE_THROWS_AS(Tensor::from_vector(std::vector<float>{1, 2, 3}, {2, 2}), Error);

  Tensor z = Tensor::zeros({0, 3});
  REQUIRE(z.numel() == 0);
  REQUIRE(z.to_vector<float>().empty());
}

TEST_CASE("tensor.arange", "[tensor]") {
  Tensor i = arange(5);
  REQUIRE(i.dtype() == DType::int64);
  REQUIRE(i.to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3, 4});

  Tensor f = arange(1.0, 2.0, 0.25);
  REQUIRE(f.dtype() == DType::float32);
  REQUIRE(values(f) == Values{1.0, 1.25, 1.5, 1.75});

  REQUIRE(values(arange(5.0, 0.0, -1.5)) == Values{5.0, 3.5, 2.0, 0.5});
  REQUIRE(arange(0.0, 3.0, 1.0, DType::float64).dtype() == DType::float64);
  REQUIRE(arange(2.0, 2.0).numel() == 0);
  const Tensor tenths = arange(0.0, 1.0, 0.1);  // ceil((end - start) / step) elements
  REQUIRE(tenths.numel() == 10);
  REQUIRE(ref::close(at(tenths, {9}), 0.9, 1e-6, 0));
}

TEST_CASE("tensor.every_dtype", "[tensor]") {
  const std::vector<std::pair<DType, size_t>> sizes = {
      {DType::float32, 4}, {DType::float64, 8}, {DType::int64, 8}, {DType::int32, 4}, {DType::uint8, 1}};
  for (auto [dtype, size] : sizes) {
    INFO(dtype_name(dtype));
    REQUIRE(dtype_size(dtype) == size);
    Tensor x = Tensor::full({2, 3}, 7, dtype);
    REQUIRE(x.dtype() == dtype);
    REQUIRE(x.nbytes() == 6 * size);
    REQUIRE(values(x) == Values(6, 7.0));
    REQUIRE(values(Tensor::ones({2}, dtype)) == Values{1, 1});
    REQUIRE(values(Tensor::zeros({2}, dtype)) == Values{0, 0});
    REQUIRE(Tensor::scalar(3, dtype).item() == 3);
    REQUIRE(values(x.t().clone()) == Values(6, 7.0));
    REQUIRE(parse_dtype(dtype_name(dtype)) == dtype);
  }
  REQUIRE(Tensor::from_vector(std::vector<double>{1.5}, {1}).dtype() == DType::float64);
  REQUIRE(Tensor::from_vector(std::vector<int64_t>{-5, 6}, {2}).to_vector<int64_t>() == std::vector<int64_t>{-5, 6});
  REQUIRE(Tensor::from_vector(std::vector<int32_t>{-7}, {1}).dtype() == DType::int32);
  Tensor u = Tensor::from_vector(std::vector<uint8_t>{0, 200, 255}, {3});
  REQUIRE(u.dtype() == DType::uint8);
  REQUIRE(u.to_vector<uint8_t>() == std::vector<uint8_t>{0, 200, 255});
}

TEST_CASE("tensor.view_and_reshape", "[tensor]") {
  Tensor x = iota({2, 3, 4});
  REQUIRE(at(x, {1, 2, 3}) == 23);

  Tensor v = x.view({4, -1});
  REQUIRE(v.shape() == Shape{4, 6});
  REQUIRE(v.same_data(x));
  REQUIRE(at(v, {1, 0}) == 6);
  REQUIRE(x.view({-1}).shape() == Shape{24});
  REQUIRE_THROWS_AS(x.view({5, 5}), Error);
  REQUIRE_THROWS_AS(x.view({-1, -1}), Error);

  // A permuted tensor can still be viewed when only a contiguous run of dims is split.
  Tensor p = x.permute({1, 0, 2});  // (3, 2, 4), strides (4, 12, 1)
  Tensor split = p.view({3, 2, 2, 2});
  REQUIRE(split.same_data(p));
  REQUIRE(at(split, {2, 1, 1, 0}) == at(p, {2, 1, 2}));
  // ...but merging dims whose memory is not in order is impossible.
  REQUIRE_THROWS_AS(p.view({6, 4}), Error);

  Tensor r = x.reshape({6, 4});
  REQUIRE(r.same_data(x));
  Tensor copied = p.reshape({6, 4});
  REQUIRE_FALSE(copied.storage() == x.storage());
  REQUIRE(values(copied) == values(p));
}

TEST_CASE("tensor.permute_and_transpose", "[tensor]") {
  Tensor x = iota({2, 3, 4});
  Tensor p = x.permute({2, 0, 1});
  REQUIRE(p.shape() == Shape{4, 2, 3});
  REQUIRE(p.strides() == Shape{1, 12, 4});
  REQUIRE(p.storage() == x.storage());
  ref::for_each_index(p.shape(), [&](const ref::Index& i) { REQUIRE(at(p, i) == at(x, {i[1], i[2], i[0]})); });

  Tensor tr = x.transpose(0, -1);
  REQUIRE(tr.shape() == Shape{4, 3, 2});
  REQUIRE(at(tr, {3, 1, 0}) == at(x, {0, 1, 3}));
  REQUIRE_FALSE(tr.is_contiguous());

  Tensor m = iota({2, 3});
  REQUIRE(m.t().shape() == Shape{3, 2});
  REQUIRE(m.t().strides() == Shape{1, 3});
  REQUIRE(values(m.t()) == Values{0, 3, 1, 4, 2, 5});
  REQUIRE(m.t().t().is_contiguous());
}

TEST_CASE("tensor.narrow_slice_select", "[tensor]") {
  Tensor x = iota({4, 6});
  Tensor n = x.narrow(1, 2, 3);
  REQUIRE(n.shape() == Shape{4, 3});
  REQUIRE(n.offset() == 2);
  REQUIRE(values(n.select(0, 1)) == Values{8, 9, 10});

  Tensor s = x.slice(1, 1, 6, 2);  // columns 1, 3, 5
  REQUIRE(s.shape() == Shape{4, 3});
  REQUIRE(s.strides() == Shape{6, 2});
  REQUIRE(values(s.select(0, 0)) == Values{1, 3, 5});
  REQUIRE(x.slice(1, 0, 6, 4).shape() == Shape{4, 2});     // columns 0, 4
  REQUIRE(values(x.slice(0, -3, 100).select(1, 0)) == Values{6, 12, 18});  // Python bounds clamp
  REQUIRE(x.slice(0, 3, 1).shape() == Shape{0, 6});

  REQUIRE(values(x.select(0, 2)) == Values{12, 13, 14, 15, 16, 17});
  REQUIRE(values(x.select(1, -1)) == Values{5, 11, 17, 23});
  REQUIRE(x.select(0, 1).select(0, 2).dim() == 0);
  REQUIRE(x.select(0, 1).select(0, 2).item() == 8);
}

TEST_CASE("tensor.expand", "[tensor]") {
  Tensor c = iota({3, 1});
  Tensor e = c.expand({3, 4});
  REQUIRE(e.strides() == Shape{1, 0});
  REQUIRE(e.same_data(c));
  REQUIRE(values(e.select(0, 2)) == Values{2, 2, 2, 2});

  Tensor lead = c.expand({2, -1, 4});
  REQUIRE(lead.shape() == Shape{2, 3, 4});
  REQUIRE(lead.strides() == Shape{0, 1, 0});
  REQUIRE(c.broadcast_to({3, 5}).shape() == Shape{3, 5});
  REQUIRE(values(Tensor::scalar(2).expand({2, 2})) == Values{2, 2, 2, 2});
  REQUIRE_THROWS_AS(c.expand({4, 4}), Error);
  REQUIRE_THROWS_AS(c.expand({4}), Error);
}

TEST_CASE("tensor.squeeze_unsqueeze_flatten", "[tensor]") {
  Tensor x = iota({1, 3, 1, 2});
  REQUIRE(x.squeeze().shape() == Shape{3, 2});
  REQUIRE(x.squeeze(2).shape() == Shape{1, 3, 2});
  REQUIRE(x.squeeze(1).shape() == Shape{1, 3, 1, 2});  // not size 1: unchanged, as PyTorch
  REQUIRE(x.squeeze(-4).shape() == Shape{3, 1, 2});
  REQUIRE(x.unsqueeze(0).shape() == Shape{1, 1, 3, 1, 2});
  REQUIRE(x.unsqueeze(-1).shape() == Shape{1, 3, 1, 2, 1});
  REQUIRE(x.unsqueeze(2).same_data(x));
  REQUIRE(Tensor::scalar(1).unsqueeze(0).shape() == Shape{1});

  Tensor y = iota({2, 3, 4});
  REQUIRE(y.flatten().shape() == Shape{24});
  REQUIRE(y.flatten(1).shape() == Shape{2, 12});
  REQUIRE(y.flatten(0, 1).shape() == Shape{6, 4});
  REQUIRE(y.flatten(1).same_data(y));
  REQUIRE(values(y.transpose(0, 2).flatten()) == values(y.transpose(0, 2)));
}

TEST_CASE("tensor.views_share_storage", "[tensor]") {
  Tensor x = Tensor::zeros({3, 4});
  REQUIRE(x.view({12}).same_data(x));
  REQUIRE_FALSE(x.narrow(0, 1, 2).same_data(x));  // same storage, different first byte
  REQUIRE(x.narrow(0, 1, 2).storage() == x.storage());
  REQUIRE_FALSE(x.clone().same_data(x));

  x.select(0, 1).fill_(7);  // row 1
  x.t().select(0, 2).fill_(5);  // column 2
  x.narrow(0, 2, 1).data<float>()[0] = 9;
  REQUIRE(values(x) == Values{0, 0, 5, 0, 7, 7, 5, 7, 9, 0, 5, 0});
}

TEST_CASE("tensor.contiguous_and_clone", "[tensor]") {
  Tensor x = iota({2, 3});
  REQUIRE(x.contiguous().same_data(x));

  Tensor c = x.t().contiguous();
  REQUIRE(c.is_contiguous());
  REQUIRE(c.strides() == Shape{2, 1});
  REQUIRE_FALSE(c.storage() == x.storage());
  REQUIRE(values(c) == Values{0, 3, 1, 4, 2, 5});

  Tensor e = iota({3}).expand({2, 3}).contiguous();
  REQUIRE(e.strides() == Shape{3, 1});
  REQUIRE(values(e) == Values{0, 1, 2, 0, 1, 2});

  Tensor k = x.clone();
  REQUIRE_FALSE(k.storage() == x.storage());
  k.fill_(1);
  REQUIRE(values(x) == Values{0, 1, 2, 3, 4, 5});
  REQUIRE(values(x.slice(1, 0, 3, 2).clone()) == Values{0, 2, 3, 5});
}

TEST_CASE("tensor.dtype_casts", "[tensor]") {
  Tensor f = Tensor::from_vector(std::vector<float>{-2.7f, -0.5f, 0.5f, 2.7f, 3.99f}, {5});
  REQUIRE(f.to(DType::int64).to_vector<int64_t>() == std::vector<int64_t>{-2, 0, 0, 2, 3});  // static_cast
  REQUIRE(f.to(DType::int32).to_vector<int32_t>() == std::vector<int32_t>{-2, 0, 0, 2, 3});
  REQUIRE(f.to(DType::float32).same_data(f));

  Tensor u = Tensor::from_vector(std::vector<float>{0.0f, 1.9f, 128.5f, 254.6f, 255.0f}, {5}).to(DType::uint8);
  REQUIRE(u.dtype() == DType::uint8);
  REQUIRE(u.to_vector<uint8_t>() == std::vector<uint8_t>{0, 1, 128, 254, 255});
  REQUIRE(values(u.to(DType::float64)) == Values{0, 1, 128, 254, 255});

  REQUIRE(values(Tensor::from_vector(std::vector<int64_t>{-3, 7}, {2}).to(DType::float32)) == Values{-3, 7});
  REQUIRE(Tensor::scalar(0.1, DType::float64).to(DType::float32).item() == static_cast<double>(0.1f));
  REQUIRE(values(iota({2, 3}).t().to(DType::int64)) == Values{0, 3, 1, 4, 2, 5});
}

TEST_CASE("tensor.virtual_device_copies_are_counted", "[tensor]") {
  reset_copy_stats();
  Tensor x = iota({2, 3});  // 24 bytes
  Tensor y = x.to(Device::cpu(1));
  REQUIRE(y.device() == Device::cpu(1));
  REQUIRE(y.device().str() == "cpu:1");
  REQUIRE_FALSE(y.storage() == x.storage());
  REQUIRE(values(y) == values(x));
  REQUIRE(copy_stats(Device::cpu(0)).bytes_out == 24);
  REQUIRE(copy_stats(Device::cpu(1)).bytes_in == 24);
  REQUIRE(copy_stats(Device::cpu(0)).bytes_in == 0);

  Tensor sum_on_1 = y + y;  // stays on cpu:1 and copies nothing
  REQUIRE(sum_on_1.device() == Device::cpu(1));
  REQUIRE(copy_stats(Device::cpu(1)).bytes_in == 24);

  Tensor back = sum_on_1.to(Device::cpu(0));
  REQUIRE(values(back) == Values{0, 2, 4, 6, 8, 10});
  REQUIRE(copy_stats(Device::cpu(1)).bytes_out == 24);
  REQUIRE(copy_stats(Device::cpu(0)).bytes_in == 24);

  Tensor strided = x.t().to(Device::cpu(1));
  REQUIRE(values(strided) == Values{0, 3, 1, 4, 2, 5});
  REQUIRE(copy_stats(Device::cpu(1)).bytes_in == 48);
  REQUIRE(copy_stats(Device::cpu(0)).bytes_out == 48);

  Tensor dst = Tensor::zeros({2, 3}, DType::float32, Device::cpu(1));
  dst.copy_(x);
  REQUIRE(values(dst) == values(x));
  REQUIRE(copy_stats(Device::cpu(1)).bytes_in == 72);

  reset_copy_stats();
  REQUIRE(copy_stats(Device::cpu(1)).bytes_in == 0);
  REQUIRE(copy_stats(Device::cpu(0)).bytes_out == 0);
}

TEST_CASE("tensor.mixing_virtual_devices_throws", "[tensor]") {
  Tensor a = Tensor::ones({2, 2});
  Tensor b = Tensor::ones({2, 2}, DType::float32, Device::cpu(1));
  REQUIRE_ERROR(a + b, Contains("cpu:0") && Contains("cpu:1"));
  REQUIRE_ERROR(matmul(a, b), Contains("cpu:0") && Contains("cpu:1"));
  REQUIRE_ERROR(cat({a, b}), Contains("cpu:0") && Contains("cpu:1"));
  REQUIRE_ERROR(where(Tensor::ones({2, 2}, DType::uint8), a, b), Contains("cpu:0") && Contains("cpu:1"));
  REQUIRE_ERROR(a.add_(b), Contains("cpu:0") && Contains("cpu:1"));
}

TEST_CASE("tensor.item_and_to_vector", "[tensor]") {
  REQUIRE(Tensor::scalar(2.5).item() == 2.5);
  REQUIRE(Tensor::full({1, 1}, -3, DType::int64).item() == -3);
  REQUIRE(iota({2, 3}).t().to_vector<float>() == std::vector<float>{0, 3, 1, 4, 2, 5});
  REQUIRE(Tensor::from_vector(std::vector<float>{2.7f, -1.5f}, {2}).to_vector<int64_t>() ==
          std::vector<int64_t>{2, -1});
  REQUIRE(iota({2}, DType::int32).to_vector<double>() == Values{0, 1});
}

TEST_CASE("tensor.printing", "[tensor]") {
  std::ostringstream out;
  out << Tensor::from_vector(std::vector<float>{1.5f, -2.25f, 3.0f, 4.0f}, {2, 2});
  REQUIRE_THAT(out.str(), Contains("1.5") && Contains("-2.25") && Contains("dtype=") && Contains("float32"));

  std::ostringstream ints;
  ints << Tensor::from_vector(std::vector<int64_t>{42, -7}, {2});
  REQUIRE_THAT(ints.str(), Contains("42") && Contains("-7") && Contains("dtype=") && Contains("int64"));

  std::ostringstream edge_cases;
  edge_cases << Tensor::scalar(3.5) << Tensor::zeros({0, 3}) << iota({2, 3}).t();
  REQUIRE_THAT(edge_cases.str(), Contains("3.5") && Contains("dtype="));
}
