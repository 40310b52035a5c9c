// DataLoader tests: batch shapes and counts, identical batches whatever num_workers,
// exceptions from workers reach the loop, early exits do not hang, distributed sampling
// covers the data once, and the synthetic dataset is seeded and separable.
#include <chrono>
#include <set>

#include "helpers.h"
#include "tensor/ops.h"

using namespace rg;

namespace {

// A dataset whose get() fails at one index, served through Dataset's default batch path.
class FailingDataset : public data::Dataset {
 public:
  explicit FailingDataset(int64_t bad) : bad_(bad) {}
  int64_t size() const override { return 100; }
  data::Example get(int64_t i) const override {
    if (i == bad_) RG_THROW("FailingDataset: item ", i, " is broken");
    return {Tensor::full({1, 2, 2}, static_cast<double>(i)), i % 3};
  }
  int64_t num_classes() const override { return 3; }
  int64_t channels() const override { return 1; }
  int64_t height() const override { return 2; }
  int64_t width() const override { return 2; }
  std::string name() const override { return "Failing"; }

 private:
  int64_t bad_;
};

std::vector<data::Batch> collect(data::DataLoader& loader) {
  std::vector<data::Batch> out;
  for (auto& [x, y] : loader) out.push_back({x, y});
  return out;
}

}  // namespace

TEST_CASE("data.loader_batches_and_drop_last", "[data]") {
  data::SynthDataset ds({.size = 10, .num_classes = 3, .channels = 2, .height = 3, .width = 4});
  data::DataLoader loader(ds, {.batch_size = 4});
  CHECK(loader.size() == 3);
  CHECK(loader.len() == 3);
  const std::vector<data::Batch> batches = collect(loader);
  REQUIRE(batches.size() == 3);
  CHECK(batches[0].x.shape() == Shape{4, 2, 3, 4});
  CHECK(batches[0].x.dtype() == DType::float32);
  CHECK(batches[0].y.dtype() == DType::int64);
  CHECK(batches[2].x.shape() == Shape{2, 2, 3, 4});
  CHECK(batches[1].y.to_vector<int64_t>() == std::vector<int64_t>{1, 2, 0, 1});
  // Normalised with the dataset's own statistics: about mean 0, std 1 over the dataset.
  const Tensor all = cat({batches[0].x, batches[1].x, batches[2].x});
  CHECK(std::abs(mean(all).item()) < 1e-4);
  data::DataLoader dropping(ds, {.batch_size = 4, .drop_last = true});
  CHECK(dropping.size() == 2);
  CHECK(collect(dropping).size() == 2);
  data::DataLoader raw(ds, {.batch_size = 10, .normalize = false});
  const data::Batch b = collect(raw)[0];
  CHECK(b.x.to_vector<float>()[5] == Approx(ds.images().to_vector<float>()[5] / 255.0));
  CHECK_THROWS_AS(data::DataLoader(ds, {.batch_size = 0}), Error);
}

TEST_CASE("data.loader_same_batches_whatever_num_workers", "[data]") {
  data::SynthDataset ds({.size = 203, .channels = 3, .height = 6, .width = 6, .seed = 5});
  const data::Transform augment = data::compose({data::RandomCrop{.size = 6, .padding = 2}, data::RandomHorizontalFlip{}});
  std::vector<std::vector<data::Batch>> runs;
  for (int workers : {0, 1, 3}) {
    data::DataLoader loader(ds, {.batch_size = 16, .shuffle = true, .num_workers = workers, .seed = 9, .transform = augment});
    collect(loader);  // epoch 0; epoch 1 is compared
    runs.push_back(collect(loader));
  }
  REQUIRE(runs[0].size() == 13);
  for (size_t r = 1; r < runs.size(); ++r)
    for (size_t b = 0; b < runs[0].size(); ++b) {
      CHECK(allclose(runs[r][b].x, runs[0][b].x, 0, 0));
      CHECK(runs[r][b].y.to_vector<int64_t>() == runs[0][b].y.to_vector<int64_t>());
    }
  // Epochs reshuffle, and the seed matters.
  data::DataLoader again(ds, {.batch_size = 16, .shuffle = true, .seed = 9, .transform = augment});
  CHECK(!allclose(collect(again)[0].x, runs[0][0].x));
}

