// The convolution and pooling ops of tensor/ops.h: window geometry and shape checks, then
// one Backend primitive each (max-pool's backward is a scatter_add of the gradient to the
// positions that won).
#include "tensor/ops.h"

#include <utility>

#include "tensor/op_checks.h"

namespace rg {

using namespace detail;

static void check_image_batch(const char* op, const Tensor& x) {
  check_defined(op, x);
  RG_CHECK(x.dim() == 4, op, ": expects (B, C, H, W), got shape ", shape_str(x.shape()));
  check_floating(op, x);
}

static Conv2dGeometry pool_geometry(const Pool2dOptions& o) {
  return {o.kernel_h, o.kernel_w, o.stride_h ? o.stride_h : o.kernel_h, o.stride_w ? o.stride_w : o.kernel_w, o.pad_h,
          o.pad_w};
}

// Output (OH, OW) of a window sweep, with the checks every conv/pool op needs. The padded
// input size is computed checked, so the backends' window positions cannot overflow.
static std::pair<int64_t, int64_t> output_size(const char* op, const Shape& x, const Conv2dGeometry& g) {
  RG_CHECK(x.size() == 4, op, ": image shape must be (B, C, H, W), got ", shape_str(x));
  numel_of(x, op);  // sizes >= 0, count in range
  RG_CHECK(g.kernel_h > 0 && g.kernel_w > 0 && g.stride_h > 0 && g.stride_w > 0 && g.pad_h >= 0 && g.pad_w >= 0, op,
           ": kernel ", g.kernel_h, "x", g.kernel_w, ", stride ", g.stride_h, "x", g.stride_w, ", padding ", g.pad_h,
           "x", g.pad_w, " are not valid");
  const int64_t padded_h = checked_add(x[2], checked_mul(2, g.pad_h, op), op);
  const int64_t padded_w = checked_add(x[3], checked_mul(2, g.pad_w, op), op);
  RG_CHECK(padded_h >= g.kernel_h && padded_w >= g.kernel_w, op, ": kernel ", g.kernel_h, "x", g.kernel_w,
           " does not fit input ", shape_str(x), " with padding ", g.pad_h, "x", g.pad_w);
  return {g.out_size(x[2], g.kernel_h, g.stride_h, g.pad_h), g.out_size(x[3], g.kernel_w, g.stride_w, g.pad_w)};
}

// The im2col columns of an image batch x: (B, C*kh*kw, OH*OW).
static Shape columns_shape(const char* op, const Shape& x, const Conv2dGeometry& g) {
  auto [oh, ow] = output_size(op, x, g);
  return {x[0], checked_mul(checked_mul(x[1], g.kernel_h, op), g.kernel_w, op), checked_mul(oh, ow, op)};
}

Tensor im2col(const Tensor& x, const Conv2dGeometry& g) {
  check_image_batch("im2col", x);
  Tensor cols = Tensor::empty(columns_shape("im2col", x.shape(), g), x.dtype(), x.device());
  backend_for(x).im2col(x.contiguous(), cols, g);
  return cols;
}

Tensor col2im(const Tensor& cols, const Shape& x_shape, const Conv2dGeometry& g) {
  check_defined("col2im", cols);
  Shape expected = columns_shape("col2im", x_shape, g);
  RG_CHECK(cols.shape() == expected, "col2im: columns of shape ", shape_str(cols.shape()), " do not match image ",
           shape_str(x_shape), " (expected ", shape_str(expected), ")");
  Tensor x = Tensor::empty(x_shape, cols.dtype(), cols.device());
  backend_for(cols).col2im(cols.contiguous(), x, g);
  return x;
}

static Shape conv2d_output_shape(const char* op, const Tensor& x, const Tensor& w, const Tensor& bias,
                                 const Conv2dGeometry& g) {
  check_image_batch(op, x);
  check_same_device(op, x, w);
  RG_CHECK(w.dim() == 4 && w.size(1) == x.size(1) && w.dtype() == x.dtype(), op, ": input ", shape_str(x.shape()), " ",
           dtype_name(x.dtype()), " (B, C, H, W) does not match weight ", shape_str(w.shape()), " ",
           dtype_name(w.dtype()), " (O, C, kh, kw)");
  RG_CHECK(w.size(2) == g.kernel_h && w.size(3) == g.kernel_w, op, ": weight ", shape_str(w.shape()),
           " does not match the kernel size ", g.kernel_h, "x", g.kernel_w);
  RG_CHECK(!bias.defined() || (bias.shape() == Shape{w.size(0)} && bias.dtype() == x.dtype() &&
                               bias.device() == x.device()),
           op, ": bias ", bias.defined() ? shape_str(bias.shape()) : "", " must be (", w.size(0), ") like the weight");
  auto [oh, ow] = output_size(op, x.shape(), g);
  return {x.size(0), w.size(0), oh, ow};
}

Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dGeometry& g) {
  Shape shape = conv2d_output_shape("conv2d", x, w, bias, g);
  Tensor y = Tensor::empty(shape, x.dtype(), x.device());
  backend_for(x).conv2d(x.contiguous(), w.contiguous(), bias.defined() ? bias.contiguous() : bias, y, g);
  return y;
}

