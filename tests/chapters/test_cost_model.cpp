// chapters.cost_model: the alpha-beta terms of chapters/common/cost_model.h follow the
// formulas, and the fit recovers alpha and beta from times the model itself produced.
#include <catch2/catch.hpp>

#include "chapters/common/cost_model.h"
#include "tensor/error.h"

namespace rg::chapters::test {

TEST_CASE("chapters.cost_model", "[chapters]") {
  const double S = 1e6;
  // Star: 2(N-1) messages, 2(N-1)·S through rank 0, whatever runs at once.
  CHECK(all_reduce_terms(Pattern::star, 8, S, 8).steps == 14);
  CHECK(all_reduce_terms(Pattern::star, 8, S, 2).bytes == 14 * S);
  // Ring: every rank its own link, 2(N-1) steps and 2(N-1)/N·S; on 2 cores, N/2 times that.
  CHECK(all_reduce_terms(Pattern::ring, 8, S, 8).steps == 14);
  CHECK(all_reduce_terms(Pattern::ring, 8, S, 1024).bytes == Approx(14.0 / 8 * S));
  CHECK(all_reduce_terms(Pattern::ring, 8, S, 2).bytes == Approx(14.0 / 8 * S * 4));
  CHECK(all_reduce_terms(Pattern::ring, 1, S, 1).bytes == 0);

  const CostModel truth{20e-6, 5e9};
  std::vector<TimedTerms> samples;
  for (int n : {2, 4, 8})
    for (double bytes : {4e3, 1e6, 64e6}) {
      const CostTerms terms = all_reduce_terms(Pattern::ring, n, bytes, 2);
      samples.push_back({terms, truth.seconds(terms)});
    }
  const CostModel fitted = fit_cost_model(samples);
  CHECK(fitted.alpha_s == Approx(truth.alpha_s).epsilon(1e-9));
  CHECK(fitted.beta_bytes_s == Approx(truth.beta_bytes_s).epsilon(1e-9));

  CHECK_THROWS_AS(fit_cost_model({samples[0]}), rg::Error);
  CHECK_THROWS_AS(fit_cost_model({samples[0], samples[0]}), rg::Error);  // latency and bandwidth inseparable
  CHECK_THROWS_AS(all_reduce_terms(Pattern::ring, 0, S, 1), rg::Error);
}

}  // namespace rg::chapters::test
