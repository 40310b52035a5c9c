// The Dataset interface (PyTorch's map-style dataset: size + get) and InMemoryDataset, the
// form every reader here produces: all images decoded once into one uint8 (N, C, H, W)
// tensor plus int64 labels, with a batch path that gathers and normalises in one pass.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace rg::data {

enum class Split { Train, Test };

struct Example {
  Tensor image = {};  // (C, H, W), uint8 0..255 or float
  int64_t label = 0;
};

// What the loader yields; `auto& [x, y] : loader` binds these two.
struct Batch {
  Tensor x = {};  // float32 (B, C, H, W)
  Tensor y = {};  // int64 (B)
};

// Per-channel statistics of the pixel values scaled to [0, 1].
struct Normalization {
  std::vector<float> mean = {};
  std::vector<float> std = {};
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  virtual Example get(int64_t index) const = 0;
  virtual int64_t num_classes() const = 0;
  virtual int64_t channels() const = 0;
  virtual int64_t height() const = 0;
  virtual int64_t width() const = 0;
  virtual std::string name() const = 0;
  // Where the examples came from (the file or folder read, so that programs can say which
  // data root was used), or "" (the default) for data made in memory.
  virtual std::string source() const { return {}; }
  // One name per class, or none (the default).
  virtual std::vector<std::string> class_names() const { return {}; }
  // The dataset's usual mean/std; the default is mean 0, std 1 (no change).
  virtual Normalization normalization() const;

  // x: float32 (B, C, H, W) holding images[indices] scaled to [0, 1], then normalised
  // with `norm` when given; y: int64 (B). The default calls get() per index; datasets
  // held in memory override it with a direct gather.
  virtual Batch get_batch(std::span<const int64_t> indices, const Normalization* norm) const;
};

// What a model needs to know of a dataset to be sized for it: its images' (C, H, W) and
// its class count K (rg::models take one). The defaults are an MNIST image.
struct ImageShape {
  int64_t channels = 1;
  int64_t height = 28;
  int64_t width = 28;
  int64_t num_classes = 10;
};

ImageShape image_shape(const Dataset& dataset);

struct DatasetInfo {
  std::string name = {};
  int64_t num_classes = 0;
  Normalization normalization = {};
  std::vector<std::string> class_names = {};  // empty, or one per class
  std::string source = {};                    // the file(s) or folder read; "" for generated data
};

class InMemoryDataset : public Dataset {
 public:
  // images: uint8 (N, C, H, W) with N > 0 (an empty split is an error naming info.source,
  // not a test accuracy of 0/0); labels: int64 (N) within [0, info.num_classes).
  InMemoryDataset(Tensor images, Tensor labels, DatasetInfo info);

  int64_t size() const override { return images_.size(0); }
  Example get(int64_t index) const override;  // the image is a view, no copy
  int64_t num_classes() const override { return info_.num_classes; }
  int64_t channels() const override { return images_.size(1); }
  int64_t height() const override { return images_.size(2); }
  int64_t width() const override { return images_.size(3); }
  std::string name() const override { return info_.name; }
  std::string source() const override { return info_.source; }
  std::vector<std::string> class_names() const override { return info_.class_names; }
  Normalization normalization() const override { return info_.normalization; }
  Batch get_batch(std::span<const int64_t> indices, const Normalization* norm) const override;

  const Tensor& images() const { return images_; }
  const Tensor& labels() const { return labels_; }

 private:
  Tensor images_;
  Tensor labels_;
  DatasetInfo info_;
};

// Throws naming `file` unless every label lies in [0, num_classes).
void check_labels(const Tensor& labels, int64_t num_classes, const std::string& file);

}  // namespace rg::data
