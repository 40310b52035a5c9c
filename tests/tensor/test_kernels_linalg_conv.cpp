// The CPU matmul, im2col/col2im, conv2d, pooling and indexing kernels (tensor/cpu/{linalg,conv2d,pool,
// indexing}.cpp) called directly and through the public ops, against naive loops: contiguous
// and strided operands, odd sizes, broadcast batches, every dtype they take, 1 and 2 threads.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "reference.h"
#include "tensor/blas.h"
#include "tensor/cpu/cpu_backend.h"
#include "tensor/cpu/reference.h"
#include "tensor/cpu/sgemm_avx512.h"

using namespace rg;
using ref::at;
using ref::random_tensor;
using ref::values;
using Values = std::vector<double>;

namespace {

// Runs fn once with 1 thread and once with 2, the counts whose splits differ.
template <class Fn>
void with_1_and_2_threads(Fn fn) {
  ref::NumThreadsGuard guard;
  for (int threads : {1, 2}) {
    INFO("threads " << threads);
    set_num_threads(threads);
    fn();
  }
}

double tolerance(DType dtype, int64_t terms) {
  if (!is_floating(dtype)) return 0;
  return (dtype == DType::float32 ? 1e-6 : 1e-14) * static_cast<double>(terms + 4);
}

// The GEMMs this CPU can run for dtype: OpenBLAS, and in float32 ringgrad's own where it has AVX-512.
std::vector<Sgemm> gemms_for(DType dtype) {
  if (dtype != DType::float32 || !cpu::own_sgemm_supported()) return {Sgemm::openblas};
  return {Sgemm::openblas, Sgemm::own_avx512};
}

// Restores the float32 GEMM choice on scope exit.
struct SgemmGuard {
  Sgemm saved = sgemm_kernel();
  ~SgemmGuard() { set_sgemm_kernel(saved); }
};

// <a, b> over all elements, in double.
double dot(const Tensor& a, const Tensor& b) {
  Values va = values(a), vb = values(b);
  double sum = 0;
  for (size_t i = 0; i < va.size(); ++i) sum += va[i] * vb[i];
  return sum;
}

Tensor indices(const Values& v, const Shape& shape) { return ref::from_doubles(v, shape, DType::int64); }

// ---- matmul operands: (B, R, C) views of one random matrix batch in several layouts ----

struct Operand {
  const char* name;
  Tensor t;
};

std::vector<Operand> layouts(int64_t batch, int64_t rows, int64_t cols, uint64_t seed, DType dtype) {
  auto r = [&](const Shape& shape) { return random_tensor(shape, seed, dtype, -4, 4); };
  return {
      {"contiguous", r({batch, rows, cols})},
      {"transposed", r({batch, cols, rows}).transpose(1, 2)},
      {"row-sliced", r({batch, rows, cols + 5}).narrow(2, 3, cols)},
      {"step-2 columns", r({batch, rows, 2 * cols}).slice(2, 0, 2 * cols, 2)},
      {"broadcast batch", r({1, rows, cols}).expand({batch, rows, cols})},
      {"broadcast transposed", r({1, cols, rows}).transpose(1, 2).expand({batch, rows, cols})},
      {"broadcast step-2", r({1, rows, 2 * cols}).slice(2, 0, 2 * cols, 2).expand({batch, rows, cols})},
  };
}

// cpu::matmul against cpu::matmul_reference for every pair of operand layouts, through every
// GEMM this CPU has for dtype.
void check_matmul(int64_t batch, int64_t m, int64_t k, int64_t n, DType dtype) {
  SgemmGuard guard;
  for (Sgemm gemm : gemms_for(dtype)) {
    set_sgemm_kernel(gemm);
    for (const Operand& a : layouts(batch, m, k, 1, dtype))
      for (const Operand& b : layouts(batch, k, n, 2, dtype)) {
        INFO(dtype_name(dtype) << " (" << sgemm_kernel_name(gemm) << ") (" << batch << ", " << m << ", " << k << ") @ ("
                               << k << ", " << n << "): " << a.name << " @ " << b.name);
        Tensor out = Tensor::full({batch, m, n}, 7.0, dtype), expected = Tensor::empty({batch, m, n}, dtype);
        cpu::matmul_reference(a.t, b.t, expected);
        with_1_and_2_threads([&] {
          cpu::matmul(a.t, b.t, out);
          double tol = tolerance(dtype, k) * 16;  // operands are up to 4 in magnitude
          ref::require_close(out, {batch, m, n}, values(expected), tol, tol);
        });
      }
  }
}

}  // namespace

// ---- matmul ----

