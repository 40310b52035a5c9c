// seeded_model and shown_steps.
#include "chapters/common/training.h"

#include <mutex>
#include <set>

#include "models/models.h"
#include "tensor/generator.h"

namespace rg::chapters {

std::shared_ptr<nn::Module> seeded_model(const std::string& name, const data::ImageShape& shape, uint64_t seed) {
  static std::mutex turn;
  std::lock_guard lock(turn);
  default_generator().set_state(seed, 0);
  return models::make_model(name, shape);
}

std::vector<size_t> shown_steps(size_t first, size_t last) {
  std::set<size_t> shown{first, last};
  for (size_t decade = 1; decade <= last; decade *= 10)
    for (size_t k : {1, 2, 5})
      if (k * decade >= first && k * decade <= last) shown.insert(k * decade);
  return {shown.begin(), shown.end()};
}

}  // namespace rg::chapters
