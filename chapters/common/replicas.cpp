// replica_spread.
#include "chapters/common/replicas.h"

#include "tensor/ops.h"

namespace rg::chapters {

double replica_spread(parallel::ProcessGroup& pg, const nn::Module& model) {
  std::vector<Tensor> flat;
  for (const Variable& p : model.parameters()) flat.push_back(p.data().reshape({p.numel()}));
  const Tensor highest = cat(flat), lowest = highest.clone();
  pg.all_reduce(highest, {.op = parallel::ReduceOp::max});
  pg.all_reduce(lowest, {.op = parallel::ReduceOp::min});
  return max(highest - lowest).item();
}

}  // namespace rg::chapters
