// The latency-bandwidth ("alpha-beta") cost model of an all-reduce (Hockney 1994; Thakur,
// Rabenseifner and Gropp, "Optimization of collective communication operations in MPICH",
// 2005): time = alpha * steps + bytes / beta, where `steps` counts the messages one after
// another on the critical path and `bytes` what the busiest link carries. Chapter 07 fits it to
// measured star and ring all-reduces and extrapolates it; the capstone (C15) reuses it.
#pragma once
#include <string>
#include <vector>

namespace rg::chapters {

enum class Pattern { star, ring };
const char* pattern_name(Pattern pattern);

struct CostTerms {
  double steps = 0;  // messages on the critical path
  double bytes = 0;  // bytes through the busiest link
};

// The terms of one all-reduce of `message_bytes` over n ranks, of which at most `concurrent`
// can move data at the same time (on a cluster every rank has its own link: pass n or more; on
// one machine's shared memory every copy needs a core: pass the cores):
//   star: 2(n-1) messages, one after another through rank 0, which moves 2(n-1)·S bytes;
//         only rank 0 and one peer are busy at a time, so `concurrent` does not matter
//   ring: 2(n-1) steps in lock-step, each rank moving 2(n-1)/n·S bytes each way; with fewer
//         than n ranks running at once, every step and every byte takes n/c times as long:
//         steps 2(n-1)·n/c, bytes 2(n-1)/n·S · n/c, with c = min(n, concurrent)
CostTerms all_reduce_terms(Pattern pattern, int n, double message_bytes, int concurrent);

struct CostModel {
  double alpha_s = 0;        // seconds per step
  double beta_bytes_s = 0;   // bytes per second through a link
  double seconds(const CostTerms& terms) const { return alpha_s * terms.steps + terms.bytes / beta_bytes_s; }
};

struct TimedTerms {
  CostTerms terms;
  double seconds = 0;  // measured
};

// alpha >= 0 and beta > 0 (infinite when the bandwidth term is dropped) minimising the sum of
// squared *relative* errors: times span many orders of magnitude, and a fit on absolute errors
// would ignore the small ones. Throws rg::Error with fewer than two samples, or samples whose
// terms are all in proportion (latency and bandwidth cannot be told apart).
CostModel fit_cost_model(const std::vector<TimedTerms>& samples);

}  // namespace rg::chapters
