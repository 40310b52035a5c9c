// Every CUDA primitive against the CPU backend (the oracle), through the public ops:
// elementwise with broadcasting and strides, reductions, softmax, matmul, convolution and
// pooling helpers, indexing, arange and the Philox random fills.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <vector>

#include "tensor/ops.h"

using namespace rg;

namespace {

const Device kGpu = Device::cuda(0);

Tensor gpu(const Tensor& t) { return t.to(kGpu); }

// Uniform values in [low, high) on the CPU, converted to `dtype`.
Tensor input(const Shape& shape, DType dtype = DType::float32, double low = -2.0, double high = 2.0,
             uint64_t seed = 1) {
  Generator gen(seed);
  if (is_floating(dtype)) return rand(shape, gen, low, high, dtype);
  return randint(static_cast<int64_t>(low), static_cast<int64_t>(high), shape, gen, DType::int64).to(dtype);
}

// The CUDA result equals the CPU one: same shape and dtype, every element within
// atol + rtol * |expected| (NaN matching NaN).
void require_match(const Tensor& on_gpu, const Tensor& on_cpu, double rtol = 1e-5, double atol = 1e-6) {
  REQUIRE(on_gpu.device() == kGpu);
  REQUIRE(on_gpu.shape() == on_cpu.shape());
  REQUIRE(on_gpu.dtype() == on_cpu.dtype());
  const std::vector<double> got = on_gpu.to(Device::cpu()).to_vector<double>();
  const std::vector<double> want = on_cpu.to_vector<double>();
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("element " << i << ": cuda " << got[i] << ", cpu " << want[i]);
    if (std::isnan(want[i])) {
      REQUIRE(std::isnan(got[i]));
    } else {
      REQUIRE(std::abs(got[i] - want[i]) <= atol + rtol * std::abs(want[i]));
    }
  }
}

// Runs `op` on CPU inputs and on their GPU copies and compares.
void require_same(const std::function<Tensor(const std::vector<Tensor>&)>& op, const std::vector<Tensor>& inputs,
                  double rtol = 1e-5, double atol = 1e-6) {
  std::vector<Tensor> on_gpu;
  for (const Tensor& t : inputs) on_gpu.push_back(gpu(t));
  require_match(op(on_gpu), op(inputs), rtol, atol);
}

}  // namespace

TEST_CASE("cuda.unary", "[cuda]") {
  const UnaryOp ops[] = {UnaryOp::neg,  UnaryOp::exp, UnaryOp::log,  UnaryOp::sqrt,   UnaryOp::tanh,      UnaryOp::sigmoid,
                         UnaryOp::relu, UnaryOp::abs, UnaryOp::sign, UnaryOp::square, UnaryOp::reciprocal};
  for (DType dtype : {DType::float32, DType::float64}) {
    for (UnaryOp op : ops) {
      INFO(op_name(op) << " " << dtype_name(dtype));
      const bool positive = op == UnaryOp::log || op == UnaryOp::sqrt || op == UnaryOp::reciprocal;
      const Tensor x = input({6, 9}, dtype, positive ? 0.1 : -3.0, 3.0);
      auto run = [op](const std::vector<Tensor>& t) {
        Tensor out = empty_like(t[0].t());
        unary_into(op, t[0].t(), out);  // strided input
        return out;
      };
      require_same(run, {x});
    }
  }
  for (DType dtype : {DType::int64, DType::int32}) {
    for (UnaryOp op : {UnaryOp::neg, UnaryOp::relu, UnaryOp::abs, UnaryOp::sign, UnaryOp::square}) {
      INFO(op_name(op) << " " << dtype_name(dtype));
      require_same([op](const std::vector<Tensor>& t) {
        Tensor out = empty_like(t[0]);
        unary_into(op, t[0], out);
        return out;
      }, {input({50}, dtype, -20, 20)});
    }
  }
}

