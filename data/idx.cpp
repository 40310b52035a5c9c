// IDX parsing with every header field checked before a byte is trusted (see idx.h).
#include "data/idx.h"

#include "data/io.h"

namespace rg::data {

namespace {

constexpr uint32_t kImagesMagic = 0x00000803;
constexpr uint32_t kLabelsMagic = 0x00000801;
// Far above any real IDX file; also keeps N*H*W from overflowing.
constexpr uint64_t kMaxDim = uint64_t{1} << 24;

// Reads the magic and `ndims` dims, checks the payload is exactly their product.
std::vector<int64_t> read_header(std::span<const uint8_t> bytes, const std::string& file, uint32_t magic,
                                 size_t ndims) {
  const size_t header = 4 + 4 * ndims;
  RG_CHECK(bytes.size() >= 4, file, ": truncated IDX header: ", bytes.size(), " bytes, need ", header);
  const uint32_t found = read_be32(bytes, 0);
  if (found != magic) {
    std::ostringstream msg;
    msg << std::hex << "wrong IDX magic 0x" << found << ", expected 0x0000080" << (magic & 0xf);
    RG_THROW(file, ": ", msg.str(), magic == kImagesMagic ? " (an images file)" : " (a labels file)");
  }
  RG_CHECK(bytes.size() >= header, file, ": truncated IDX header: ", bytes.size(), " bytes, need ", header);
  std::vector<int64_t> dims;
  uint64_t payload = 1;
  for (size_t d = 0; d < ndims; ++d) {
    const uint64_t dim = read_be32(bytes, 4 + 4 * d);
    RG_CHECK(dim <= kMaxDim, file, ": IDX dimension ", d, " is ", dim, ", above the limit ", kMaxDim);
    payload *= dim;
    dims.push_back(static_cast<int64_t>(dim));
  }
  RG_CHECK(payload <= uint64_t{1} << 40, file, ": IDX dims describe ", payload, " bytes, too many");
  const uint64_t expected = header + payload;
  RG_CHECK(bytes.size() >= expected, file, ": truncated: ", bytes.size(), " bytes, the header promises ", expected);
  RG_CHECK(bytes.size() == expected, file, ": ", bytes.size() - expected, " trailing bytes after the ", expected,
           " the header promises");
  return dims;
}

}  // namespace

Tensor parse_idx_images(std::span<const uint8_t> bytes, const std::string& file) {
  const std::vector<int64_t> d = read_header(bytes, file, kImagesMagic, 3);
  RG_CHECK(d[1] > 0 && d[2] > 0, file, ": IDX images of size ", d[1], "x", d[2]);
  Tensor images = Tensor::empty({d[0], 1, d[1], d[2]}, DType::uint8);
  std::copy(bytes.begin() + 16, bytes.end(), images.data<uint8_t>());
  return images;
}

Tensor parse_idx_labels(std::span<const uint8_t> bytes, const std::string& file) {
  const std::vector<int64_t> d = read_header(bytes, file, kLabelsMagic, 1);
  Tensor labels = Tensor::empty({d[0]}, DType::int64);
  std::copy(bytes.begin() + 8, bytes.end(), labels.data<int64_t>());
  return labels;
}

InMemoryDataset load_idx(const std::string& images_file, const std::string& labels_file, DatasetInfo info) {
  Tensor images = parse_idx_images(read_maybe_gzipped(images_file), images_file);
  Tensor labels = parse_idx_labels(read_maybe_gzipped(labels_file), labels_file);
  RG_CHECK(images.size(0) == labels.size(0), images_file, " holds ", images.size(0), " images but ", labels_file,
           " holds ", labels.size(0), " labels");
  check_labels(labels, info.num_classes, labels_file);
  info.source = images_file;
  return InMemoryDataset(images, labels, std::move(info));
}

namespace {

InMemoryDataset load_mnist_like(const MnistOptions& options, DatasetInfo info, const std::string& folder,
                                const std::string& how_to_get) {
  const std::string prefix = options.split == Split::Train ? "train" : "t10k";
  const std::string images = prefix + "-images-idx3-ubyte", labels = prefix + "-labels-idx1-ubyte";
  const std::string dir = find_dataset_dir(folder, {images, labels}, true, options.root, how_to_get);
  return load_idx(resolve_file(dir, images, true), resolve_file(dir, labels, true), std::move(info));
}

}  // namespace

FashionMNIST::FashionMNIST(MnistOptions options)
    : InMemoryDataset(load_mnist_like(
          options,
          {"FashionMNIST",
           10,
           {{0.2860f}, {0.3530f}},
           {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}},
          "fashion-mnist",
          "get it with: sudo apt install dataset-fashion-mnist, or scripts/download-data.sh fashion-mnist")) {}

MNIST::MNIST(MnistOptions options)
    : InMemoryDataset(load_mnist_like(options,
                                      {"MNIST", 10, {{0.1307f}, {0.3081f}}, {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}},
                                      "mnist", "get it with: scripts/download-data.sh mnist")) {}

}  // namespace rg::data