// ringgrad's own AVX-512 GEMM (the float32 matmul's and convolution's) against the triple loop,
// in double: every transposition, beta 0 and 1, leading dimensions wider than the rows, and
// sizes around its 8-row and 16/48-column tiles and its 128-deep slices (ragged edges everywhere).
TEST_CASE("tensor.own_sgemm_matches_naive_loops", "[tensor]") {
  if (!cpu::own_sgemm_supported()) {
    CHECK_THROWS_WITH(set_sgemm_kernel(Sgemm::own_avx512), Catch::Contains("AVX-512F"));
    WARN("skipped: this CPU has no AVX-512F, so the float32 GEMMs run OpenBLAS only");
    return;
  }
  uint64_t seed = 0;
  for (bool trans_a : {false, true})
    for (bool trans_b : {false, true})
      for (auto [m, n, k] : std::vector<std::array<int64_t, 3>>{
               {1, 1, 1}, {7, 15, 3}, {8, 16, 128}, {9, 17, 129}, {33, 47, 257}, {17, 49, 300}, {520, 100, 25},
               {3, 33, 5}, {13, 48, 130}, {30, 64, 64}, {32, 196, 400}, {400, 32, 196}, {400, 196, 32}, {3, 5, 0}})
        for (float beta : {0.0f, 1.0f}) {
          INFO("trans_a " << trans_a << " trans_b " << trans_b << " m " << m << " n " << n << " k " << k
                          << " beta " << beta);
          const int64_t lda = (trans_a ? m : k) + 3, ldb = (trans_b ? k : n) + 2, ldc = n + 1;
          const Tensor a = random_tensor({(trans_a ? k : m) * lda + 1}, ++seed);
          const Tensor b = random_tensor({(trans_b ? n : k) * ldb + 1}, ++seed);
          Tensor c = random_tensor({m * ldc}, ++seed);
          const std::vector<float> av = a.to_vector<float>(), bv = b.to_vector<float>(), before = c.to_vector<float>();
          cpu::own_sgemm(trans_a, trans_b, m, n, k, a.data<float>(), lda, b.data<float>(), ldb, beta, c.data<float>(),
                         ldc);
          const std::vector<float> after = c.to_vector<float>();
          double worst = 0;
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < ldc; ++j) {
              double want = before[i * ldc + j];  // the padding columns past n stay as they were
              if (j < n) {
                want *= beta;
                for (int64_t p = 0; p < k; ++p)
                  want += static_cast<double>(trans_a ? av[p * lda + i] : av[i * lda + p]) *
                          (trans_b ? bv[j * ldb + p] : bv[p * ldb + j]);
              }
              worst = std::max(worst, std::abs(want - after[i * ldc + j]));
            }
          CHECK(worst <= tolerance(DType::float32, k) * 4);
        }
}

TEST_CASE("tensor.blas_info_names_openblas_and_its_kernels", "[tensor]") {
  const BlasInfo info = blas_info();
  CHECK(info.config.rfind("OpenBLAS ", 0) == 0);
  REQUIRE_FALSE(info.kernels.empty());
  CHECK(info.config.find(info.kernels) != std::string::npos);  // the build string names the kernels too
  if (!info.advice.empty()) CHECK(info.advice.find(info.kernels + " kernels") != std::string::npos);
}

TEST_CASE("tensor.matmul_reference_by_hand", "[tensor]") {
  Tensor a = Tensor::from_vector(std::vector<int64_t>{1, 2, 3, 4}, {1, 2, 2});
  Tensor b = Tensor::from_vector(std::vector<int64_t>{5, 6, 7, 8}, {1, 2, 2});
  Tensor out = Tensor::empty({1, 2, 2}, DType::int64);
  cpu::matmul_reference(a, b, out);
  REQUIRE(values(out) == Values{19, 22, 43, 50});
  cpu::matmul_reference(a.transpose(1, 2), b, out);
  REQUIRE(values(out) == Values{26, 30, 38, 44});
}

TEST_CASE("tensor.matmul_small_and_odd_sizes", "[tensor]") {
  for (DType dtype : {DType::float32, DType::float64})
    for (auto [m, k, n] :
         std::vector<std::array<int64_t, 3>>{{1, 1, 1}, {1, 7, 33}, {33, 7, 1}, {7, 33, 7}, {33, 1, 7}})
      check_matmul(3, m, k, n, dtype);
}

// Big enough that one GEMM is cut into column blocks (N > M) or row blocks, including
// blocks of unequal and single-element width; a batch of 4 is spread over threads instead.
TEST_CASE("tensor.matmul_split_gemms", "[tensor]") {
  for (DType dtype : {DType::float32, DType::float64})
    for (auto [batch, m, k, n] : std::vector<std::array<int64_t, 4>>{
             {1, 70, 65, 150}, {1, 150, 65, 70}, {1, 7, 2100, 33}, {1, 33, 2100, 7}, {1, 1, 600, 513}, {4, 64, 64, 64}})
      check_matmul(batch, m, k, n, dtype);
}

TEST_CASE("tensor.matmul_int64_exact", "[tensor]") {
  check_matmul(3, 7, 33, 5, DType::int64);
  check_matmul(2, 64, 70, 65, DType::int64);  // enough rows to split over threads
  check_matmul(2, 5, 9, 7, DType::int32);
}

