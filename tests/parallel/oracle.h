// The single-process oracle the data-parallel tests compare against: a small MLP, the
// random batches, the single-process reference training loop and the parameter
// comparisons. DataParallel, DDP and the parameter server must all train like this; plus
// the MPI check programs' main.
#pragma once
#include <algorithm>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "autograd/functions.h"
#include "nn/layers.h"
#include "nn/optim.h"
#include "parallel/process_group.h"

namespace rg::parallel::test {

constexpr int64_t kIn = 6;
constexpr int64_t kHidden = 16;
constexpr int64_t kClasses = 4;
constexpr int64_t kLocalBatch = 4;

// fc3(relu(fc2(relu(fc1(x))))); skip_fc2 leaves fc2 out of the forward (an unused layer).
struct Mlp : nn::Cloneable<Mlp> {
  explicit Mlp(int64_t hidden = kHidden) {
    fc1 = register_module("fc1", nn::Linear(kIn, hidden));
    fc2 = register_module("fc2", nn::Linear(hidden, hidden));
    fc3 = register_module("fc3", nn::Linear(hidden, kClasses));
  }
  Variable forward(const Variable& x) override {
    Variable h = relu(fc1->forward(x));
    if (!skip_fc2) h = relu(fc2->forward(h));
    return fc3->forward(h);
  }
  std::shared_ptr<nn::Linear> fc1, fc2, fc3;
  bool skip_fc2 = false;
};

inline void init_normal(nn::Module& model, uint64_t seed, DType dtype) {
  Generator gen(seed);
  for (Variable& p : model.parameters()) normal_(p.data(), gen, 0.0, 0.5);
  model.to(dtype);
}

inline std::shared_ptr<Mlp> make_mlp(DType dtype, int64_t hidden = kHidden) {
  auto model = std::make_shared<Mlp>(hidden);
  init_normal(*model, 7, dtype);
  return model;
}

// Linear, ReLU, Linear as an nn::Sequential.
inline std::shared_ptr<nn::Sequential> make_sequential(DType dtype, uint64_t seed) {
  auto model =
      std::make_shared<nn::Sequential>(nn::Linear(kIn, kHidden), nn::ReLU(), nn::Linear(kHidden, kClasses));
  init_normal(*model, seed, dtype);
  return model;
}

template <class M>
std::shared_ptr<M> clone_of(const M& model) {
  return std::static_pointer_cast<M>(model.clone());
}

inline optim::SGD make_sgd(const nn::Module& model, double momentum = 0.9) {
  return optim::SGD(model.parameters(), {.lr = 0.1, .momentum = momentum});
}

struct Batch {
  Tensor x, y;
  Batch rows(int64_t start, int64_t n) const { return {x.narrow(0, start, n), y.narrow(0, start, n)}; }
};

inline std::vector<Batch> make_batches(int steps, int64_t size, DType dtype) {
  Generator gen(11);
  std::vector<Batch> out;
  for (int s = 0; s < steps; ++s)
    out.push_back({randn({size, kIn}, gen, 0.0, 1.0, dtype), randint(0, kClasses, {size}, gen)});
  return out;
}

using Forward = std::function<Variable(const Tensor&)>;

// Trains `model` on the whole batches, calling it through `forward` (the model itself by default).
inline void train_single(nn::Module& model, const std::vector<Batch>& batches, const Forward& forward = {}) {
  auto opt = make_sgd(model);
  for (const Batch& batch : batches) {
    opt.zero_grad();
    cross_entropy(forward ? forward(batch.x) : model(batch.x), batch.y).backward();
    opt.step();
  }
}

// Trains `model` one step per `per_step` consecutive micro-batches, their gradients summed
// (the reference for gradient accumulation, as DDP's no_sync does it).
inline void train_single_accumulating(nn::Module& model, const std::vector<Batch>& micro, size_t per_step) {
  auto opt = make_sgd(model);
  for (size_t s = 0; s < micro.size(); s += per_step) {
    opt.zero_grad();
    for (size_t m = s; m < s + per_step; ++m) cross_entropy(model(micro[m].x), micro[m].y).backward();
    opt.step();
  }
}

// The largest difference between a model's parameters and the reference's, relative to
// the reference's largest magnitude.
inline double relative_error(const nn::Module& model, const nn::Module& reference) {
  double worst = 0;
  auto mine = model.parameters();
  auto theirs = reference.parameters();
  for (size_t i = 0; i < mine.size(); ++i) {
    const Tensor& want = theirs[i].data();
    double scale = std::max(1.0, max(abs(want)).item());
    worst = std::max(worst, max_abs_diff(mine[i].data(), want) / scale);
  }
  return worst;
}

// "" when every parameter of `model` is within `tolerance` of the reference's, else which one is not.
inline std::string parameter_mismatch(const nn::Module& model, const nn::Module& reference, double tolerance) {
  auto mine = model.named_parameters();
  auto want = reference.named_parameters();
  for (size_t i = 0; i < mine.size(); ++i) {
    double diff = max_abs_diff(mine[i].second.data(), want[i].second.data());
    if (diff > tolerance)
      return detail::concat("parameter '", mine[i].first, "' differs from single-process training by ", diff);
  }
  return "";
}

// The message of the Error `fn` throws, or "" when it throws none.
inline std::string error_from(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The MPI programs' main: runs `check` on an MPI process group and returns 0, or prints
// the error it threw and aborts the job.
inline int run_mpi_check(int argc, char** argv, const std::function<void(const std::shared_ptr<ProcessGroup>&)>& check) {
  std::shared_ptr<ProcessGroup> pg;
  try {
    pg = init_process_group({.backend = "mpi"}, argc, argv);
    check(pg);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << e.what() << std::endl;
    if (!pg) return 1;
    pg->abort(1);
  }
}

}  // namespace rg::parallel::test