TEST_CASE("cuda.binary_broadcast", "[cuda]") {
  const BinaryOp ops[] = {BinaryOp::add, BinaryOp::sub, BinaryOp::mul, BinaryOp::div, BinaryOp::pow,
                          BinaryOp::maximum, BinaryOp::minimum, BinaryOp::where_positive, BinaryOp::eq,
                          BinaryOp::ne, BinaryOp::lt, BinaryOp::le, BinaryOp::gt, BinaryOp::ge};
  for (DType dtype : {DType::float32, DType::float64, DType::int64, DType::int32, DType::uint8}) {
    const bool floating = is_floating(dtype);
    const Tensor a = input({3, 1, 5}, dtype, floating ? 0.5 : 1, floating ? 2.0 : 9);
    const Tensor b = input({4, 5}, dtype, floating ? 0.5 : 1, floating ? 2.0 : 9, 2);
    for (BinaryOp op : ops) {
      if (!floating && (op == BinaryOp::div || op == BinaryOp::pow)) continue;
      INFO(op_name(op) << " " << dtype_name(dtype));
      const Shape shape = broadcast_shapes(a.shape(), b.shape(), "test");
      require_same([op, &shape](const std::vector<Tensor>& t) {
        Tensor out = Tensor::empty(shape, is_comparison(op) ? DType::uint8 : t[0].dtype(), t[0].device());
        binary_into(op, t[0].expand(shape), t[1].expand(shape), out, op == BinaryOp::add ? 0.5 : 1.0);
        return out;
      }, {a, b});
    }
  }
  SECTION("operators, scalars and in-place updates") {
    const Tensor x = input({7, 3}), y = input({3}, DType::float32, -1, 1, 3);
    require_same([](const std::vector<Tensor>& t) { return (t[0] - t[1]) * 0.9 + 1.5 / (t[0] * t[0] + 1.0); },
                 {x, y});
    require_same([](const std::vector<Tensor>& t) {
      Tensor z = t[0].clone();
      z.mul_(0.5).add_(t[1], -2.0).add_(3.0);
      return z;
    }, {x, y});
  }
}

TEST_CASE("cuda.where_clamp", "[cuda]") {
  const Tensor cond = input({4, 6}, DType::uint8, 0, 2);
  const Tensor a = input({4, 6}), b = input({6}, DType::float32, -2, 2, 5);
  require_same([](const std::vector<Tensor>& t) { return where(t[0], t[1], t[2]); }, {cond, a, b});
  require_same([](const std::vector<Tensor>& t) { return clamp(t[0].t(), -0.5, 0.75); }, {a});
  require_same([](const std::vector<Tensor>& t) { return clamp(t[0], 2, 7); }, {input({30}, DType::int32, -5, 15)});
}

TEST_CASE("cuda.reduce", "[cuda]") {
  const std::vector<std::vector<int64_t>> dim_sets = {{}, {0}, {1}, {2}, {0, 2}, {-1, 1}};
  for (DType dtype : {DType::float32, DType::float64, DType::int64, DType::int32}) {
    const Tensor x = input({5, 6, 7}, dtype, -9, 9);
    for (const auto& dims : dim_sets) {
      for (bool keepdim : {false, true}) {
        INFO(dtype_name(dtype) << " dims " << shape_str(dims) << " keepdim " << keepdim);
        require_same([&](const std::vector<Tensor>& t) { return sum(t[0], dims, keepdim); }, {x});
        require_same([&](const std::vector<Tensor>& t) { return max(t[0], dims, keepdim); }, {x});
        require_same([&](const std::vector<Tensor>& t) { return min(t[0].permute({2, 0, 1}), dims, keepdim); }, {x});
        if (is_floating(dtype))
          require_same([&](const std::vector<Tensor>& t) { return mean(t[0], dims, keepdim); }, {x});
      }
    }
    for (int64_t dim : {0, 1, 2}) {
      INFO(dtype_name(dtype) << " arg dim " << dim);
      const Tensor ties = input({5, 6, 7}, DType::int64, 0, 3).to(dtype);  // many equal values: the first must win
      require_same([dim](const std::vector<Tensor>& t) { return argmax(t[0], dim); }, {ties});
      require_same([dim](const std::vector<Tensor>& t) { return argmin(t[0], dim, true); }, {ties});
    }
  }
  SECTION("long rows and many outputs") {
    const Tensor big = input({3, 100000});
    require_same([](const std::vector<Tensor>& t) { return sum(t[0], {1}); }, {big}, 1e-5, 1e-3);
    require_same([](const std::vector<Tensor>& t) { return max(t[0], {1}); }, {big});
    require_same([](const std::vector<Tensor>& t) { return argmin(t[0], 1); }, {big});
    require_same([](const std::vector<Tensor>& t) { return mean(t[0], {0}); }, {big});
  }
  SECTION("NaN wins max and argmax") {
    Tensor x = input({4, 5});
    x.narrow(1, 2, 1).narrow(0, 1, 1).fill_(NAN);
    require_same([](const std::vector<Tensor>& t) { return max(t[0], {1}); }, {x});
    require_same([](const std::vector<Tensor>& t) { return argmax(t[0], 1); }, {x});
  }
}