Conv2dGrads conv2d_backward(const Tensor& x, const Tensor& w, const Tensor& grad_y, bool want_x, bool want_weight,
                            bool want_bias, const Conv2dGeometry& g) {
  Shape shape = conv2d_output_shape("conv2d_backward", x, w, Tensor(), g);
  check_same_device("conv2d_backward", x, grad_y);
  RG_CHECK(grad_y.shape() == shape && grad_y.dtype() == x.dtype(), "conv2d_backward: gradient ",
           shape_str(grad_y.shape()), " does not match the output ", shape_str(shape));
  auto maybe_empty = [&](bool wanted, const Shape& s) { return wanted ? Tensor::empty(s, x.dtype(), x.device()) : Tensor(); };
  Conv2dGrads grads{maybe_empty(want_x, x.shape()), maybe_empty(want_weight, w.shape()),
                    maybe_empty(want_bias, {w.size(0)})};
  if (want_x || want_weight || want_bias)
    backend_for(x).conv2d_backward(x.contiguous(), w.contiguous(), grad_y.contiguous(), grads.x, grads.weight,
                                  grads.bias, g);
  return grads;
}

std::pair<Tensor, Tensor> max_pool2d(const Tensor& x, const Pool2dOptions& options) {
  check_image_batch("max_pool2d", x);
  Conv2dGeometry g = pool_geometry(options);
  RG_CHECK(g.pad_h <= g.kernel_h / 2 && g.pad_w <= g.kernel_w / 2, "max_pool2d: padding ", g.pad_h, "x", g.pad_w,
           " must be at most half the kernel ", g.kernel_h, "x", g.kernel_w);
  auto [oh, ow] = output_size("max_pool2d", x.shape(), g);
  Tensor out = Tensor::empty({x.size(0), x.size(1), oh, ow}, x.dtype(), x.device());
  Tensor indices = Tensor::empty(out.shape(), DType::int64, x.device());
  backend_for(x).max_pool2d(x.contiguous(), out, indices, g);
  return {out, indices};
}

Tensor max_pool2d_backward(const Tensor& grad_out, const Tensor& indices, const Shape& x_shape) {
  check_same_device("max_pool2d_backward", grad_out, indices);
  RG_CHECK(grad_out.shape() == indices.shape() && grad_out.dim() == 4 && x_shape.size() == 4 &&
               grad_out.size(0) == x_shape[0] && grad_out.size(1) == x_shape[1],
           "max_pool2d_backward: gradient ", shape_str(grad_out.shape()), " and indices ", shape_str(indices.shape()),
           " must match each other and the (B, C) of the input ", shape_str(x_shape));
  numel_of(x_shape, "max_pool2d_backward");  // sizes >= 0, count in range: the products below fit
  // Each output's gradient goes back to the input position that won the max.
  int64_t planes = x_shape[0] * x_shape[1];
  Tensor grad_in = Tensor::zeros({planes, x_shape[2] * x_shape[3]}, grad_out.dtype(), grad_out.device());
  backend_for(grad_out).scatter_add(grad_in, 1, indices.contiguous().view({planes, -1}),
                                   grad_out.contiguous().view({planes, -1}));
  return grad_in.view(x_shape);
}

Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& options) {
  check_image_batch("avg_pool2d", x);
  Conv2dGeometry g = pool_geometry(options);
  auto [oh, ow] = output_size("avg_pool2d", x.shape(), g);
  Tensor out = Tensor::empty({x.size(0), x.size(1), oh, ow}, x.dtype(), x.device());
  backend_for(x).avg_pool2d(x.contiguous(), out, g);
  return out;
}

Tensor avg_pool2d_backward(const Tensor& grad_out, const Shape& x_shape, const Pool2dOptions& options) {
  check_defined("avg_pool2d_backward", grad_out);
  Conv2dGeometry g = pool_geometry(options);
  auto [oh, ow] = output_size("avg_pool2d_backward", x_shape, g);
  Shape expected = {x_shape[0], x_shape[1], oh, ow};
  RG_CHECK(grad_out.shape() == expected, "avg_pool2d_backward: gradient ", shape_str(grad_out.shape()),
           " does not match the pooled shape ", shape_str(expected));
  Tensor grad_in = Tensor::empty(x_shape, grad_out.dtype(), grad_out.device());
  backend_for(grad_out).avg_pool2d_backward(grad_out.contiguous(), grad_in, g);
  return grad_in;
}

}  // namespace rg
