// DataLoader (PyTorch's): batches of a Dataset in a Sampler's order, as float32
// (B, C, H, W) images normalised with the dataset's mean/std and int64 (B) labels,
// optionally augmented, optionally produced ahead by worker threads.
//
//   data::DataLoader loader(train, {.batch_size = 128, .shuffle = true});
//   for (auto& [x, y] : loader) { ... }
//
// Determinism: batch b of an epoch holds the same samples and the same augmentation for
// a given seed whatever num_workers is; augmentations draw from a Generator seeded from
// (seed, epoch, b). Workers produce batches ahead into a bounded window and hand them
// over in order; an exception thrown while making a batch is rethrown by the iteration
// that reaches it. Starting a new iteration, or destroying the loader, mid-epoch stops
// the workers after the batch they are making.
#pragma once
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>

#include "data/dataset.h"
#include "data/sampler.h"
#include "data/transforms.h"

namespace rg::data {

struct DataLoaderOptions {
  int64_t batch_size = 1;
  bool shuffle = false;        // a RandomSampler seeded with `seed`
  Sampler* sampler = nullptr;  // instead of shuffle (setting both is an error); not owned
  bool drop_last = false;      // drop the last, smaller batch
  int num_workers = 0;         // 0: batches are made on the iterating thread
  int prefetch_factor = 2;     // batches in flight per worker
  uint64_t seed = 0;           // shuffling and augmentation
  bool normalize = true;       // with dataset.normalization(); false: pixels in [0, 1]
  Transform transform = {};    // applied to each normalised batch x, e.g. compose({RandomCrop{32, 4}, ...})
};

class DataLoader {
  class Epoch;

 public:
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    using pointer = Batch*;
    using reference = Batch&;

    Batch& operator*() { return current_; }
    Batch* operator->() { return &current_; }
    Iterator& operator++();
    bool operator==(const Iterator& other) const;

   private:
    friend class DataLoader;
    explicit Iterator(Epoch* epoch);
    bool at_end() const;

    Epoch* epoch_ = nullptr;
    int64_t index_ = 0;
    Batch current_;
  };

  // The dataset is not copied and must outlive the loader.
  DataLoader(const Dataset& dataset, DataLoaderOptions options = {});
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // Starts an epoch: takes the sampler's order for its current epoch now.
  Iterator begin();
  Iterator end() { return Iterator(nullptr); }

  int64_t size() const;  // batches per epoch
  int64_t len() const { return size(); }
  const Dataset& dataset() const { return dataset_; }
  Sampler& sampler() { return *sampler_; }

 private:
  const Dataset& dataset_;
  DataLoaderOptions options_;
  std::unique_ptr<Sampler> own_sampler_;
  Sampler* sampler_;
  std::unique_ptr<Epoch> epoch_;
};

}  // namespace rg::data