TEST_CASE("cuda.softmax", "[cuda]") {
  for (DType dtype : {DType::float32, DType::float64}) {
    const Tensor x = input({4, 7, 300}, dtype, -30, 30);
    for (int64_t dim : {0, 1, 2}) {
      INFO(dtype_name(dtype) << " dim " << dim);
      require_same([dim](const std::vector<Tensor>& t) { return softmax(t[0], dim); }, {x});
      require_same([dim](const std::vector<Tensor>& t) { return log_softmax(t[0].transpose(0, 2), dim); }, {x}, 1e-5,
                   1e-5);
    }
  }
}

TEST_CASE("cuda.matmul", "[cuda]") {
  const double tol = 1e-4;
  for (DType dtype : {DType::float32, DType::float64}) {
    INFO(dtype_name(dtype));
    const Tensor a = input({17, 33}, dtype), b = input({33, 9}, dtype, -2, 2, 2);
    require_same([](const std::vector<Tensor>& t) { return matmul(t[0], t[1]); }, {a, b}, tol, tol);
    require_same([](const std::vector<Tensor>& t) { return matmul(t[1].t(), t[0].t()); }, {a, b}, tol, tol);
    require_same([](const std::vector<Tensor>& t) { return matmul(t[0].t().contiguous().t(), t[1]); }, {a, b}, tol,
                 tol);
    const Tensor batched = input({2, 3, 4, 5}, dtype), shared = input({5, 6}, dtype, -2, 2, 3);
    require_same([](const std::vector<Tensor>& t) { return matmul(t[0], t[1]); }, {batched, shared}, tol, tol);
    require_same([](const std::vector<Tensor>& t) { return matmul(t[1].t(), t[0].transpose(-1, -2)); },
                 {batched, shared}, tol, tol);
    const Tensor strided = input({6, 10}, dtype);  // a slice with steps: cuBLAS cannot read it
    require_same([](const std::vector<Tensor>& t) { return matmul(t[0].slice(1, 0, 10, 2), t[1].t()); },
                 {strided, input({4, 5}, dtype)}, tol, tol);
    require_same([](const std::vector<Tensor>& t) { return matmul(t[0], t[1]); },
                 {input({8}, dtype), input({8}, dtype, -2, 2, 4)}, tol, tol);
  }
  require_same([](const std::vector<Tensor>& t) { return matmul(t[0], t[1].t()); },
               {input({5, 7}, DType::int32, -9, 9), input({3, 7}, DType::int32, -9, 9, 2)});
  require_same([](const std::vector<Tensor>& t) { return matmul(t[0], t[1]); },
               {Tensor::zeros({3, 0}), Tensor::zeros({0, 4})});
}

TEST_CASE("cuda.conv_pool", "[cuda]") {
  const Tensor x = input({2, 3, 9, 8});
  for (const Conv2dGeometry& g : {Conv2dGeometry{3, 3, 1, 1, 1, 1}, Conv2dGeometry{2, 3, 2, 1, 0, 1},
                                  Conv2dGeometry{3, 2, 2, 3, 1, 0}}) {
    INFO("kernel " << g.kernel_h << "x" << g.kernel_w << " stride " << g.stride_h << "x" << g.stride_w << " pad "
                   << g.pad_h << "x" << g.pad_w);
    require_same([&g](const std::vector<Tensor>& t) { return im2col(t[0], g); }, {x});
    const Tensor cols = im2col(x, g);
    require_same([&](const std::vector<Tensor>& t) { return col2im(t[0], x.shape(), g); }, {cols});
    const Tensor w = input({4, 3, g.kernel_h, g.kernel_w}, DType::float32, -1, 1, 5), bias = input({4}, DType::float32, -1, 1, 6);
    require_same([&g](const std::vector<Tensor>& t) { return conv2d(t[0], t[1], t[2], g); }, {x, w, bias});
    const Tensor grad_y = input(conv2d(x, w, bias, g).shape(), DType::float32, -1, 1, 7);
    for (int which = 0; which < 3; ++which)
      require_same([&](const std::vector<Tensor>& t) {
        Conv2dGrads grads = conv2d_backward(t[0], t[1], t[2], true, true, true, g);
        return which == 0 ? grads.x : which == 1 ? grads.weight : grads.bias;
      }, {x, w, grad_y}, 1e-4, 1e-5);
    const Pool2dOptions pool{g.kernel_h, g.kernel_w, g.stride_h, g.stride_w, g.pad_h, g.pad_w};
    require_same([&pool](const std::vector<Tensor>& t) { return max_pool2d(t[0], pool).first; }, {x});
    require_same([&pool](const std::vector<Tensor>& t) { return max_pool2d(t[0], pool).second; }, {x});
    require_same([&pool](const std::vector<Tensor>& t) { return avg_pool2d(t[0], pool); }, {x});
    const Tensor grad = avg_pool2d(x, pool);
    require_same([&](const std::vector<Tensor>& t) { return avg_pool2d_backward(t[0], x.shape(), pool); }, {grad});
    require_same([&](const std::vector<Tensor>& t) {
      return max_pool2d_backward(t[0], max_pool2d(t[1], pool).second, x.shape());
    }, {grad, x});
  }
}

