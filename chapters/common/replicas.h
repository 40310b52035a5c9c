// How far apart the ranks' model replicas are, for the chapters that watch their consistency
// (C03: kept identical by the initial broadcast, or not; C11: pulled apart by a corrupted
// gradient; C14: broken by a hand edit): the largest difference of any parameter between two
// ranks, how often a replica predicts other classes than rank 0's for the same images, and
// every rank's value of one number.
#pragma once
#include <vector>

#include "nn/module.h"
#include "parallel/process_group.h"

namespace rg::chapters {

// A collective: max over every parameter element of (its largest - its smallest value
// across the ranks); 0 exactly when the replicas are bit-identical.
double replica_spread(parallel::ProcessGroup& pg, const nn::Module& model);

// A collective: the largest share of `images` on which a replica predicts another class
// than rank 0's (0: every replica classifies them alike).
double prediction_disagreement(parallel::ProcessGroup& pg, nn::Module& model, const Tensor& images);

// A collective: every rank's `mine`, in rank order.
std::vector<double> gather_numbers(parallel::ProcessGroup& pg, double mine);

}  // namespace rg::chapters