TEST_CASE("tensor.matmul_empty_inner_dim_gives_zeros", "[tensor]") {
  for (DType dtype : {DType::float32, DType::int64}) {
    Tensor out = Tensor::full({2, 3, 4}, 7.0, dtype);
    cpu::matmul(Tensor::empty({2, 3, 0}, dtype), Tensor::empty({2, 0, 4}, dtype), out);
    REQUIRE(values(out) == Values(24, 0.0));
  }
}

TEST_CASE("tensor.matmul_public_op", "[tensor]") {
  Tensor w = random_tensor({40, 30}, 3, DType::float64);
  Tensor x = random_tensor({5, 7, 30}, 4, DType::float64);
  with_1_and_2_threads([&] {
    Tensor y = matmul(x, w.t());  // (5, 7, 30) @ (30, 40): a linear layer, batch broadcast
    Tensor expected = Tensor::empty({5, 7, 40}, DType::float64);
    cpu::matmul_reference(x, w.t().unsqueeze(0).expand({5, 30, 40}), expected);
    ref::require_close(y, {5, 7, 40}, values(expected), 1e-13, 1e-13);

    Tensor v = random_tensor({30}, 5, DType::float64);
    Tensor wv = matmul(w, v);
    REQUIRE(wv.shape() == Shape{40});
    for (int64_t i = 0; i < 40; ++i) {
      double sum = 0;
      for (int64_t j = 0; j < 30; ++j) sum += at(w, {i, j}) * at(v, {j});
      REQUIRE(at(wv, {i}) == Approx(sum).epsilon(1e-12));
    }
  });
}

// ---- im2col / col2im ----

namespace {

const std::vector<Conv2dGeometry> kGeometries = {
    {3, 3, 1, 1, 1, 1},  // same-size 3x3 conv
    {3, 3, 2, 2, 0, 0},  // strided, windows that stop short of the edge
    {2, 2, 2, 2, 0, 0},  // 2x2 pooling
    {5, 5, 1, 1, 2, 2},  // padding wider than one
    {3, 2, 2, 1, 1, 0},  // rectangular kernel, mixed strides and pads
    {1, 1, 1, 1, 0, 0},  // 1x1: cols is x itself
    {3, 3, 3, 2, 1, 1},  // rows of windows tile, columns overlap
};

Shape pooled_shape(const Shape& x, const Conv2dGeometry& g) {
  return {x[0], x[1], g.out_size(x[2], g.kernel_h, g.stride_h, g.pad_h),
          g.out_size(x[3], g.kernel_w, g.stride_w, g.pad_w)};
}

Shape cols_shape(const Shape& x, const Conv2dGeometry& g) {
  Shape out = pooled_shape(x, g);
  return {x[0], x[1] * g.kernel_h * g.kernel_w, out[2] * out[3]};
}

template <class Fn>
void for_each_case(Fn fn) {
  SgemmGuard guard;
  for (DType dtype : {DType::float32, DType::float64})
    for (Sgemm gemm : gemms_for(dtype)) {
      set_sgemm_kernel(gemm);
      for (const Shape& shape : std::vector<Shape>{{2, 3, 7, 9}, {1, 1, 5, 5}, {3, 2, 33, 17}, {64, 4, 12, 12}})
        for (const Conv2dGeometry& g : kGeometries) {
          INFO(dtype_name(dtype) << " (" << sgemm_kernel_name(gemm) << ") x " << shape_str(shape) << ", kernel "
                                 << g.kernel_h << "x" << g.kernel_w << ", stride " << g.stride_h << "x" << g.stride_w
                                 << ", pad " << g.pad_h << "x" << g.pad_w);
          fn(dtype, shape, g);
        }
    }
}

}  // namespace

TEST_CASE("tensor.im2col_matches_reference", "[tensor]") {
  for_each_case([](DType dtype, const Shape& shape, const Conv2dGeometry& g) {
    Tensor x = random_tensor(shape, 1, dtype);
    Tensor expected = Tensor::empty(cols_shape(shape, g), dtype);
    cpu::im2col_reference(x, expected, g);
    with_1_and_2_threads([&] {
      Tensor cols = Tensor::full(cols_shape(shape, g), 7.0, dtype);
      cpu::im2col(x, cols, g);
      REQUIRE(values(cols) == values(expected));
      REQUIRE(values(im2col(x, g)) == values(expected));
    });
  });
}

// col2im is the adjoint of im2col: <im2col(x), c> == <x, col2im(c)> for every x and c.
TEST_CASE("tensor.im2col_col2im_adjoint", "[tensor]") {
  for_each_case([](DType dtype, const Shape& shape, const Conv2dGeometry& g) {
    Tensor x = random_tensor(shape, 2, dtype), c = random_tensor(cols_shape(shape, g), 3, dtype);
    with_1_and_2_threads([&] {
      Tensor folded = Tensor::full(shape, 7.0, dtype);  // col2im must overwrite, not add to, this
      cpu::col2im(c, folded, g);
      double lhs = dot(im2col(x, g), c), rhs = dot(x, folded);
      REQUIRE(lhs == Approx(rhs).epsilon(tolerance(dtype, c.numel())).margin(tolerance(dtype, c.numel())));
      REQUIRE(values(col2im(c, shape, g)) == values(folded));
    });
  });
}

