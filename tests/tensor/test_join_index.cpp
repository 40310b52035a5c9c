// Joining, splitting, indexing, matmul, im2col/col2im and pooling, each against a naive loop.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "reference.h"

using namespace rg;
using ref::at;
using ref::Index;
using ref::random_tensor;
using ref::values;
using Values = std::vector<double>;

namespace {

Tensor indices(const std::vector<int64_t>& v, const Shape& shape) { return Tensor::from_vector(v, shape); }

// cat by hand: each output index is found in the input that covers it along `dim`.
Values cat_ref(const std::vector<Tensor>& ts, int64_t dim) {
  Shape shape = ts[0].shape();
  shape[dim] = 0;
  for (const Tensor& t : ts) shape[dim] += t.shape()[dim];
  Values out;
  ref::for_each_index(shape, [&](Index i) {
    size_t k = 0;
    while (i[dim] >= ts[k].shape()[dim]) i[dim] -= ts[k++].shape()[dim];
    out.push_back(at(ts[k], i));
  });
  return out;
}

// (..., M, K) @ (..., K, N) by hand, batch dims broadcast.
std::pair<Shape, Values> matmul_ref(const Tensor& a, const Tensor& b) {
  const Shape batch_a(a.shape().begin(), a.shape().end() - 2), batch_b(b.shape().begin(), b.shape().end() - 2);
  const int64_t m = a.shape()[a.dim() - 2], k = a.shape().back(), n = b.shape().back();
  Shape shape = ref::broadcast_shape(batch_a, batch_b);
  shape.push_back(m);
  shape.push_back(n);
  Values out;
  ref::for_each_index(shape, [&](const Index& i) {
    const Index batch(i.begin(), i.end() - 2);
    Index ia = ref::broadcast_index(batch, batch_a), ib = ref::broadcast_index(batch, batch_b);
    ia.insert(ia.end(), {i[i.size() - 2], 0});
    ib.insert(ib.end(), {0, i.back()});
    double s = 0;
    for (int64_t p = 0; p < k; ++p) {
      ia.back() = p;
      ib[ib.size() - 2] = p;
      s += at(a, ia) * at(b, ib);
    }
    out.push_back(s);
  });
  return {shape, out};
}

double dot(const Values& a, const Values& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// Calls fn(h, w) for each input position of pooling window (oh, ow) that lies inside the
// H x W plane (padding positions are skipped), in row-major window order.
void for_each_in_window(const Conv2dGeometry& g, int64_t height, int64_t width, int64_t oh, int64_t ow,
                        const std::function<void(int64_t, int64_t)>& fn) {
  for (int64_t i = 0; i < g.kernel_h; ++i)
    for (int64_t j = 0; j < g.kernel_w; ++j) {
      const int64_t h = oh * g.stride_h - g.pad_h + i, w = ow * g.stride_w - g.pad_w + j;
      if (h >= 0 && h < height && w >= 0 && w < width) fn(h, w);
    }
}

Conv2dGeometry geometry(const Pool2dOptions& o) {
  return {o.kernel_h, o.kernel_w, o.stride_h ? o.stride_h : o.kernel_h, o.stride_w ? o.stride_w : o.kernel_w,
          o.pad_h, o.pad_w};
}

}  // namespace

TEST_CASE("tensor.cat", "[tensor]") {
  const Tensor a = ref::iota({2, 3}), b = random_tensor({4, 3}, 1), c = random_tensor({2, 5}, 2);
  ref::require_close(cat({a, b}, 0), {6, 3}, cat_ref({a, b}, 0), 0, 0);
  ref::require_close(cat({a, c}, 1), {2, 8}, cat_ref({a, c}, 1), 0, 0);
  ref::require_close(cat({c, a, c}, -1), {2, 13}, cat_ref({c, a, c}, 1), 0, 0);
  ref::require_close(cat({a}, 0), {2, 3}, values(a), 0, 0);

  const Tensor a_t = a.t(), d = random_tensor({1, 3}, 3).t();  // (3, 2) and (3, 1), both strided
  ref::require_close(cat({a_t, d}, 1), {3, 3}, cat_ref({a_t, d}, 1), 0, 0);

  const Tensor p = random_tensor({2, 1, 4}, 4), q = random_tensor({4, 3, 2}, 5).permute({2, 1, 0}),
               r = random_tensor({2, 4, 4}, 6).slice(1, 0, 4, 2);
  ref::require_close(cat({p, q, r}, 1), {2, 6, 4}, cat_ref({p, q, r}, 1), 0, 0);
  ref::require_close(cat({a, Tensor::zeros({0, 3})}, 0), {2, 3}, values(a), 0, 0);
}

TEST_CASE("tensor.stack", "[tensor]") {
  const std::vector<Tensor> ts = {random_tensor({2, 3}, 1), random_tensor({3, 2}, 2).t(), ref::iota({2, 3})};
  for (int64_t dim : {0, 1, 2, -1}) {
    INFO("dim " << dim);
    const int64_t d = dim < 0 ? dim + 3 : dim;
    Shape shape = {2, 3};
    shape.insert(shape.begin() + d, 3);
    Values expected;
    ref::for_each_index(shape, [&](Index i) {
      const int64_t k = i[d];
      i.erase(i.begin() + d);
      expected.push_back(at(ts[k], i));
    });
    ref::require_close(stack(ts, dim), shape, expected, 0, 0);
  }
}

TEST_CASE("tensor.split_and_chunk", "[tensor]") {
  const Tensor x = ref::iota({10, 2});
  const std::vector<Tensor> parts = split(x, 4);
  REQUIRE(parts.size() == 3);
  REQUIRE(parts[0].shape() == Shape{4, 2});
  REQUIRE(parts[1].shape() == Shape{4, 2});
  REQUIRE(parts[2].shape() == Shape{2, 2});
  REQUIRE(parts[0].same_data(x));
  REQUIRE(parts[1].storage() == x.storage());
  REQUIRE(values(parts[2]) == Values{16, 17, 18, 19});
  const std::vector<Tensor> columns = split(x, 1, 1);
  REQUIRE(columns.size() == 2);
  REQUIRE(values(columns[1]) == Values{1, 3, 5, 7, 9, 11, 13, 15, 17, 19});

  auto chunk_sizes = [](int64_t n, int64_t chunks) {
    std::vector<int64_t> sizes;
    for (const Tensor& c : chunk(ref::iota({n}), chunks)) sizes.push_back(c.numel());
    return sizes;
  };
  REQUIRE(chunk_sizes(10, 3) == std::vector<int64_t>{4, 4, 2});
  REQUIRE(chunk_sizes(6, 4) == std::vector<int64_t>{2, 2, 2});  // PyTorch: ceil(6/4) = 2 per chunk
  REQUIRE(chunk_sizes(5, 5) == std::vector<int64_t>{1, 1, 1, 1, 1});
  REQUIRE(chunk_sizes(3, 1) == std::vector<int64_t>{3});
  const std::vector<Tensor> halves = chunk(x, 2, 1);
  REQUIRE(halves.size() == 2);
  REQUIRE(halves[1].storage() == x.storage());
  REQUIRE(values(halves[0]) == values(columns[0]));
}

TEST_CASE("tensor.index_select", "[tensor]") {
  const Tensor x = random_tensor({4, 3}, 1);
  const Tensor rows = index_select(x, 0, indices({3, 0, 3}, {3}));
  REQUIRE(rows.shape() == Shape{3, 3});
  for (int64_t j = 0; j < 3; ++j) {
    REQUIRE(at(rows, {0, j}) == at(x, {3, j}));
    REQUIRE(at(rows, {1, j}) == at(x, {0, j}));
    REQUIRE(at(rows, {2, j}) == at(x, {3, j}));
  }
  const Tensor xt = x.t();  // (3, 4)
  const Tensor cols = index_select(xt, 1, indices({2, 0}, {2}));
  ref::require_close(cols, {3, 2}, {at(xt, {0, 2}), at(xt, {0, 0}), at(xt, {1, 2}), at(xt, {1, 0}),
                                    at(xt, {2, 2}), at(xt, {2, 0})}, 0, 0);
  REQUIRE(index_select(x, 0, indices({}, {0})).shape() == Shape{0, 3});
  REQUIRE(values(index_select(x, -1, indices({1}, {1}))) == values(x.narrow(1, 1, 1)));
}

TEST_CASE("tensor.gather_and_scatter_add", "[tensor]") {
  const Tensor x = random_tensor({4, 3, 5}, 1, DType::float64).permute({1, 0, 2});  // (3, 4, 5), strided
  for (int64_t dim : {0, 1, 2, -1}) {
    INFO("dim " << dim);
    const int64_t d = dim < 0 ? dim + 3 : dim;
    Shape index_shape = x.shape();
    index_shape[d] = 2;
    const Tensor index = random_tensor(index_shape, 10 + d, DType::int64, 0, static_cast<double>(x.shape()[d]));

    Values gathered;
    ref::for_each_index(index_shape, [&](Index i) {
      i[d] = static_cast<int64_t>(at(index, i));
      gathered.push_back(at(x, i));
    });
    ref::require_close(gather(x, dim, index), index_shape, gathered, 0, 0);

    const Tensor src = random_tensor(index_shape, 20 + d, DType::float64);
    const Tensor target = random_tensor({5, 4, 3}, 30 + d, DType::float64).permute({2, 1, 0});  // strided
    Values expected = values(target);
    ref::for_each_index(index_shape, [&](const Index& i) {
      Index t = i;
      t[d] = static_cast<int64_t>(at(index, i));
      expected[ref::flat({3, 4, 5}, t)] += at(src, i);  // duplicates accumulate
    });
    REQUIRE(&scatter_add_(target, dim, index, src) == &target);
    ref::require_close(target, {3, 4, 5}, expected, 1e-14, 1e-14);
  }

  const Tensor m = Tensor::zeros({3, 2});
  scatter_add_(m, 0, indices({2, 2, 2, 0}, {2, 2}), Tensor::ones({2, 2}));
  REQUIRE(values(m) == Values{0, 1, 0, 0, 2, 1});
}

TEST_CASE("tensor.one_hot", "[tensor]") {
  const Tensor h = one_hot(indices({2, 0, 1, 2}, {4}), 3);
  REQUIRE(h.dtype() == DType::float32);
  ref::require_close(h, {4, 3}, {0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 1}, 0, 0);

  const Tensor h2 = one_hot(indices({1, 0, 3, 1}, {2, 2}).t(), 4, DType::int64);
  REQUIRE(h2.dtype() == DType::int64);
  ref::require_close(h2, {2, 2, 4}, {0, 1, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 0, 0}, 0, 0);
  REQUIRE_THROWS_AS(one_hot(indices({3}, {1}), 3), Error);
}

TEST_CASE("tensor.matmul", "[tensor]") {
  for (DType dtype : {DType::float32, DType::float64}) {
    const double tol = dtype == DType::float32 ? 1e-4 : 1e-12;  // sums of up to 300 products
    auto r = [&](const Shape& shape, uint64_t seed) { return random_tensor(shape, seed, dtype); };
    INFO(dtype_name(dtype));

    const Tensor u = r({7}, 1), v = r({7}, 2);
    const Tensor d = matmul(u, v);
    REQUIRE(d.dim() == 0);
    REQUIRE(ref::close(d.item(), dot(values(u), values(v)), tol, tol));

    const std::vector<std::pair<Tensor, Tensor>> cases = {
        {r({3, 4}, 3), r({4, 5}, 4)},                                    // 2-d
        {r({4, 3}, 5).t(), r({5, 4}, 6).t()},                            // both transposed
        {r({3, 8}, 7).slice(1, 0, 8, 2), r({4, 5}, 8)},                  // step-2 columns
        {r({1, 1}, 9), r({1, 6}, 10)},                                   // tiny
        {r({2, 1, 3, 4}, 11), r({5, 4, 2}, 12)},                         // broadcast batch dims
        {r({3, 4}, 13), r({2, 4, 5}, 14)},                               // 2-d @ batched
        {r({2, 3, 4}, 15), r({2, 2, 4}, 16).transpose(-1, -2)},          // batched, transposed b
        {r({4, 2, 3}, 17).permute({1, 2, 0}), r({2, 4, 5}, 18)},         // batched, permuted a
        {r({2, 0}, 19), r({0, 3}, 20)},                                  // K = 0: zeros
        {r({6, 3}, 21), r({3, 0}, 22)},                                  // N = 0
        {r({300, 128}, 23).t(), r({300, 96}, 24)},                       // large enough to use threads
    };
    for (const auto& [a, b] : cases) {
      INFO(Catch::Detail::stringify(a.shape()) << " @ " << Catch::Detail::stringify(b.shape()));
      const auto [shape, expected] = matmul_ref(a, b);
      const Tensor out = matmul(a, b);
      REQUIRE(out.dtype() == dtype);
      ref::require_close(out, shape, expected, tol, tol);
    }
  }
}

TEST_CASE("tensor.im2col_and_col2im", "[tensor]") {
  const Conv2dGeometry g{.kernel_h = 3, .kernel_w = 2, .stride_h = 2, .stride_w = 1, .pad_h = 1, .pad_w = 0};
  const Shape x_shape = {2, 3, 5, 6};
  const Tensor x = random_tensor(x_shape, 1, DType::float64);
  const int64_t oh_count = 3, ow_count = 5;  // (5 + 2 - 3) / 2 + 1, (6 - 2) / 1 + 1

  // cols[n][c*kh*kw + i*kw + j][oh*OW + ow] = x[n][c][oh*sh - ph + i][ow*sw - pw + j], 0 in the padding.
  Values expected;
  ref::for_each_index({2, 3 * 3 * 2, oh_count * ow_count}, [&](const Index& p) {
    const int64_t c = p[1] / 6, i = p[1] % 6 / 2, j = p[1] % 2, oh = p[2] / ow_count, ow = p[2] % ow_count;
    const int64_t h = oh * 2 - 1 + i, w = ow + j;
    expected.push_back(h >= 0 && h < 5 ? at(x, {p[0], c, h, w}) : 0.0);
  });
  const Tensor cols = im2col(x, g);
  ref::require_close(cols, {2, 18, 15}, expected, 0, 0);
  ref::require_close(im2col(x.transpose(2, 3).contiguous().transpose(2, 3), g), {2, 18, 15}, expected, 0, 0);

  // col2im is im2col's adjoint: <col2im(y), x> == <y, im2col(x)>.
  const Tensor y = random_tensor({2, 18, 15}, 2, DType::float64);
  const Tensor back = col2im(y, x_shape, g);
  REQUIRE(back.shape() == x_shape);
  const double lhs = dot(values(back), values(x)), rhs = dot(values(y), expected);
  REQUIRE(std::fabs(lhs - rhs) <= 1e-12 * std::fabs(rhs) + 1e-12);
}

TEST_CASE("tensor.max_pool2d", "[tensor]") {
  const Tensor small = ref::iota({1, 1, 4, 4});
  const auto [v, i] = max_pool2d(small, {.kernel_h = 2, .kernel_w = 2});  // stride defaults to the kernel
  ref::require_close(v, {1, 1, 2, 2}, {5, 7, 13, 15}, 0, 0);
  REQUIRE(i.dtype() == DType::int64);
  REQUIRE(values(i) == Values{5, 7, 13, 15});

  const Pool2dOptions o{.kernel_h = 3, .kernel_w = 2, .stride_h = 2, .stride_w = 1, .pad_h = 1, .pad_w = 1};
  const Conv2dGeometry g = geometry(o);
  const Shape x_shape = {2, 3, 6, 7};
  const Tensor x = random_tensor({2, 3, 7, 6}, 1).transpose(2, 3);  // strided input
  const Shape out_shape = {2, 3, 3, 8};  // (6 + 2 - 3) / 2 + 1, (7 + 2 - 2) / 1 + 1
  Values best, best_at;  // padding never wins: the first strict maximum inside the plane
  ref::for_each_index(out_shape, [&](const Index& p) {
    double m = -INFINITY, arg = -1;
    for_each_in_window(g, 6, 7, p[2], p[3], [&](int64_t h, int64_t w) {
      if (at(x, {p[0], p[1], h, w}) > m) {
        m = at(x, {p[0], p[1], h, w});
        arg = static_cast<double>(h * 7 + w);
      }
    });
    best.push_back(m);
    best_at.push_back(arg);
  });
  const auto [values_out, index_out] = max_pool2d(x, o);
  ref::require_close(values_out, out_shape, best, 0, 0);
  ref::require_close(index_out, out_shape, best_at, 0, 0);

  // Backward: each output's gradient goes to its argmax; overlapping windows accumulate.
  const Tensor grad_out = random_tensor(out_shape, 2);
  Values grad_in(ref::count(x_shape), 0.0);
  ref::for_each_index(out_shape, [&](const Index& p) {
    grad_in[ref::flat({2, 3, 42}, {p[0], p[1], static_cast<int64_t>(at(index_out, p))})] += at(grad_out, p);
  });
  ref::require_close(max_pool2d_backward(grad_out, index_out, x_shape), x_shape, grad_in);
}

TEST_CASE("tensor.avg_pool2d", "[tensor]") {
  ref::require_close(avg_pool2d(ref::iota({1, 1, 4, 4}), {.kernel_h = 2, .kernel_w = 2}), {1, 1, 2, 2},
                     {2.5, 4.5, 10.5, 12.5}, 0, 0);

  const Pool2dOptions o{.kernel_h = 3, .kernel_w = 3, .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1};
  const Conv2dGeometry g = geometry(o);
  const Shape x_shape = {2, 2, 5, 6};
  const Shape out_shape = {2, 2, 3, 3};  // (5 + 2 - 3) / 2 + 1, (6 + 2 - 3) / 2 + 1
  const Tensor x = random_tensor(x_shape, 1, DType::float64);
  Values expected;  // padding counts as zeros in the average (count_include_pad)
  ref::for_each_index(out_shape, [&](const Index& p) {
    double s = 0;
    for_each_in_window(g, 5, 6, p[2], p[3], [&](int64_t h, int64_t w) { s += at(x, {p[0], p[1], h, w}); });
    expected.push_back(s / 9);
  });
  ref::require_close(avg_pool2d(x, o), out_shape, expected, 1e-14, 1e-14);

  const Tensor grad_out = random_tensor(out_shape, 2, DType::float64);
  Values grad_in(ref::count(x_shape), 0.0);
  ref::for_each_index(out_shape, [&](const Index& p) {
    for_each_in_window(g, 5, 6, p[2], p[3], [&](int64_t h, int64_t w) {
      grad_in[ref::flat(x_shape, {p[0], p[1], h, w})] += at(grad_out, p) / 9;
    });
  });
  ref::require_close(avg_pool2d_backward(grad_out, x_shape, o), x_shape, grad_in, 1e-14, 1e-14);
}
