// The models by name (see named.h).
#include "models/named.h"

#include "models/cnn.h"
#include "models/mlp.h"
#include "models/resnet_small.h"

namespace rg::models {

const std::vector<std::string>& model_names() {
  static const std::vector<std::string> names = {"mlp", "cnn", "resnet-small"};
  return names;
}

std::shared_ptr<nn::Module> make_model(const std::string& name, const data::ImageShape& shape) {
  if (name == "mlp") return std::make_shared<MLP>(shape);
  if (name == "cnn") return std::make_shared<CNN>(shape);
  if (name == "resnet-small") return std::make_shared<ResNetSmall>(shape);
  RG_THROW("unknown model '", name, "'");
}

}  // namespace rg::models