// ---- conv2d: the CPU's per-sample im2col + GEMM against the definition ----

namespace {

struct ConvCase {
  Tensor x, w, bias, grad_y;
};

ConvCase conv_case(DType dtype, const Shape& x_shape, const Conv2dGeometry& g, int64_t out_channels) {
  Shape y_shape = pooled_shape(x_shape, g);
  y_shape[1] = out_channels;
  return {random_tensor(x_shape, 11, dtype), random_tensor({out_channels, x_shape[1], g.kernel_h, g.kernel_w}, 12, dtype),
          random_tensor({out_channels}, 13, dtype), random_tensor(y_shape, 14, dtype)};
}

// The three gradients, from `backward` (cpu::conv2d_backward or a reference), each defined
// only when asked for.
template <class Backward>
std::array<Tensor, 3> conv_grads(Backward backward, const ConvCase& c, const Conv2dGeometry& g,
                                 std::array<bool, 3> wanted = {true, true, true}) {
  std::array<Tensor, 3> grads;
  const Tensor* likes[] = {&c.x, &c.w, &c.bias};
  for (int i = 0; i < 3; ++i)
    if (wanted[i]) grads[i] = Tensor::full(likes[i]->shape(), 7.0, c.x.dtype());  // must be overwritten
  backward(c.x, c.w, c.grad_y, grads[0], grads[1], grads[2], g);
  return grads;
}

void require_close_to(const Tensor& actual, const Tensor& expected, double atol) {
  ref::require_close(actual, expected.shape(), values(expected), atol, atol);
}

void check_conv2d_forward_to(int64_t out_channels, DType dtype, const Shape& shape, const Conv2dGeometry& g) {
  ConvCase c = conv_case(dtype, shape, g, out_channels);
  for (bool with_bias : {true, false}) {
    INFO("bias " << with_bias);
    Tensor bias = with_bias ? c.bias : Tensor();
    Tensor expected = Tensor::empty(c.grad_y.shape(), dtype);
    cpu::conv2d_reference(c.x, c.w, bias, expected, g);
    with_1_and_2_threads([&] {
      Tensor y = Tensor::full(c.grad_y.shape(), 7.0, dtype);
      cpu::conv2d(c.x, c.w, bias, y, g);
      require_close_to(y, expected, tolerance(dtype, c.w.numel() / c.w.size(0)));
      require_close_to(conv2d(c.x, c.w, bias, g), expected, tolerance(dtype, c.w.numel() / c.w.size(0)));
    });
  }
}

void check_conv2d_backward_to(int64_t out_channels, DType dtype, const Shape& shape, const Conv2dGeometry& g) {
  ConvCase c = conv_case(dtype, shape, g, out_channels);
  std::array<Tensor, 3> expected = conv_grads(cpu::conv2d_backward_reference, c, g);
  // x's terms per element: at most O*kh*kw; w's and the bias's: N*OH*OW.
  double tolerances[] = {tolerance(dtype, c.w.numel()), tolerance(dtype, c.grad_y.numel()),
                         tolerance(dtype, c.grad_y.numel())};
  with_1_and_2_threads([&] {
    for (std::array<bool, 3> wanted : {std::array{true, true, true}, std::array{false, true, true},
                                       std::array{true, false, false}, std::array{false, false, true}}) {
      INFO("wanted x " << wanted[0] << ", weight " << wanted[1] << ", bias " << wanted[2]);
      std::array<Tensor, 3> grads = conv_grads(cpu::conv2d_backward, c, g, wanted);
      Conv2dGrads op = conv2d_backward(c.x, c.w, c.grad_y, wanted[0], wanted[1], wanted[2], g);
      std::array<Tensor, 3> op_grads = {op.x, op.weight, op.bias};
      for (int i = 0; i < 3; ++i) {
        INFO("gradient " << i);
        REQUIRE(grads[i].defined() == wanted[i]);
        REQUIRE(op_grads[i].defined() == wanted[i]);
        if (!wanted[i]) continue;
        require_close_to(grads[i], expected[i], tolerances[i]);
        require_close_to(op_grads[i], expected[i], tolerances[i]);
      }
    }
  });
}

// Inputs thinner than the kernel: whole taps fall into the padding, in the same-width
// shortcut (stride 1, padding (k - 1) / 2) and in the general path.
void for_each_thin_case(void (*check)(DType, const Shape&, const Conv2dGeometry&)) {
  for (const Shape& shape : std::vector<Shape>{{2, 3, 1, 6}, {2, 2, 2, 9}, {3, 1, 7, 1}})
    for (const Conv2dGeometry& g : {Conv2dGeometry{3, 3, 1, 1, 1, 1}, Conv2dGeometry{5, 5, 1, 1, 2, 2},
                                    Conv2dGeometry{5, 3, 2, 1, 2, 1}}) {
      INFO("x " << shape_str(shape) << ", kernel " << g.kernel_h << "x" << g.kernel_w);
      check(DType::float64, shape, g);
    }
}

// With 3 output channels, the shape for_each_case and for_each_thin_case call.
void check_conv2d_forward(DType dtype, const Shape& shape, const Conv2dGeometry& g) {
  check_conv2d_forward_to(3, dtype, shape, g);
}

void check_conv2d_backward(DType dtype, const Shape& shape, const Conv2dGeometry& g) {
  check_conv2d_backward_to(3, dtype, shape, g);
}

}  // namespace

