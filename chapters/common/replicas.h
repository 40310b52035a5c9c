// How far apart the ranks' replicas are, measured from outside DDP (claims C03 and C11): the
// chapters draw it step by step beside what DDP's own consistency check says.
#pragma once
#include "nn/module.h"
#include "parallel/process_group.h"

namespace rg::chapters {

// A collective: the largest difference of any parameter element between two ranks,
// max over elements of (max over ranks - min over ranks), from two all-reduces (max and min)
// of the flattened parameters. 0 exactly when the replicas are identical.
double replica_spread(parallel::ProcessGroup& pg, const nn::Module& model);

}  // namespace rg::chapters
