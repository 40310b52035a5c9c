// ImageFolder: scanning, decoding through stb_image, and resizing (see image_folder.h).
#include "data/image_folder.h"

#include <stb/stb_image.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>

#include "data/io.h"
#include "tensor/ops.h"

namespace rg::data {

namespace fs = std::filesystem;

namespace {

// Bilinear sample of an interleaved (h, w, c) image at the centre-aligned position of
// output pixel (y, x), as PIL and torchvision do for upscaling.
float bilinear(const uint8_t* img, int64_t h, int64_t w, int64_t c, int64_t ch, double sy, double sx) {
  sy = std::clamp(sy, 0.0, static_cast<double>(h - 1));
  sx = std::clamp(sx, 0.0, static_cast<double>(w - 1));
  const auto y0 = static_cast<int64_t>(sy), x0 = static_cast<int64_t>(sx);
  const int64_t y1 = std::min(y0 + 1, h - 1), x1 = std::min(x0 + 1, w - 1);
  const double fy = sy - y0, fx = sx - x0;
  auto at = [&](int64_t y, int64_t x) { return static_cast<double>(img[(y * w + x) * c + ch]); };
  return static_cast<float>((1 - fy) * ((1 - fx) * at(y0, x0) + fx * at(y0, x1)) +
                            fy * ((1 - fx) * at(y1, x0) + fx * at(y1, x1)));
}

// Scales the shorter side to the output's (the longer one keeps the aspect ratio), then
// takes the centre. Downscaling averages a box of source pixels per output pixel so thin
// lines do not alias away; upscaling interpolates bilinearly.
Tensor resize_crop(const uint8_t* img, int64_t h, int64_t w, int64_t c, const ImageSize& size) {
  const double scale = std::max(static_cast<double>(size.height) / h, static_cast<double>(size.width) / w);
  const double off_y = (h * scale - size.height) / 2, off_x = (w * scale - size.width) / 2;
  const auto box = static_cast<int64_t>(std::max(1.0, std::floor(1.0 / scale)));
  Tensor out = Tensor::empty({c, size.height, size.width}, DType::uint8);
  uint8_t* dst = out.data<uint8_t>();
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t y = 0; y < size.height; ++y)
      for (int64_t x = 0; x < size.width; ++x) {
        const double sy = (y + off_y + 0.5) / scale - 0.5 * box, sx = (x + off_x + 0.5) / scale - 0.5 * box;
        double sum = 0;
        for (int64_t by = 0; by < box; ++by)
          for (int64_t bx = 0; bx < box; ++bx) sum += bilinear(img, h, w, c, ch, sy + by, sx + bx);
        dst[(ch * size.height + y) * size.width + x] =
            static_cast<uint8_t>(std::clamp(std::lround(sum / (box * box)), 0L, 255L));
      }
  return out;
}

// Debian 12's stb_image (2022-09-08) has two Huffman-table bugs that fuzz_image found:
// it trusts a table's 16 code counts and writes past its 257-entry size list when they
// add up to more than 256 (upstream stb 2.28 rejects such tables), and it decodes a scan
// with a table no DHT segment defined, reading uninitialised memory and indexing out of
// bounds. The markers are walked here first, the way stb's decoder meets them.
struct JpegHuffmanTables {
  bool defined[2][4] = {};  // [class: 0 DC, 1 AC][table id]
  bool progressive = false;
  bool frame_seen = false;  // stb reads the first frame header (SOF) only

  void check_dht(std::span<const uint8_t> b, size_t begin, size_t end, const std::string& file) {
    for (size_t t = begin; t < end && t < b.size();) {
      const int table_class = b[t] >> 4, id = b[t] & 15;
      RG_CHECK(table_class <= 1 && id <= 3, file, ": cannot decode image: bad JPEG Huffman table header");
      size_t codes = 0;  // stb reads missing bytes past the end of the file as 0
      for (size_t i = 1; i <= 16 && t + i < b.size(); ++i) codes += b[t + i];
      RG_CHECK(codes <= 256, file, ": cannot decode image: corrupt JPEG Huffman table with ", codes,
               " codes (at most 256)");
      defined[table_class][id] = true;
      t += 17 + codes;
    }
  }

  // A baseline scan decodes with both tables of each component; a progressive scan with
  // the DC table in a first DC pass (Ss == 0, Ah == 0) and the AC table in an AC pass.
  void check_sos(std::span<const uint8_t> b, size_t begin, const std::string& file) const {
    if (begin >= b.size()) return;
    const size_t components = b[begin];
    const size_t params = begin + 1 + 2 * components;
    if (params + 2 >= b.size()) return;  // stb rejects the truncated header itself
    const uint8_t spectral_start = b[params], successive_high = b[params + 2] >> 4;
    const bool uses_dc = !progressive || (spectral_start == 0 && successive_high == 0);
    const bool uses_ac = !progressive || spectral_start > 0;
    for (size_t c = 0; c < components; ++c) {
      const int dc = b[begin + 2 + 2 * c] >> 4, ac = b[begin + 2 + 2 * c] & 15;
      if (dc > 3 || ac > 3) continue;  // stb rejects these ids itself
      RG_CHECK(!uses_dc || defined[0][dc], file, ": cannot decode image: JPEG scan uses DC Huffman table ", dc,
               " before any DHT segment defines it");
      RG_CHECK(!uses_ac || defined[1][ac], file, ": cannot decode image: JPEG scan uses AC Huffman table ", ac,
               " before any DHT segment defines it");
    }
  }
};

void check_jpeg_huffman_tables(std::span<const uint8_t> b, const std::string& file) {
  // stb takes any input starting with 0xFF for a JPEG (fill bytes may precede the SOI
  // marker); PNG and BMP files never start so.
  const size_t n = b.size();
  if (n < 2 || b[0] != 0xFF) return;
  JpegHuffmanTables tables;
  size_t pos = 0;
  while (pos + 1 < n) {
    const uint8_t marker = b[pos + 1];
    // Entropy-coded bytes, fill bytes, stuffed zeros and markers without a length.
    if (b[pos] != 0xFF || marker == 0xFF) {
      ++pos;
      continue;
    }
    if (marker == 0x00 || marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8)) {
      pos += 2;
      continue;
    }
    if (marker == 0xD9 || pos + 3 >= n) return;
    const size_t end = pos + 2 + (size_t{b[pos + 2]} << 8 | b[pos + 3]);
    if ((marker == 0xC0 || marker == 0xC1 || marker == 0xC2) && !tables.frame_seen) {
      tables.frame_seen = true;
      tables.progressive = marker == 0xC2;
    }
    if (marker == 0xC4) tables.check_dht(b, pos + 4, end, file);
    if (marker == 0xDA) tables.check_sos(b, pos + 4, file);
    pos = std::max(end, pos + 2);
  }
}

