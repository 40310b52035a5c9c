// Image folders (torchvision's ImageFolder): root/<class>/<file>.png|jpg|jpeg|bmp, classes
// sorted by name and numbered from 0, files sorted within a class. Every image is decoded
// once (stb_image, from memory), resized so its shorter side fits, and centre-cropped to
// a fixed size.
#pragma once
#include <cstdint>
#include <span>
#include <string>

#include "data/dataset.h"

namespace rg::data {

inline constexpr int64_t kMaxImageDimension = 8192;  // stb_image_impl.cpp's STBI_MAX_DIMENSIONS

struct ImageSize {
  int64_t channels = 3;  // 1 (grey) or 3 (RGB); images are converted
  int64_t height = 32;
  int64_t width = 32;
};

// Decodes one PNG/JPEG/BMP file held in memory into uint8 (C, H, W) of `size`. Throws
// naming `file` when the bytes cannot be decoded or exceed kMaxImageDimension.
Tensor decode_image(std::span<const uint8_t> bytes, const ImageSize& size, const std::string& file);
// The checks decode_image makes before stb_image sees the bytes (it has bugs on some
// malformed JPEG and PNG input): throws rg::Error naming `file` and the problem. Call it
// before any other stb_image function on untrusted bytes.
void check_image_bytes(std::span<const uint8_t> bytes, const std::string& file);

struct ImageFolderOptions {
  std::string root = {};  // the folder whose subfolders are the classes
  ImageSize size = {};
  size_t max_file_bytes = size_t{64} << 20;
  std::string name = "ImageFolder";
  Normalization normalization = {{0.5f}, {0.5f}};
};

class ImageFolder : public InMemoryDataset {
 public:
  explicit ImageFolder(ImageFolderOptions options);
};

}  // namespace rg::data
