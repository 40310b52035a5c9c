// replica_spread, prediction_disagreement and gather_numbers.
#include "chapters/common/replicas.h"

#include <algorithm>

#include "autograd/functions.h"
#include "tensor/ops.h"

namespace rg::chapters {

// Two all-reduces of the flattened parameters, max and min, give each element's spread.
double replica_spread(parallel::ProcessGroup& pg, const nn::Module& model) {
  std::vector<Tensor> flat;
  for (const Variable& p : model.parameters()) flat.push_back(p.data().reshape({p.numel()}));
  const Tensor highest = cat(flat).to(DType::float64), lowest = highest.clone();  // copies: the model stays
  pg.all_reduce(highest, {.op = parallel::ReduceOp::max});
  pg.all_reduce(lowest, {.op = parallel::ReduceOp::min});
  return max(sub(highest, lowest)).item();
}

double prediction_disagreement(parallel::ProcessGroup& pg, nn::Module& model, const Tensor& images) {
  NoGradGuard no_grad;
  const Tensor mine = argmax(model(images).data(), 1);
  const int64_t n = mine.numel();
  const Tensor all = Tensor::zeros({pg.size() * n}, mine.dtype());
  pg.all_gather(all, mine);
  const std::vector<int64_t> classes = all.to_vector<int64_t>();  // rank r's at [r * n, (r + 1) * n)
  double worst = 0;
  for (int r = 1; r < pg.size(); ++r) {
    int64_t differing = 0;
    for (int64_t i = 0; i < n; ++i) differing += classes[r * n + i] != classes[i];
    worst = std::max(worst, static_cast<double>(differing) / static_cast<double>(n));
  }
  return worst;
}

std::vector<double> gather_numbers(parallel::ProcessGroup& pg, double mine) {
  const Tensor all = Tensor::zeros({pg.size()}, DType::float64);
  pg.all_gather(all, Tensor::from_vector(std::vector<double>{mine}, {1}));
  return all.to_vector<double>();
}

}  // namespace rg::chapters
