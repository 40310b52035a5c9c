// Dataset's default batch path and InMemoryDataset's fast one (see dataset.h).
#include "data/dataset.h"

#include <array>

#include "tensor/thread_pool.h"

namespace rg::data {

namespace {

constexpr int64_t kSamplesPerTask = 16;  // of a batch gathered in parallel

// Asks the CPU to start loading [data, data + bytes) into cache. A shuffled batch reads
// images from all over a dataset far larger than the caches; fetching the one after next
// while converting this one hides most of the memory latency.
void prefetch(const uint8_t* data, int64_t bytes) {
  constexpr int64_t kCacheLine = 64;
  for (int64_t offset = 0; offset < bytes; offset += kCacheLine) __builtin_prefetch(data + offset);
}

void check_index(int64_t index, int64_t size, const std::string& name) {
  RG_CHECK(index >= 0 && index < size, name, ": index ", index, " out of range for a dataset of ", size);
}

// A per-channel norm of the right length: mean 0 / std 1 when none is given, one value
// broadcast over every channel when a single one is.
Normalization channel_norm(const Normalization* norm, int64_t channels, const std::string& name) {
  Normalization out{std::vector<float>(channels, 0.0f), std::vector<float>(channels, 1.0f)};
  if (!norm) return out;
  const auto n = static_cast<int64_t>(norm->mean.size());
  RG_CHECK(n == static_cast<int64_t>(norm->std.size()) && (n == 1 || n == channels), name,
           ": normalization needs 1 or ", channels, " means and stds, got ", norm->mean.size(), " and ",
           norm->std.size());
  for (int64_t c = 0; c < channels; ++c) {
    out.mean[c] = norm->mean[n == 1 ? 0 : c];
    out.std[c] = norm->std[n == 1 ? 0 : c];
    RG_CHECK(out.std[c] > 0.0f, name, ": normalization std must be > 0, got ", out.std[c]);
  }
  return out;
}

}  // namespace

Normalization Dataset::normalization() const { return {{0.0f}, {1.0f}}; }

ImageShape image_shape(const Dataset& dataset) {
  return {dataset.channels(), dataset.height(), dataset.width(), dataset.num_classes()};
}

Batch Dataset::get_batch(std::span<const int64_t> indices, const Normalization* norm) const {
  const int64_t b = static_cast<int64_t>(indices.size()), c = channels(), hw = height() * width();
  const Normalization cn = channel_norm(norm, c, name());
  Batch batch{Tensor::empty({b, c, height(), width()}), Tensor::empty({b}, DType::int64)};
  float* x = batch.x.data<float>();
  int64_t* y = batch.y.data<int64_t>();
  for (int64_t i = 0; i < b; ++i) {
    check_index(indices[i], size(), name());
    Example ex = get(indices[i]);
    RG_CHECK(ex.image.shape() == Shape({c, height(), width()}), name(), ": example ", indices[i],
             " has shape ", shape_str(ex.image.shape()), ", expected [", c, ", ", height(), ", ", width(), "]");
    const bool raw = ex.image.dtype() == DType::uint8;
    const std::vector<float> pixels = ex.image.to_vector<float>();
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < hw; ++p) {
        const float v = raw ? pixels[ch * hw + p] / 255.0f : pixels[ch * hw + p];
        x[(i * c + ch) * hw + p] = (v - cn.mean[ch]) / cn.std[ch];
      }
    y[i] = ex.label;
  }
  return batch;
}

void check_labels(const Tensor& labels, int64_t num_classes, const std::string& file) {
  const int64_t* y = labels.contiguous().data<int64_t>();
  for (int64_t i = 0; i < labels.numel(); ++i)
    RG_CHECK(y[i] >= 0 && y[i] < num_classes, file, ": label ", y[i], " of item ", i, " is out of range [0, ",
             num_classes, ")");
}

InMemoryDataset::InMemoryDataset(Tensor images, Tensor labels, DatasetInfo info)
    : images_(images.contiguous()), labels_(labels.contiguous()), info_(std::move(info)) {
  RG_CHECK(images_.dim() == 4 && images_.dtype() == DType::uint8, info_.name,
           ": images must be uint8 (N, C, H, W), got ", dtype_name(images_.dtype()), " ", shape_str(images_.shape()));
  RG_CHECK(labels_.dim() == 1 && labels_.dtype() == DType::int64 && labels_.size(0) == images_.size(0), info_.name,
           ": labels must be int64 (N) with N = ", images_.size(0), ", got ", dtype_name(labels_.dtype()), " ",
           shape_str(labels_.shape()));
  RG_CHECK(info_.num_classes > 0, info_.name, ": num_classes must be > 0");
  RG_CHECK(images_.size(0) > 0, info_.name, info_.source.empty() ? "" : " (" + info_.source + ")",
           ": no examples: an empty data set");
  check_labels(labels_, info_.num_classes, info_.name);
}

Example InMemoryDataset::get(int64_t index) const {
  check_index(index, size(), info_.name);
  return {images_.select(0, index), labels_.data<int64_t>()[index]};
}

Batch InMemoryDataset::get_batch(std::span<const int64_t> indices, const Normalization* norm) const {
  const int64_t b = static_cast<int64_t>(indices.size()), c = channels(), hw = height() * width();
  const Normalization cn = channel_norm(norm, c, info_.name);
  // One 256-entry table per channel turns scaling and normalising into a lookup.
  std::vector<std::array<float, 256>> table(c);
  for (int64_t ch = 0; ch < c; ++ch)
    for (int v = 0; v < 256; ++v) table[ch][v] = (v / 255.0f - cn.mean[ch]) / cn.std[ch];
  Batch batch{Tensor::empty({b, c, height(), width()}), Tensor::empty({b}, DType::int64)};
  float* x = batch.x.data<float>();
  int64_t* y = batch.y.data<int64_t>();
  const uint8_t* pixels = images_.data<uint8_t>();
  const int64_t* labels = labels_.data<int64_t>();
  for (int64_t index : indices) check_index(index, size(), info_.name);
  // Spread over the intra-op pool: between training steps the other threads are idle, and
  // this is a tenth of an MLP step done on one thread.
  parallel_for(0, b, kSamplesPerTask, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      if (i + 2 < end) prefetch(pixels + indices[i + 2] * c * hw, c * hw);
      const uint8_t* src = pixels + indices[i] * c * hw;
      float* dst = x + i * c * hw;
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t p = 0; p < hw; ++p) dst[ch * hw + p] = table[ch][src[ch * hw + p]];
      y[i] = labels[indices[i]];
    }
  });
  return batch;
}

}  // namespace rg::data
