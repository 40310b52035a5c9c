// gradcheck: compares the analytic gradient of a function of Variables with central
// finite differences in float64 — the oracle every backward in ringgrad is tested against.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "autograd/variable.h"

namespace rg {

struct GradcheckOptions {
  double eps = 1e-6;   // finite-difference step
  double atol = 1e-6;  // |analytic - numeric| <= atol + rtol * |numeric|
  double rtol = 1e-4;
  uint64_t seed = 0;   // for the random projection of the output
};

struct GradcheckResult {
  bool ok = true;
  std::string message;  // on failure: which input and element, and both values
};

// `fn` maps the inputs (float64 Variables that require grad) to one output Variable.
// The output is reduced to a scalar with a fixed random projection <R, fn(x)>, so one
// backward checks the full vector-Jacobian product; every input element is perturbed.
GradcheckResult gradcheck(const std::function<Variable(const std::vector<Variable>&)>& fn,
                          const std::vector<Variable>& inputs, const GradcheckOptions& options = {});

}  // namespace rg
