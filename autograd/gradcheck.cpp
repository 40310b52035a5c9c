// Central differences: d<R, f(x)>/dx_i ~ (<R, f(x + eps e_i)> - <R, f(x - eps e_i)>) / 2 eps.
#include "autograd/gradcheck.h"

#include <cmath>
#include <sstream>

#include "autograd/functions.h"
#include "tensor/ops.h"

namespace rg {

GradcheckResult gradcheck(const std::function<Variable(const std::vector<Variable>&)>& fn,
                          const std::vector<Variable>& inputs, const GradcheckOptions& options) {
  for (const Variable& x : inputs)
    RG_CHECK(!x.requires_grad() || x.dtype() == DType::float64, "gradcheck: inputs that require grad must be ",
             "float64 (finite differences need the precision), got ", dtype_name(x.dtype()));
  Generator gen(options.seed);
  Variable first = fn(inputs);
  Tensor projection = randn(first.shape(), gen, 0.0, 1.0, first.dtype(), first.device());
  auto objective = [&](const std::vector<Variable>& xs) {
    NoGradGuard no_grad;
    return rg::sum(mul(fn(xs).data(), projection)).item();
  };

  for (const Variable& x : inputs)
    if (x.requires_grad()) x.impl()->grad = Tensor();
  sum(first * Variable(projection)).backward();

  for (size_t k = 0; k < inputs.size(); ++k) {
    const Variable& x = inputs[k];
    if (!x.requires_grad()) continue;
    Tensor analytic = x.grad().defined() ? x.grad() : zeros_like(x.data());
    std::vector<double> expected = analytic.to_vector<double>();
    Tensor flat = x.data().contiguous();
    RG_CHECK(flat.same_data(x.data()), "gradcheck: input ", k, " must be contiguous");
    double* values = flat.data<double>();
    for (int64_t i = 0; i < flat.numel(); ++i) {
      double saved = values[i];
      values[i] = saved + options.eps;
      double plus = objective(inputs);
      values[i] = saved - options.eps;
      double minus = objective(inputs);
      values[i] = saved;
      double numeric = (plus - minus) / (2 * options.eps);
      if (std::fabs(expected[i] - numeric) > options.atol + options.rtol * std::fabs(numeric)) {
        std::ostringstream message;
        message << "gradcheck: input " << k << " (shape " << shape_str(x.shape()) << "), element " << i
                << ": analytic " << expected[i] << " vs numeric " << numeric;
        return {false, message.str()};
      }
    }
  }
  return {};
}

}  // namespace rg