TEST_CASE("cuda.indexing", "[cuda]") {
  const Tensor x = input({5, 6, 4});
  const Tensor index = Tensor::from_vector(std::vector<int64_t>{4, 0, 0, 2, 5}, {5});
  require_same([](const std::vector<Tensor>& t) { return index_select(t[0], 1, t[1]); }, {x, index});
  require_same([](const std::vector<Tensor>& t) { return index_select(t[0].transpose(0, 2), 2, t[1]); },
               {x, index.narrow(0, 0, 3)});
  const Tensor gather_index = input({5, 3, 4}, DType::int64, 0, 6);
  require_same([](const std::vector<Tensor>& t) { return gather(t[0], 1, t[1]); }, {x, gather_index});
  for (DType dtype : {DType::float32, DType::float64, DType::int64, DType::int32, DType::uint8}) {
    INFO(dtype_name(dtype));
    const Tensor src = input({5, 3, 4}, dtype, 0, 9);
    require_same([](const std::vector<Tensor>& t) {
      Tensor acc = Tensor::zeros({5, 6, 4}, t[0].dtype(), t[0].device());
      scatter_add_(acc, 1, t[1], t[0]);
      return acc;
    }, {src, gather_index});
  }
  require_same([](const std::vector<Tensor>& t) { return one_hot(t[0], 7); }, {input({9}, DType::int64, 0, 7)});
  require_same([](const std::vector<Tensor>& t) { return cat({t[0], t[1]}, 1); }, {x, input({5, 2, 4})});
}

TEST_CASE("cuda.arange_and_random_match_the_cpu", "[cuda]") {
  require_match(arange(-1.0, 2.0, 0.1, DType::float32, kGpu), arange(-1.0, 2.0, 0.1, DType::float32), 0, 0);
  require_match(arange(int64_t{37}, DType::int64, kGpu), arange(int64_t{37}, DType::int64), 0, 0);
  for (DType dtype : {DType::float32, DType::float64}) {
    INFO(dtype_name(dtype));
    Generator on_cpu(42), on_gpu(42);
    // Bit for bit: uniforms use only exact arithmetic and _rn intrinsics.
    require_match(rand({1001}, on_gpu, -1, 3, dtype, kGpu), rand({1001}, on_cpu, -1, 3, dtype), 0, 0);
    // Normals go through the device libm's log/sqrt/cos: a few ulps.
    require_match(randn({999}, on_gpu, 0.5, 2, dtype, kGpu), randn({999}, on_cpu, 0.5, 2, dtype), 1e-6, 1e-6);
    REQUIRE(on_cpu.offset() == on_gpu.offset());
  }
  Generator on_cpu(7), on_gpu(7);
  require_match(randint(-5, 100, {3, 333}, on_gpu, DType::int64, kGpu), randint(-5, 100, {3, 333}, on_cpu), 0, 0);
  Tensor strided_gpu = Tensor::zeros({6, 4}, DType::float32, kGpu), strided_cpu = Tensor::zeros({6, 4});
  uniform_(strided_gpu.t(), on_gpu, 0, 1);
  uniform_(strided_cpu.t(), on_cpu, 0, 1);
  require_match(strided_gpu, strided_cpu, 0, 0);
}
