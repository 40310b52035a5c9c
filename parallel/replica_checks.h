// The checks that keep DistributedDataParallel's replicas honest (claims C03, C11, C14),
// apart from DDP itself so that its core reads without them: the ranks' models have the
// same structure, the model still holds what was wrapped, the replicas are bit-identical,
// and every rank will run the same number of batches. Each names what differs and where.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nn/module.h"
#include "parallel/process_group.h"
#include "parallel/reducer.h"

namespace rg::parallel {

// The parameters DDP synchronises: those that need a gradient, each shared one once, in
// registration order.
std::vector<NamedParameter> trainable_parameters(const nn::Module& model);

// A collective: throws unless every rank's model has the same parameters and buffers
// (names, shapes, dtypes), naming the first that differs and the ranks.
void check_same_structure(ProcessGroup& pg, const nn::Module& model);

// What changed in this rank's model since `wrapped` (with their data tensors at wrap
// time) was taken from it, or "": a parameter replaced by another Variable, reshaped, or
// given new data. The edit-after-wrap pitfall (claim C14) in its structural form.
std::string structure_change(const nn::Module& model, const std::vector<NamedParameter>& wrapped,
                             const std::vector<Tensor>& wrapped_data);

// Which steps a failed consistency check blames: the replicas were last found identical after
// step `last_identical` (0: at construction; -1: never) and are checked now, after step `now`.
// Steps are synchronising backward passes, counted from 1.
struct CheckedSteps {
  int64_t last_identical = -1;
  int64_t now = 0;
};

// A collective: throws unless every rank's `problem` is "" (naming the rank that has one),
// then unless every parameter is bit-identical across ranks, comparing a checksum of each.
// The error names the first parameter that differs; the rank that differs (when a majority of
// the ranks agree, the ranks outside it; else every rank unlike rank 0), with their sums; and
// the step or steps in which it happened.
void check_replicas_identical(ProcessGroup& pg, const std::string& problem, const std::vector<NamedParameter>& parameters,
                              CheckedSteps steps = {});

// A collective: throws unless every rank passes the same number of batches, naming the
// ranks that differ from the rest.
void check_same_batch_count(ProcessGroup& pg, int64_t batches);

}  // namespace rg::parallel
