// Differentiable elementwise ops: forward and backward side by side. Gradients of
// broadcast inputs are summed back to the input's shape with sum_to.
#include "autograd/functions.h"
#include "autograd/node.h"

namespace rg {

Variable add(const Variable& a, const Variable& b) {
  Shape sa = a.shape(), sb = b.shape();
  return make_result("add", rg::add(a.data(), b.data()), {a, b}, [sa, sb](const Tensor& g, const NeedsGrad& needs) {
    return Gradients{needs[0] ? sum_to(g, sa) : Tensor(), needs[1] ? sum_to(g, sb) : Tensor()};
  });
}

Variable sub(const Variable& a, const Variable& b) {
  Shape sa = a.shape(), sb = b.shape();
  return make_result("sub", rg::sub(a.data(), b.data()), {a, b}, [sa, sb](const Tensor& g, const NeedsGrad& needs) {
    return Gradients{needs[0] ? sum_to(g, sa) : Tensor(), needs[1] ? sum_to(-g, sb) : Tensor()};
  });
}

Variable mul(const Variable& a, const Variable& b) {
  Tensor x = a.data(), y = b.data();
  return make_result("mul", x * y, {a, b}, [x, y](const Tensor& g, const NeedsGrad& needs) {
    return Gradients{needs[0] ? sum_to(g * y, x.shape()) : Tensor(), needs[1] ? sum_to(g * x, y.shape()) : Tensor()};
  });
}

Variable div(const Variable& a, const Variable& b) {
  Tensor x = a.data(), y = b.data();
  return make_result("div", x / y, {a, b}, [x, y](const Tensor& g, const NeedsGrad& needs) {
    // d(x/y)/dx = 1/y,  d(x/y)/dy = -x/y^2
    return Gradients{needs[0] ? sum_to(g / y, x.shape()) : Tensor(),
                     needs[1] ? sum_to(-g * x / square(y), y.shape()) : Tensor()};
  });
}

// maximum/minimum send the gradient to the selected input, all of it to `a` on ties
// (PyTorch splits it evenly there; we keep the simpler rule and test away from ties).
static Variable select_binary(const char* name, const Variable& a, const Variable& b, bool take_max) {
  Tensor x = a.data(), y = b.data();
  Tensor pick_a = take_max ? ge(x, y) : le(x, y);
  Tensor out = where(pick_a, x, y);
  return make_result(name, out, {a, b}, [x, y, pick_a](const Tensor& g, const NeedsGrad& needs) {
    Tensor zero = Tensor::zeros({}, g.dtype(), g.device());
    return Gradients{needs[0] ? sum_to(where(pick_a, g, zero), x.shape()) : Tensor(),
                     needs[1] ? sum_to(where(pick_a, zero, g), y.shape()) : Tensor()};
  });
}
Variable maximum(const Variable& a, const Variable& b) { return select_binary("maximum", a, b, true); }
Variable minimum(const Variable& a, const Variable& b) { return select_binary("minimum", a, b, false); }

Variable pow(const Variable& x, double exponent) {
  Tensor in = x.data();
  return make_result("pow", rg::pow(in, exponent), {x}, [in, exponent](const Tensor& g, const NeedsGrad&) {
    return Gradients{g * rg::pow(in, exponent - 1) * exponent};  // d x^p = p x^(p-1)
  });
}

Variable neg(const Variable& x) {
  return make_result("neg", -x.data(), {x}, [](const Tensor& g, const NeedsGrad&) { return Gradients{-g}; });
}

Variable exp(const Variable& x) {
  Tensor y = rg::exp(x.data());
  return make_result("exp", y, {x}, [y](const Tensor& g, const NeedsGrad&) { return Gradients{g * y}; });
}

Variable log(const Variable& x) {
  Tensor in = x.data();
  return make_result("log", rg::log(in), {x}, [in](const Tensor& g, const NeedsGrad&) { return Gradients{g / in}; });
}

Variable sqrt(const Variable& x) {
  Tensor y = rg::sqrt(x.data());
  return make_result("sqrt", y, {x}, [y](const Tensor& g, const NeedsGrad&) { return Gradients{g / (y * 2.0)}; });
}

Variable tanh(const Variable& x) {
  Tensor y = rg::tanh(x.data());
  return make_result("tanh", y, {x}, [y](const Tensor& g, const NeedsGrad&) {
    return Gradients{g * (1.0 - square(y))};  // 1 - tanh^2
  });
}

Variable sigmoid(const Variable& x) {
  Tensor y = rg::sigmoid(x.data());
  return make_result("sigmoid", y, {x}, [y](const Tensor& g, const NeedsGrad&) {
    return Gradients{g * y * (1.0 - y)};  // s (1 - s)
  });
}

Variable relu(const Variable& x) {
  Tensor y = rg::relu(x.data());
  return make_result("relu", y, {x}, [y](const Tensor& g, const NeedsGrad&) {
    // dx = g where y > 0, else 0: one pass, where g * (y > 0) would take two and turn an
    // infinite g into NaN.
    return Gradients{where_positive(g, y)};
  });
}

Variable abs(const Variable& x) {
  Tensor in = x.data();
  return make_result("abs", rg::abs(in), {x}, [in](const Tensor& g, const NeedsGrad&) {
    return Gradients{g * sign(in)};
  });
}

Variable square(const Variable& x) {
  Tensor in = x.data();
  return make_result("square", rg::square(in), {x}, [in](const Tensor& g, const NeedsGrad&) {
    return Gradients{g * in * 2.0};
  });
}

Variable clamp(const Variable& x, double low, double high) {
  Tensor in = x.data();
  return make_result("clamp", rg::clamp(in, low, high), {x}, [in, low, high](const Tensor& g, const NeedsGrad&) {
    Tensor inside = mul(ge(in, Tensor::scalar(low, in.dtype(), in.device())),
                        le(in, Tensor::scalar(high, in.dtype(), in.device())));
    return Gradients{g * inside.to(g.dtype())};
  });
}

static Variable scalar_of(const Variable& like, double value) {
  return Variable(Tensor::scalar(value, like.dtype(), like.device()));
}

Variable operator+(const Variable& a, const Variable& b) { return add(a, b); }
Variable operator-(const Variable& a, const Variable& b) { return sub(a, b); }
Variable operator*(const Variable& a, const Variable& b) { return mul(a, b); }
Variable operator/(const Variable& a, const Variable& b) { return div(a, b); }
Variable operator-(const Variable& x) { return neg(x); }
Variable operator+(const Variable& a, double b) { return add(a, scalar_of(a, b)); }
Variable operator-(const Variable& a, double b) { return sub(a, scalar_of(a, b)); }
Variable operator*(const Variable& a, double b) { return mul(a, scalar_of(a, b)); }
Variable operator/(const Variable& a, double b) { return div(a, scalar_of(a, b)); }
Variable operator+(double a, const Variable& b) { return add(scalar_of(b, a), b); }
Variable operator-(double a, const Variable& b) { return sub(scalar_of(b, a), b); }
Variable operator*(double a, const Variable& b) { return mul(scalar_of(b, a), b); }

}  // namespace rg