TEST_CASE("tensor.conv2d_matches_reference", "[tensor]") {
  for_each_case(check_conv2d_forward);
  for_each_thin_case(check_conv2d_forward);
}

TEST_CASE("tensor.conv2d_backward_matches_reference", "[tensor]") {
  for_each_case(check_conv2d_backward);
  for_each_thin_case(check_conv2d_backward);
}

// Stride 1 with "same" padding in float32 on ringgrad's own GEMM reads the columns in place
// (SameConvColumns): several depth slices of whole channels (5 channels of 25 taps each), more
// than one panel of 8 output channels and a partial one, strips ending inside a row, planes
// thinner than the kernel, rectangular kernels.
TEST_CASE("tensor.conv2d_same_padding_reads_columns_in_place", "[tensor]") {
  if (!cpu::own_sgemm_supported()) {
    WARN("skipped: this CPU has no AVX-512F, so convolutions always go through im2col");
    return;
  }
  SgemmGuard guard;
  set_sgemm_kernel(Sgemm::own_avx512);
  struct Case {
    Shape x;
    Conv2dGeometry g;
    int64_t out_channels;
  };
  for (const Case& k : {Case{{2, 12, 14, 14}, {5, 5, 1, 1, 2, 2}, 20}, Case{{3, 16, 7, 9}, {3, 3, 1, 1, 1, 1}, 9},
                        Case{{1, 1, 28, 28}, {5, 5, 1, 1, 2, 2}, 16}, Case{{2, 6, 3, 40}, {5, 3, 1, 1, 2, 1}, 8},
                        Case{{2, 3, 1, 6}, {5, 5, 1, 1, 2, 2}, 4}, Case{{3, 2, 9, 1}, {3, 5, 1, 1, 1, 2}, 17}}) {
    INFO("x " << shape_str(k.x) << ", kernel " << k.g.kernel_h << "x" << k.g.kernel_w << ", " << k.out_channels
              << " output channels");
    check_conv2d_forward_to(k.out_channels, DType::float32, k.x, k.g);
    check_conv2d_backward_to(k.out_channels, DType::float32, k.x, k.g);
  }
}

// The Backend's default conv2d (im2col + matmul on the whole batch, what CUDA runs) computes
// what the CPU's per-sample version does.
TEST_CASE("tensor.conv2d_backend_default_matches_cpu", "[tensor]") {
  Backend& cpu = backend_for(DeviceType::cpu);
  for (const Conv2dGeometry& g : kGeometries) {
    ConvCase c = conv_case(DType::float64, {3, 2, 9, 8}, g, 4);
    Tensor fused = Tensor::empty(c.grad_y.shape(), DType::float64), composed = fused.clone();
    cpu.conv2d(c.x, c.w, c.bias, fused, g);
    cpu.Backend::conv2d(c.x, c.w, c.bias, composed, g);
    require_close_to(composed, fused, 1e-12);
    auto fused_backward = [&](auto&&... args) { cpu.conv2d_backward(args...); };
    auto composed_backward = [&](auto&&... args) { cpu.Backend::conv2d_backward(args...); };
    std::array<Tensor, 3> expected = conv_grads(fused_backward, c, g), got = conv_grads(composed_backward, c, g);
    for (int i = 0; i < 3; ++i) require_close_to(got[i], expected[i], 1e-12);
  }
}

