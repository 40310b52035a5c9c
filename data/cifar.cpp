// CIFAR binary batch parsing and the CIFAR-10/100 datasets (see cifar.h).
#include "data/cifar.h"

#include <cstring>

#include "data/io.h"
#include "tensor/ops.h"

namespace rg::data {

namespace {

constexpr int64_t kPixels = 3 * 32 * 32;
constexpr size_t kMaxCifarFile = size_t{1} << 30;

}  // namespace

CifarRecords parse_cifar(std::span<const uint8_t> bytes, CifarKind kind, const std::string& file) {
  const int64_t label_bytes = kind == CifarKind::Cifar10 ? 1 : 2;
  const int64_t num_classes = kind == CifarKind::Cifar10 ? 10 : kind == CifarKind::Cifar100Coarse ? 20 : 100;
  const int64_t record = label_bytes + kPixels;
  const auto size = static_cast<int64_t>(bytes.size());
  RG_CHECK(size > 0, file, ": empty file, expected ", record, "-byte CIFAR records");
  RG_CHECK(size % record == 0, file, ": size ", size, " is not a multiple of the ", record,
           "-byte CIFAR record (truncated, or trailing bytes after ", size / record, " records)");
  const int64_t n = size / record;
  CifarRecords out{Tensor::empty({n, 3, 32, 32}, DType::uint8), Tensor::empty({n}, DType::int64)};
  uint8_t* images = out.images.data<uint8_t>();
  int64_t* labels = out.labels.data<int64_t>();
  const int64_t label_at = kind == CifarKind::Cifar100Fine ? 1 : 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* rec = bytes.data() + i * record;
    labels[i] = rec[label_at];
    RG_CHECK(labels[i] < num_classes, file, ": record ", i, " has label ", labels[i], ", out of range [0, ",
             num_classes, ")");
    std::memcpy(images + i * kPixels, rec + label_bytes, kPixels);
  }
  return out;
}

namespace {

// `records`: the number each file must hold, 0 for any.
InMemoryDataset load_cifar(const std::string& folder, const std::vector<std::string>& files, CifarKind kind,
                           const std::string& root, int64_t records, DatasetInfo info) {
  const std::string dir =
      find_dataset_dir(folder, files, false, root, "get it with: scripts/download-data.sh " + folder);
  std::vector<Tensor> images, labels;
  for (const std::string& f : files) {
    const std::string path = dir + "/" + f;
    CifarRecords r = parse_cifar(read_file(path, kMaxCifarFile), kind, path);
    RG_CHECK(records == 0 || r.labels.size(0) == records, path, ": holds ", r.labels.size(0), " records, the ",
             "official file has ", records, " (pass official_counts = false to read a subset)");
    images.push_back(r.images);
    labels.push_back(r.labels);
  }
  info.source = dir + "/" + (files.size() == 1 ? files[0] : "{" + files.front() + " .. " + files.back() + "}");
  return InMemoryDataset(cat(images), cat(labels), std::move(info));
}

}  // namespace

CIFAR10::CIFAR10(CifarOptions options)
    : InMemoryDataset(load_cifar(
          "cifar10",
          options.split == Split::Train
              ? std::vector<std::string>{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                                         "data_batch_4.bin", "data_batch_5.bin"}
              : std::vector<std::string>{"test_batch.bin"},
          CifarKind::Cifar10, options.root, options.official_counts ? 10000 : 0,
          {"CIFAR10",
           10,
           {{0.4914f, 0.4822f, 0.4465f}, {0.2470f, 0.2435f, 0.2616f}},
           {"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"}})) {}

CIFAR100::CIFAR100(Cifar100Options options)
    : InMemoryDataset(load_cifar("cifar100", {options.split == Split::Train ? "train.bin" : "test.bin"},
                                 options.coarse ? CifarKind::Cifar100Coarse : CifarKind::Cifar100Fine, options.root,
                                 options.official_counts ? (options.split == Split::Train ? 50000 : 10000) : 0,
                                 {"CIFAR100",
                                  options.coarse ? 20 : 100,
                                  {{0.5071f, 0.4865f, 0.4409f}, {0.2673f, 0.2564f, 0.2762f}},
                                  {}})) {}

}  // namespace rg::data
