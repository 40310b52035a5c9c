// IDX files (MNIST, Fashion-MNIST, EMNIST-style), raw or gzip-compressed: images with
// magic 0x00000803 and dims (N, H, W), labels with magic 0x00000801 and dim (N), all
// big-endian, followed by exactly N*H*W (or N) bytes.
#pragma once
#include <cstdint>
#include <span>
#include <string>

#include "data/dataset.h"

namespace rg::data {

// Parsers of already-inflated bytes; `file` names the source in errors.
Tensor parse_idx_images(std::span<const uint8_t> bytes, const std::string& file);  // uint8 (N, 1, H, W)
Tensor parse_idx_labels(std::span<const uint8_t> bytes, const std::string& file);  // int64 (N)

// Both files read (gzip or raw), checked against each other and against info.num_classes.
InMemoryDataset load_idx(const std::string& images_file, const std::string& labels_file, DatasetInfo info);

struct MnistOptions {
  Split split = Split::Train;
  std::string root = {};  // a data root holding <name>/ (e.g. fashion-mnist/); empty: search data_roots()
};

// Zalando's Fashion-MNIST, in <root>/fashion-mnist/ (Debian: apt install dataset-fashion-mnist).
class FashionMNIST : public InMemoryDataset {
 public:
  explicit FashionMNIST(MnistOptions options = {});
};

// LeCun's MNIST, in <root>/mnist/ (scripts/download-data.sh mnist).
class MNIST : public InMemoryDataset {
 public:
  explicit MNIST(MnistOptions options = {});
};

}  // namespace rg::data
