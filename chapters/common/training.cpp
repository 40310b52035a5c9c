// seeded_model and evaluate.
#include "chapters/common/training.h"

#include <mutex>

#include "autograd/functions.h"
#include "models/models.h"
#include "tensor/generator.h"
#include "tensor/ops.h"

namespace rg::chapters {

std::shared_ptr<nn::Module> seeded_model(const std::string& name, const data::ImageShape& shape, uint64_t seed) {
  static std::mutex turn;
  std::lock_guard lock(turn);
  default_generator().set_state(seed, 0);
  return models::make_model(name, shape);
}

TestResult evaluate(nn::Module& model, data::DataLoader& test, int64_t max_batches) {
  NoGradGuard no_grad;
  const DType dtype = model.parameters().front().dtype();
  double loss_sum = 0;
  int64_t correct = 0, seen = 0, batches = 0;
  for (auto& [x, y] : test) {
    const Tensor logits = model(x.to(dtype)).data();
    const auto n = y.size(0);
    loss_sum += cross_entropy(logits, y).item() * static_cast<double>(n);
    correct += static_cast<int64_t>(sum(eq(argmax(logits, 1), y)).item());
    seen += n;
    if (++batches == max_batches) break;
  }
  return {loss_sum / static_cast<double>(seen), static_cast<double>(correct) / static_cast<double>(seen)};
}

}  // namespace rg::chapters
