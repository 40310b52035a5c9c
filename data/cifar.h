// CIFAR-10 and CIFAR-100 binary batches: fixed-size records of label byte(s) followed by
// 3*32*32 pixels in CHW order (CIFAR-10: 1 label byte, 3073-byte records; CIFAR-100: a
// coarse then a fine label byte, 3074-byte records). Files must hold whole records only,
// and by default exactly as many as the official files.
#pragma once
#include <cstdint>
#include <span>
#include <string>

#include "data/dataset.h"

namespace rg::data {

enum class CifarKind { Cifar10, Cifar100Coarse, Cifar100Fine };

struct CifarRecords {
  Tensor images;  // uint8 (N, 3, 32, 32)
  Tensor labels;  // int64 (N)
};

// Parses one binary batch already in memory; `file` names it in errors.
CifarRecords parse_cifar(std::span<const uint8_t> bytes, CifarKind kind, const std::string& file);

struct CifarOptions {
  Split split = Split::Train;
  std::string root = {};  // a data root holding cifar10/; empty: search data_roots()
  bool official_counts = true;  // each file must hold 10000 records, as the official batches do
};

// <root>/cifar10/data_batch_1..5.bin (train) or test_batch.bin (scripts/download-data.sh cifar10).
class CIFAR10 : public InMemoryDataset {
 public:
  explicit CIFAR10(CifarOptions options = {});
};

struct Cifar100Options {
  Split split = Split::Train;
  std::string root = {};
  bool coarse = false;          // the 20 superclasses instead of the 100 classes
  bool official_counts = true;  // train.bin must hold 50000 records, test.bin 10000
};

// <root>/cifar100/train.bin or test.bin (scripts/download-data.sh cifar100).
class CIFAR100 : public InMemoryDataset {
 public:
  explicit CIFAR100(Cifar100Options options = {});
};

}  // namespace rg::data
