// all_reduce_terms and the least-squares fit of the alpha-beta model.
#include "chapters/common/cost_model.h"

#include <algorithm>

#include "tensor/error.h"

namespace rg::chapters {

const char* pattern_name(Pattern pattern) { return pattern == Pattern::star ? "star" : "ring"; }

CostTerms all_reduce_terms(Pattern pattern, int n, double message_bytes, int concurrent) {
  RG_CHECK(n >= 1 && concurrent >= 1, "all_reduce_terms: needs n >= 1 ranks and concurrent >= 1, got ", n, " and ",
           concurrent);
  const double hops = 2.0 * (n - 1);
  if (pattern == Pattern::star) return {hops, hops * message_bytes};
  const double time_shared = static_cast<double>(n) / std::min(n, concurrent);
  return {hops * time_shared, hops / n * message_bytes * time_shared};
}

// With x = (alpha, 1/beta), each sample asks steps·alpha + bytes/beta = t, i.e. relative to t:
// (steps/t)·alpha + (bytes/t)/beta = 1. The normal equations of that 2-unknown least squares.
CostModel fit_cost_model(const std::vector<TimedTerms>& samples) {
  RG_CHECK(samples.size() >= 2, "fit_cost_model: needs at least two samples, got ", samples.size());
  double aa = 0, ab = 0, bb = 0, a1 = 0, b1 = 0;
  for (const TimedTerms& s : samples) {
    RG_CHECK(s.seconds > 0, "fit_cost_model: a measured time must be positive, got ", s.seconds);
    const double a = s.terms.steps / s.seconds, b = s.terms.bytes / s.seconds;
    aa += a * a;
    ab += a * b;
    bb += b * b;
    a1 += a;
    b1 += b;
  }
  const double det = aa * bb - ab * ab;
  RG_CHECK(det > 1e-12 * aa * bb, "fit_cost_model: the samples cannot tell latency from bandwidth (all in proportion)");
  double alpha = (a1 * bb - b1 * ab) / det, inverse_beta = (aa * b1 - ab * a1) / det;
  // Neither term may be negative: where the best fit wants one below zero, drop it and fit the
  // other alone (the least squares under alpha, 1/beta >= 0).
  if (alpha < 0) alpha = 0, inverse_beta = b1 / bb;
  if (inverse_beta < 0) inverse_beta = 0, alpha = a1 / aa;
  return {alpha, 1 / inverse_beta};
}

}  // namespace rg::chapters
