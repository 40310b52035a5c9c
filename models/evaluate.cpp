// Evaluation of a classifier over a loader or a whole data set.
#include "models/evaluate.h"

#include "autograd/functions.h"

namespace rg::models {

int64_t count_correct(const Tensor& logits, const Tensor& labels) {
  // eq gives uint8 0/1; sum counts integers in int64, so it cannot overflow.
  return static_cast<int64_t>(sum(eq(argmax(logits, 1), labels)).item());
}

Tensor as_model_input(const Tensor& x, const nn::Module& model, const Device& device) {
  const Tensor on_device = x.device() == device ? x : x.to(device);
  const auto parameters = model.parameters();
  if (parameters.empty() || !is_floating(x.dtype()) || parameters.front().dtype() == x.dtype()) return on_device;
  return on_device.to(parameters.front().dtype());
}

Evaluation evaluate(nn::Module& model, data::DataLoader& loader, const Device& device, int64_t max_batches) {
  NoGradGuard no_grad;
  model.eval();
  Evaluation sums;
  int64_t batches = 0;
  for (auto& [x, y] : loader) {
    if (max_batches > 0 && batches++ == max_batches) break;
    const Tensor labels = y.device() == device ? y : y.to(device);
    Variable logits = model(as_model_input(x, model, device));
    sums.loss_sum += cross_entropy(logits, labels, Reduction::sum).item();
    sums.correct += count_correct(logits.data(), labels);
    sums.samples += y.size(0);
  }
  model.train();
  return sums;
}

Evaluation evaluate(nn::Module& model, const data::Dataset& data, const Device& device, int64_t batch_size) {
  data::DataLoader loader(data, data::DataLoaderOptions{.batch_size = batch_size});
  return evaluate(model, loader, device);
}

}  // namespace rg::models