TEST_CASE("tensor.conv2d_rejects_mismatched_operands", "[tensor]") {
  const Conv2dGeometry g{3, 3, 1, 1, 1, 1};
  Tensor x = Tensor::zeros({2, 3, 8, 8}), w = Tensor::zeros({4, 3, 3, 3});
  REQUIRE_THROWS_WITH(conv2d(x, Tensor::zeros({4, 2, 3, 3}), Tensor(), g),
                      Catch::Contains("conv2d: input [2, 3, 8, 8]") && Catch::Contains("does not match weight [4, 2, 3, 3]"));
  REQUIRE_THROWS_WITH(conv2d(x, w.to(DType::float64), Tensor(), g), Catch::Contains("float64"));
  REQUIRE_THROWS_WITH(conv2d(x, w, Tensor::zeros({3}), g), Catch::Contains("conv2d: bias [3] must be (4)"));
  REQUIRE_THROWS_WITH(conv2d(x.view({6, 8, 8}), w, Tensor(), g), Catch::Contains("conv2d: expects (B, C, H, W)"));
  REQUIRE_THROWS_WITH(conv2d(x, Tensor::zeros({4, 3, 5, 5}), Tensor(), g),
                      Catch::Contains("weight [4, 3, 5, 5] does not match the kernel size 3x3"));
  REQUIRE_THROWS_WITH(conv2d(Tensor::zeros({2, 3, 2, 2}), w, Tensor(), {3, 3, 1, 1, 0, 0}),
                      Catch::Contains("does not fit input"));
  REQUIRE_THROWS_WITH(conv2d_backward(x, w, Tensor::zeros({2, 4, 7, 8}), true, true, true, g),
                      Catch::Contains("conv2d_backward: gradient [2, 4, 7, 8] does not match the output [2, 4, 8, 8]"));
}

// ---- pooling ----

namespace {

// A max-pool kernel's (the optimised one's or the reference's) output and indices for x.
struct Pooled {
  Tensor out, indices;
};
template <class Kernel>
Pooled run_max_pool(Kernel kernel, const Tensor& x, const Conv2dGeometry& g) {
  const Shape shape = pooled_shape(x.shape(), g);
  Pooled pooled{Tensor::empty(shape, x.dtype()), Tensor::empty(shape, DType::int64)};
  kernel(x, pooled.out, pooled.indices, g);
  return pooled;
}

}  // namespace

TEST_CASE("tensor.max_pool2d_matches_reference", "[tensor]") {
  for_each_case([](DType dtype, const Shape& shape, const Conv2dGeometry& g) {
    if (2 * g.pad_h > g.kernel_h || 2 * g.pad_w > g.kernel_w) return;  // every window must see the input
    Tensor x = random_tensor(shape, 4, dtype);
    const Pooled expected = run_max_pool(cpu::max_pool2d_reference, x, g);
    with_1_and_2_threads([&] {
      const Pooled got = run_max_pool(cpu::max_pool2d, x, g);
      REQUIRE(values(got.out) == values(expected.out));
      REQUIRE(values(got.indices) == values(expected.indices));
      auto [public_out, public_indices] =
          max_pool2d(x, {g.kernel_h, g.kernel_w, g.stride_h, g.stride_w, g.pad_h, g.pad_w});
      REQUIRE(values(public_out) == values(expected.out));
      REQUIRE(values(public_indices) == values(expected.indices));
    });
  });
}

TEST_CASE("tensor.max_pool2d_ties_nan_and_padding", "[tensor]") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  // x: (1, 1, 4, 4) under 2x2 windows, stride 2, padding 1: corner windows see 1 cell,
  // edge windows 2, inner ones 4.
  Tensor x = ref::from_doubles({-5, -5, -5, -5,   //
                                2, 3, 3, -inf,    //
                                nan, 1, 2, -inf,  //
                                0, 0, 0, 0},
                               {1, 1, 4, 4}, DType::float64);
  Conv2dGeometry g{2, 2, 2, 2, 1, 1};
  for (auto kernel : {cpu::max_pool2d, cpu::max_pool2d_reference}) {
    const Pooled pooled = run_max_pool(kernel, x, g);  // (1, 1, 3, 3)
    Values v = values(pooled.out);
    REQUIRE(std::isnan(v[3]));  // a NaN beats everything
    v[3] = 0;
    // -5, not the zero padding; ties go to the first cell; an all -inf window picks its first.
    REQUIRE(v == Values{-5, -5, -5, 0, 3, -inf, 0, 0, 0});
    REQUIRE(values(pooled.indices) == Values{0, 1, 3, 8, 5, 7, 12, 13, 15});
  }
}

// The 2x2, stride-2, unpadded fast path against the reference on inputs full of ties,
// NaNs (two in a window: the later wins) and -inf, on odd sizes whose last row and column
// no window covers, and on rows of 16 outputs and more (the AVX-512 kernel's step) with and
// without a partial last step.
TEST_CASE("tensor.max_pool2d_2x2_fast_path_ties_nan_odd_sizes", "[tensor]") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const Values pool = {-inf, -1, 0, 0, 1, 2, 2, nan};
  const Conv2dGeometry g{2, 2, 2, 2, 0, 0};
  for (DType dtype : {DType::float32, DType::float64})
    for (const Shape& shape : std::vector<Shape>{{2, 3, 5, 7}, {1, 2, 2, 2}, {3, 1, 9, 4}, {1, 1, 3, 3},
                                                   {1, 2, 6, 35}, {2, 1, 4, 66}, {1, 1, 2, 32}, {1, 1, 3, 28}}) {
      INFO(dtype_name(dtype) << " x " << shape_str(shape));
      std::mt19937_64 rng(11);
      Values v(ref::count(shape));
      for (double& e : v) e = pool[rng() % pool.size()];
      Tensor x = ref::from_doubles(v, shape, dtype);
      const Pooled expected = run_max_pool(cpu::max_pool2d_reference, x, g);
      with_1_and_2_threads([&] {
        const Pooled got = run_max_pool(cpu::max_pool2d, x, g);
        ref::require_close(got.out, pooled_shape(shape, g), values(expected.out), 0, 0);  // NaN must meet NaN
        REQUIRE(values(got.indices) == values(expected.indices));
      });
    }
}

