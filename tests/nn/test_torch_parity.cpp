// Parity with an independent implementation: the loss and every parameter gradient of a
// small MLP and CNN equal PyTorch 1.13's (fixtures written by scripts/make_torch_fixtures.py),
// per tensor max |ringgrad - torch| <= tol * max |torch|: 1e-5 in float32, 1e-10 in float64.
#include <catch2/catch.hpp>

#include <filesystem>

#include "nn/checkpoint.h"
#include "nn/layers.h"
#include "nn/loss.h"

using namespace rg;

namespace {

// The twins of the torch.nn.Sequential models in the script; same child names "0", "1", ...
nn::Sequential mlp() {
  return nn::Sequential(nn::Linear(20, 16), nn::ReLU(), nn::Linear(16, 8), nn::ReLU(), nn::Linear(8, 5));
}

nn::Sequential cnn() {
  return nn::Sequential(nn::Conv2d({.in_channels = 1, .out_channels = 4, .kernel_size = 3, .padding = 1}), nn::ReLU(),
                        nn::MaxPool2d(2),
                        nn::Conv2d({.in_channels = 4, .out_channels = 6, .kernel_size = 3, .stride = 2, .padding = 1}),
                        nn::ReLU(), nn::AvgPool2d(3, 1, 1), nn::Flatten(), nn::Linear(54, 5));
}

// max |a - b| / max |b|: the error relative to the reference tensor's scale.
double relative_error(const Tensor& got, const Tensor& expected) {
  double scale = max(abs(expected.to(DType::float64))).item();
  return max_abs_diff(got.to(DType::float64), expected.to(DType::float64)) / (scale > 0 ? scale : 1.0);
}

void check_parity(nn::Sequential model, const std::string& fixture, DType dtype, double tolerance) {
  auto path = std::filesystem::path(RINGGRAD_TESTS_DIR) / "fixtures" / "torch" / fixture;
  nn::SafetensorsFile file = nn::read_safetensors(path.string());
  model.to(dtype);
  nn::StateDict weights;
  for (const auto& [name, tensor] : file.tensors)
    if (name.rfind("param.", 0) == 0) weights[name.substr(6)] = tensor;
  model.load_state_dict(weights);
  REQUIRE(file.tensors.at("input").dtype() == dtype);

  Variable loss = nn::CrossEntropyLoss{}(model(file.tensors.at("input")), file.tensors.at("targets"));
  loss.backward();
  INFO(fixture);
  CHECK(relative_error(loss.data().reshape({1}), file.tensors.at("loss")) <= tolerance);
  for (const auto& [name, p] : model.named_parameters()) {
    INFO(name);
    REQUIRE(p.grad().defined());
    CHECK(relative_error(p.grad(), file.tensors.at("grad." + name)) <= tolerance);
  }
}

}  // namespace

TEST_CASE("nn.torch_parity_mlp", "[nn]") {
  check_parity(mlp(), "mlp_f32.safetensors", DType::float32, 1e-5);
  check_parity(mlp(), "mlp_f64.safetensors", DType::float64, 1e-10);
}

TEST_CASE("nn.torch_parity_cnn", "[nn]") {
  check_parity(cnn(), "cnn_f32.safetensors", DType::float32, 1e-5);
  check_parity(cnn(), "cnn_f64.safetensors", DType::float64, 1e-10);
}