TEST_CASE("data.loader_worker_exception_reaches_the_loop", "[data]") {
  FailingDataset ds(37);
  for (int workers : {0, 2}) {
    data::DataLoader loader(ds, {.batch_size = 8, .num_workers = workers});
    int64_t seen = 0;
    const std::string msg = test::error_of([&] {
      for (auto& [x, y] : loader) seen += x.size(0);
    });
    CHECK_THAT(msg, Catch::Matchers::Contains("item 37 is broken"));
    CHECK(seen == 32);  // the four batches before the broken one
  }
  FailingDataset ok(-1);
  data::DataLoader loader(ok, {.batch_size = 30, .num_workers = 2});
  const std::vector<data::Batch> batches = collect(loader);
  CHECK(batches[3].x.to_vector<float>()[0] == 90.0f);  // the default batch path does not normalise
}

TEST_CASE("data.loader_early_exit_does_not_hang", "[data]") {
  data::SynthDataset ds({.size = 5000, .height = 16, .width = 16});
  const auto start = std::chrono::steady_clock::now();
  for (int rep = 0; rep < 20; ++rep) {
    data::DataLoader loader(ds, {.batch_size = 10, .shuffle = true, .num_workers = 3, .prefetch_factor = 4});
    for (auto& [x, y] : loader) {
      (void)x;
      (void)y;
      break;
    }
    for (auto it = loader.begin(); it != loader.end(); ++it) break;  // a second, abandoned epoch
  }
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
}

TEST_CASE("data.loader_with_distributed_sampler_covers_the_data", "[data]") {
  data::SynthDataset ds({.size = 50, .num_classes = 5});
  std::set<std::vector<float>> images;  // the synthetic images are all distinct
  for (int64_t rank = 0; rank < 3; ++rank) {
    data::DistributedSampler sampler(ds.size(), {.num_replicas = 3, .rank = rank});
    sampler.set_epoch(2);
    data::DataLoader loader(ds, {.batch_size = 4, .sampler = &sampler, .num_workers = 1});
    CHECK(loader.size() == 5);  // 17 per rank
    CHECK_THROWS_AS(data::DataLoader(ds, {.shuffle = true, .sampler = &sampler}), Error);
    for (auto& [x, y] : loader)
      for (int64_t i = 0; i < x.size(0); ++i) images.insert(x.select(0, i).to_vector<float>());
  }
  CHECK(images.size() == 50);
}

TEST_CASE("data.synthetic_is_seeded_and_separable", "[data]") {
  data::SynthDataset a({.size = 400, .num_classes = 4, .seed = 3}), b({.size = 400, .num_classes = 4, .seed = 3});
  CHECK(allclose(a.images(), b.images(), 0, 0));
  CHECK(!allclose(a.images(), data::SynthDataset({.size = 400, .num_classes = 4, .seed = 4}).images()));
  // Nearest class mean classifies every sample: the classes are separable.
  const Tensor x = a.images().to(DType::float32).reshape({400, -1});
  const std::vector<int64_t> y = a.labels().to_vector<int64_t>();
  std::vector<Tensor> means;
  for (int64_t k = 0; k < 4; ++k) means.push_back(mean(x.slice(0, k, 400, 4), {0}));
  const Tensor centres = stack(means);  // (4, 64)
  int64_t correct = 0;
  for (int64_t i = 0; i < 400; ++i) {
    const Tensor d = sum(square(sub(centres, x.select(0, i))), {1});
    correct += argmin(d, 0).item() == static_cast<double>(y[i]);
  }
  CHECK(correct == 400);
}
