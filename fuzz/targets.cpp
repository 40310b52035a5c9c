// The fuzzing entry points (see targets.h): each feeds the bytes to the reader's parser
// exactly as a file's contents would be, swallowing only rg::Error.
#include "fuzz/targets.h"

#include <stb/stb_image.h>

#include <cstdint>
#include <span>

#include "data/cifar.h"
#include "data/idx.h"
#include "data/image_folder.h"
#include "data/io.h"

namespace rg::fuzz {

namespace {

// Keeps a gzip bomb from spending the fuzzer's memory limit.
constexpr size_t kMaxInflated = size_t{64} << 20;
constexpr int64_t kMaxImagePixels = 512 * 512;

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
  // Large images are legitimate but slow to decode under the fuzzer's instrumentation (a
  // 646-byte JPEG declaring 2048 x 2048 took over 10 s) and reach no decoder path that
  // small ones do not: skip them, so a timeout means a hang, not a big picture.
  const std::span<const uint8_t> bytes(data, size);
  try {
    data::check_image_bytes(bytes, "fuzz.img");  // stbi_info shares the bugs it guards against
  } catch (const rg::Error&) {
    return 0;
  }
  int width = 0, height = 0, channels = 0;
  if (stbi_info_from_memory(data, static_cast<int>(size), &width, &height, &channels) &&
      int64_t{width} * height > kMaxImagePixels)
    return 0;
  // One upscaling-or-downscaling RGB decode and one grey decode to an odd size.
  expect_only_rg_errors([&] { data::decode_image(bytes, {.channels = 3, .height = 32, .width = 32}, "fuzz.img"); });
  expect_only_rg_errors([&] { data::decode_image(bytes, {.channels = 1, .height = 7, .width = 5}, "fuzz.img"); });
  return 0;
}

}  // namespace rg::fuzz
