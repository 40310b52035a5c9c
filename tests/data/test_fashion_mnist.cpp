// The real Fashion-MNIST files (Debian's dataset-fashion-mnist, which CI installs): sizes,
// balanced labels and the known pixel statistics. Passes with a WARN where they are absent.
#include <cmath>
#include <filesystem>

#include "helpers.h"

using namespace rg;

TEST_CASE("data.fashion_mnist_real_files", "[data]") {
  const std::string root = "/usr/share/datasets";
  if (!std::filesystem::exists(root + "/fashion-mnist/train-images-idx3-ubyte.gz")) {
    WARN("Fashion-MNIST not installed (apt install dataset-fashion-mnist): test not run");
    return;
  }
  data::FashionMNIST train({.split = data::Split::Train, .root = root});
  data::FashionMNIST test({.split = data::Split::Test, .root = root});
  CHECK(train.size() == 60000);
  CHECK(test.size() == 10000);
  CHECK(train.images().shape() == Shape{60000, 1, 28, 28});
  // Each of the ten classes has exactly 6000 training and 1000 test images.
  for (const data::FashionMNIST* ds : {&train, &test}) {
    std::vector<int64_t> counts(10);
    for (int64_t label : ds->labels().to_vector<int64_t>()) ++counts.at(label);
    CHECK(counts == std::vector<int64_t>(10, ds->size() / 10));
  }
  CHECK(train.labels().data<int64_t>()[0] == 9);  // the first image is an ankle boot
  // The published statistics (used by the default normalisation), summed by hand.
  const uint8_t* px = train.images().data<uint8_t>();
  const int64_t n = train.images().numel();
  double sum = 0, sum_sq = 0;
  for (int64_t i = 0; i < n; ++i) {
    sum += px[i];
    sum_sq += static_cast<double>(px[i]) * px[i];
  }
  const double m = sum / n / 255.0, sd = std::sqrt(sum_sq / n / (255.0 * 255.0) - m * m);
  CHECK(m == Approx(0.2860).margin(5e-4));
  CHECK(sd == Approx(0.3530).margin(5e-4));
  CHECK(px[0] == 0);  // the corner pixel is background
}
