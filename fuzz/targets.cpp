// The fuzzing entry points (see targets.h): each feeds the bytes to the reader's parser
// exactly as a file's contents would be, swallowing only rg::Error.
#include "fuzz/targets.h"

#include <span>

#include "data/cifar.h"
#include "data/idx.h"
#include "data/image_folder.h"
#include "data/io.h"

namespace rg::fuzz {

namespace {

// Keeps a gzip bomb from spending the fuzzer's memory limit.
constexpr size_t kMaxInflated = size_t{64} << 20;

template <class Fn>
void expect_only_rg_errors(Fn fn) {
  try {
    fn();
  } catch (const rg::Error&) {
  }
}

}  // namespace

int idx(const uint8_t* data, size_t size) {
  expect_only_rg_errors([&] {
    const data::Bytes bytes = data::maybe_gunzip(data::Bytes(data, data + size), "fuzz.idx", kMaxInflated);
    expect_only_rg_errors([&] { data::parse_idx_images(bytes, "fuzz.idx"); });
    const Tensor labels = data::parse_idx_labels(bytes, "fuzz.idx");
    data::check_labels(labels, 10, "fuzz.idx");
  });
  return 0;
}

int cifar(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  for (data::CifarKind kind : {data::CifarKind::Cifar10, data::CifarKind::Cifar100Coarse, data::CifarKind::Cifar100Fine})
    expect_only_rg_errors([&] { data::parse_cifar(bytes, kind, "fuzz.bin"); });
  return 0;
}

int image(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  // One upscaling-or-downscaling RGB decode and one grey decode to an odd size.
  expect_only_rg_errors([&] { data::decode_image(bytes, {.channels = 3, .height = 32, .width = 32}, "fuzz.img"); });
  expect_only_rg_errors([&] { data::decode_image(bytes, {.channels = 1, .height = 7, .width = 5}, "fuzz.img"); });
  return 0;
}

}  // namespace rg::fuzz