// stb_image grows its PNG data buffer to each IDAT chunk's declared length before reading
// the chunk, so a few bytes claiming a 1 GB chunk cost a 1 GB allocation (found by
// fuzz_image as a timeout). A chunk may not claim more bytes than the file has left.
void check_png_chunk_lengths(std::span<const uint8_t> b, const std::string& file) {
  static constexpr uint8_t kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  if (b.size() < 8 || !std::equal(kSignature, kSignature + 8, b.begin())) return;
  for (size_t pos = 8; pos + 8 <= b.size();) {
    const size_t length = size_t{b[pos]} << 24 | size_t{b[pos + 1]} << 16 | size_t{b[pos + 2]} << 8 | b[pos + 3];
    RG_CHECK(length <= b.size() - pos - 8, file, ": cannot decode image: PNG chunk at byte ", pos, " claims ", length,
             " bytes but only ", b.size() - pos - 8, " follow");
    if (std::equal(b.begin() + pos + 4, b.begin() + pos + 8, "IEND")) return;
    pos += 12 + length;  // length, type, data, CRC
  }
}

bool is_image_file(const fs::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg" || ext == ".bmp";
}

std::vector<fs::path> sorted_entries(const fs::path& dir, bool want_dirs) {
  std::vector<fs::path> out;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    if (want_dirs ? e.is_directory() : (e.is_regular_file() && is_image_file(e.path()))) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

InMemoryDataset load_folder(const ImageFolderOptions& options) {
  const ImageSize& size = options.size;
  RG_CHECK(size.channels == 1 || size.channels == 3, options.name, ": channels must be 1 or 3, got ", size.channels);
  RG_CHECK(size.height > 0 && size.width > 0 && size.height <= kMaxImageDimension && size.width <= kMaxImageDimension,
           options.name, ": bad output size ", size.height, "x", size.width);
  std::error_code ec;
  RG_CHECK(fs::is_directory(options.root, ec), options.name, ": ", options.root, ": folder not found");
  DatasetInfo info{options.name, 0, options.normalization, {}, options.root};
  std::vector<Tensor> images;
  std::vector<int64_t> labels;
  for (const fs::path& class_dir : sorted_entries(options.root, true)) {
    const std::vector<fs::path> files = sorted_entries(class_dir, false);
    RG_CHECK(!files.empty(), class_dir.string(), ": empty class folder (no .png, .jpg, .jpeg or .bmp files)");
    for (const fs::path& file : files) {
      images.push_back(decode_image(read_file(file.string(), options.max_file_bytes), size, file.string()));
      labels.push_back(info.num_classes);
    }
    info.class_names.push_back(class_dir.filename().string());
    ++info.num_classes;
  }
  RG_CHECK(!images.empty(), options.root, ": no class folders found (expected root/<class>/<image>)");
  return InMemoryDataset(stack(images), Tensor::from_vector(labels, {static_cast<int64_t>(labels.size())}),
                         std::move(info));
}

}  // namespace

void check_image_bytes(std::span<const uint8_t> bytes, const std::string& file) {
  RG_CHECK(bytes.size() <= static_cast<size_t>(INT32_MAX), file, ": image file too large: ", bytes.size(), " bytes");
  check_jpeg_huffman_tables(bytes, file);
  check_png_chunk_lengths(bytes, file);
}

Tensor decode_image(std::span<const uint8_t> bytes, const ImageSize& size, const std::string& file) {
  check_image_bytes(bytes, file);
  int w = 0, h = 0, file_channels = 0;
  const auto c = static_cast<int>(size.channels);
  std::unique_ptr<uint8_t, void (*)(void*)> pixels(
      stbi_load_from_memory(bytes.data(), static_cast<int>(bytes.size()), &w, &h, &file_channels, c),
      stbi_image_free);
  if (!pixels) RG_THROW(file, ": cannot decode image: ", stbi_failure_reason());
  // stb_image accepts a BMP declaring width 0 (found by fuzz_image); resizing it divides by 0.
  RG_CHECK(w > 0 && h > 0, file, ": cannot decode image: it declares ", w, " x ", h, " pixels");
  return resize_crop(pixels.get(), h, w, c, size);
}

ImageFolder::ImageFolder(ImageFolderOptions options) : InMemoryDataset(load_folder(options)) {}

}  // namespace rg::data