namespace {

// Average pooling by hand: padding counts as zeros, every window divides by kh*kw.
Values avg_pool_ref(const Tensor& x, const Conv2dGeometry& g) {
  Values out;
  ref::for_each_index(pooled_shape(x.shape(), g), [&](const ref::Index& o) {
    double sum = 0;
    for (int64_t i = 0; i < g.kernel_h; ++i)
      for (int64_t j = 0; j < g.kernel_w; ++j) {
        int64_t h = o[2] * g.stride_h - g.pad_h + i, w = o[3] * g.stride_w - g.pad_w + j;
        if (h >= 0 && h < x.size(2) && w >= 0 && w < x.size(3)) sum += at(x, {o[0], o[1], h, w});
      }
    out.push_back(sum / static_cast<double>(g.kernel_h * g.kernel_w));
  });
  return out;
}

}  // namespace

TEST_CASE("tensor.avg_pool2d_matches_naive", "[tensor]") {
  for_each_case([](DType dtype, const Shape& shape, const Conv2dGeometry& g) {
    Tensor x = random_tensor(shape, 5, dtype);
    Values expected = avg_pool_ref(x, g);
    double tol = tolerance(dtype, g.kernel_h * g.kernel_w);
    with_1_and_2_threads([&] {
      Tensor out = Tensor::empty(pooled_shape(shape, g), dtype);
      cpu::avg_pool2d(x, out, g);
      ref::require_close(out, pooled_shape(shape, g), expected, tol, tol);
    });
  });
}

// The backward is the adjoint of the forward: <avg_pool(x), d> == <x, avg_pool_backward(d)>.
TEST_CASE("tensor.avg_pool2d_backward_adjoint", "[tensor]") {
  for_each_case([](DType dtype, const Shape& shape, const Conv2dGeometry& g) {
    Tensor x = random_tensor(shape, 6, dtype), grad_out = random_tensor(pooled_shape(shape, g), 7, dtype);
    with_1_and_2_threads([&] {
      Tensor grad_in = Tensor::full(shape, 7.0, dtype);  // must be overwritten, not added to
      cpu::avg_pool2d_backward(grad_out, grad_in, g);
      Tensor pooled = Tensor::empty(pooled_shape(shape, g), dtype);
      cpu::avg_pool2d(x, pooled, g);
      double tol = tolerance(dtype, x.numel());
      REQUIRE(dot(pooled, grad_out) == Approx(dot(x, grad_in)).epsilon(tol).margin(tol));
    });
  });
}

// ---- indexing ----

namespace {

const std::vector<DType> kAllDtypes = {DType::float32, DType::float64, DType::int64, DType::int32, DType::uint8};

// A (3, 4, 5) tensor in three layouts; values in [0, 40), so that a start in [0, 50) plus up
// to 5 scattered values stays exact in uint8.
std::vector<Operand> sources(DType dtype) {
  return {
      {"contiguous", random_tensor({3, 4, 5}, 8, dtype, 0, 40)},
      {"permuted", random_tensor({5, 3, 4}, 9, dtype, 0, 40).permute({1, 2, 0})},
      {"sliced", random_tensor({6, 4, 7}, 10, dtype, 0, 40).slice(0, 0, 6, 2).narrow(2, 1, 5)},
  };
}

// A tensor of `shape` written into a transposed buffer, so kernels must honour dst strides.
Tensor transposed_output(const Shape& shape, DType dtype) {
  Shape flipped = shape;
  std::swap(flipped.front(), flipped.back());
  return Tensor::zeros(flipped, dtype).transpose(0, static_cast<int64_t>(shape.size()) - 1);
}

}  // namespace

TEST_CASE("tensor.index_select_kernel_strided_all_dtypes", "[tensor]") {
  Tensor index = indices({2, 0, 1, 2, 0}, {5}).slice(0, 0, 5, 2);  // {2, 1, 0}, stride 2
  for (DType dtype : kAllDtypes)
    for (const Operand& src : sources(dtype))
      for (int64_t dim = 0; dim < 3; ++dim) {
        INFO(dtype_name(dtype) << " " << src.name << " dim " << dim);
        Shape shape = src.t.shape();
        shape[dim] = 3;
        Values expected;
        ref::for_each_index(shape, [&](ref::Index i) {
          i[dim] = static_cast<int64_t>(at(index, {i[dim]}));
          expected.push_back(at(src.t, i));
        });
        with_1_and_2_threads([&] {
          Tensor dst = transposed_output(shape, dtype);
          cpu::index_select(src.t, dim, index, dst);
          ref::require_close(dst, shape, expected, 0, 0);
        });
      }
}

TEST_CASE("tensor.gather_kernel_strided_all_dtypes", "[tensor]") {
  for (DType dtype : kAllDtypes)
    for (const Operand& src : sources(dtype))
      for (int64_t dim = 0; dim < 3; ++dim) {
        INFO(dtype_name(dtype) << " " << src.name << " dim " << dim);
        Shape shape = {2, 3, 4};  // smaller than src in every dim, as gather allows
        shape[dim] = 6;
        double range = static_cast<double>(src.t.size(dim));
        Tensor index =
            random_tensor({shape[2], shape[1], shape[0]}, 11 + dim, DType::int64, 0, range).permute({2, 1, 0});
        Values expected;
        ref::for_each_index(shape, [&](ref::Index i) {
          ref::Index j = i;
          j[dim] = static_cast<int64_t>(at(index, i));
          expected.push_back(at(src.t, j));
        });
        with_1_and_2_threads([&] {
          Tensor dst = transposed_output(shape, dtype);
          cpu::gather(src.t, dim, index, dst);
          ref::require_close(dst, shape, expected, 0, 0);
        });
      }
}

namespace {

// dst += scatter of src along dim, by hand, in double.
Values scatter_add_ref(const Tensor& dst, int64_t dim, const Tensor& index, const Tensor& src) {
  Values out = values(dst);
  ref::for_each_index(src.shape(), [&](const ref::Index& i) {
    ref::Index j = i;
    j[dim] = static_cast<int64_t>(at(index, i));
    out[ref::flat(dst.shape(), j)] += at(src, i);
  });
  return out;
}

}  // namespace

TEST_CASE("tensor.scatter_add_kernel_strided_all_dtypes", "[tensor]") {
  for (DType dtype : kAllDtypes)
    for (const Operand& src : sources(dtype))
      for (int64_t dim = 0; dim < 3; ++dim) {
        INFO(dtype_name(dtype) << " " << src.name << " dim " << dim);
        Shape dst_shape = {4, 5, 6};
        Tensor index = random_tensor({5, 4, 3}, 12 + dim, DType::int64, 0, static_cast<double>(dst_shape[dim]))
                           .permute({2, 1, 0});  // (3, 4, 5) like src, many repeats along dim
        Tensor start = random_tensor(dst_shape, 13, dtype, 0, 50);
        Values expected = scatter_add_ref(start, dim, index, src.t);
        with_1_and_2_threads([&] {
          Tensor dst = transposed_output(dst_shape, dtype);
          dst.copy_(start);
          cpu::scatter_add(dst, dim, index, src.t);
          ref::require_close(dst, dst_shape, expected, 1e-6, 1e-6);
        });
      }
}

// Large enough to split over 2 threads along the dim that is not scattered; every index
// repeats, so any race would lose additions. int64 keeps the sums exact.
TEST_CASE("tensor.scatter_add_kernel_parallel_collisions", "[tensor]") {
  for (int64_t dim : {0, 1}) {
    Shape src_shape = dim == 0 ? Shape{600, 128} : Shape{128, 600};
    Shape dst_shape = dim == 0 ? Shape{3, 128} : Shape{128, 3};
    Tensor index = random_tensor(src_shape, 14, DType::int64, 0, 3);
    Tensor src = random_tensor(src_shape, 15, DType::int64, -1000, 1000);
    Values expected = scatter_add_ref(Tensor::zeros(dst_shape, DType::int64), dim, index, src);
    with_1_and_2_threads([&] {
      Tensor dst = Tensor::zeros(dst_shape, DType::int64);
      cpu::scatter_add(dst, dim, index, src);
      REQUIRE(values(dst) == expected);
    });
  }
}

TEST_CASE("tensor.max_pool2d_backward_routes_to_argmax", "[tensor]") {
  Tensor x = random_tensor({2, 3, 9, 8}, 16, DType::float64);
  auto [out, indices] = max_pool2d(x, {3, 3, 2, 2, 1, 1});
  Tensor grad_out = random_tensor(out.shape(), 17, DType::float64);
  Values expected(static_cast<size_t>(x.numel()), 0.0);
  ref::for_each_index(out.shape(), [&](const ref::Index& o) {
    int64_t plane = o[0] * 3 + o[1];
    expected[static_cast<size_t>(plane * 72 + static_cast<int64_t>(at(indices, o)))] += at(grad_out, o);
  });
  with_1_and_2_threads([&] {
    ref::require_close(max_pool2d_backward(grad_out, indices, x.shape()), x.shape(), expected, 1e-14, 1e-14);
  });
}
