// ImageFolder tests: classes sorted by name, PNG and BMP decoded, resized and cropped to
// the requested size; undecodable, oversized and too-large files and empty class folders
// are rg::Errors naming the file or folder.
#include "helpers.h"

using namespace rg;
using Catch::Matchers::Contains;
using test::error_of;

namespace {

// Red PNG and blue BMP images under cats/ and dogs/ (written in reverse name order).
std::string write_pets(const test::TempDir& dir) {
  auto red = [](uint32_t, uint32_t) { return std::array<uint8_t, 3>{200, 10, 10}; };
  test::write_file(dir / "pets/dogs/b.bmp", test::bmp(6, 9, 0, 0, 250));
  test::write_file(dir / "pets/dogs/a.PNG", test::png(16, 8, red));
  test::write_file(dir / "pets/dogs/notes.txt", {'h', 'i'});
  test::write_file(dir / "pets/cats/x.png", test::png(4, 4, red));
  return dir / "pets";
}

}  // namespace

TEST_CASE("data.image_folder_reads_sorted_classes", "[data]") {
  test::TempDir dir;
  data::ImageFolder ds({.root = write_pets(dir), .size = {.channels = 3, .height = 5, .width = 7}});
  REQUIRE(ds.size() == 3);
  CHECK(ds.class_names() == std::vector<std::string>{"cats", "dogs"});
  CHECK(ds.labels().to_vector<int64_t>() == std::vector<int64_t>{0, 1, 1});
  CHECK(ds.images().shape() == Shape{3, 3, 5, 7});
  // A flat colour stays that colour through resizing: cats/x.png, dogs/a.PNG, dogs/b.bmp.
  for (int64_t i : {0, 1}) {
    const std::vector<int> px = ds.get(i).image.to_vector<int>();
    CHECK(px[0] == 200);
    CHECK(px[35] == 10);
  }
  const std::vector<int> blue = ds.get(2).image.to_vector<int>();
  CHECK(blue[0] == 0);
  CHECK(blue[70] == 250);
  data::ImageFolder grey({.root = dir / "pets", .size = {.channels = 1, .height = 3, .width = 3}});
  CHECK(grey.images().shape() == Shape{3, 1, 3, 3});
}

TEST_CASE("data.image_resize_keeps_a_gradient_in_order", "[data]") {
  // Upscaling 2x2 -> 4x4 and downscaling 64x64 -> 8x8 of a horizontal ramp stay ramps.
  auto ramp = [](uint32_t w) {
    return [w](uint32_t, uint32_t x) {
      const auto v = static_cast<uint8_t>(255 * x / (w - 1));
      return std::array<uint8_t, 3>{v, v, v};
    };
  };
  for (uint32_t w : {2u, 64u}) {
    const test::Bytes bytes = test::png(w, w, ramp(w));
    const std::vector<int> px = data::decode_image(bytes, {.channels = 1, .height = 4, .width = 4}, "r.png").to_vector<int>();
    for (int x = 1; x < 4; ++x) CHECK(px[x] > px[x - 1]);
    CHECK(px[0] == px[12]);
  }
}

TEST_CASE("data.image_folder_undecodable_image", "[data]") {
  test::TempDir dir;
  write_pets(dir);
  test::Bytes broken = test::png(4, 4, [](uint32_t, uint32_t) { return std::array<uint8_t, 3>{1, 2, 3}; });
  broken.resize(40);
  test::write_file(dir / "pets/cats/y.png", broken);
  const std::string msg = error_of([&] { data::ImageFolder({.root = dir / "pets"}); });
  CHECK_THAT(msg, Contains(dir / "pets/cats/y.png"));
  CHECK_THAT(msg, Contains("cannot decode image"));
}

TEST_CASE("data.image_folder_oversized_image", "[data]") {
  // The header claims 10000 rows: rejected from the header alone, nothing allocated.
  const test::Bytes huge = test::bmp(2, 2, 1, 2, 3, 10000);
  const std::string msg = error_of([&] { data::decode_image(huge, {}, "big.bmp"); });
  CHECK_THAT(msg, Contains("big.bmp: cannot decode image: too large"));
  test::TempDir dir;
  write_pets(dir);
  const std::string cap = error_of([&] { data::ImageFolder({.root = dir / "pets", .max_file_bytes = 100}); });
  CHECK_THAT(cap, Contains("file too large"));
  CHECK_THAT(cap, Contains("the limit is 100"));
}

TEST_CASE("data.image_corrupt_jpeg_huffman_table", "[data]") {
  // A DHT segment whose 16 code counts add up to 272: Debian's stb_image would write past
  // its table (fuzz/corpus/image/crash-stb-jpeg-dht-overflow); ours refuses it first.
  test::Bytes jpeg(27, 17);
  const uint8_t head[] = {0xFF, 0xD8, 0xFF, 0xC4, 0x00, 0x13, 0x00};
  std::copy(std::begin(head), std::end(head), jpeg.begin());
  jpeg[25] = 0xFF;
  jpeg[26] = 0xD9;
  CHECK_THAT(error_of([&] { data::decode_image(jpeg, {}, "bad.jpg"); }),
             Contains("bad.jpg: cannot decode image: corrupt JPEG Huffman table with 272 codes"));
}

TEST_CASE("data.image_png_chunk_longer_than_the_file", "[data]") {
  // An IDAT chunk claiming 2 GB: stb_image would allocate it before noticing the file ends
  // (fuzz/corpus/image/timeout-png-huge-idat-length); ours refuses it first.
  const test::Bytes png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n', 0x7F, 0xFF, 0xFF, 0xFF,
                           'I',  'D', 'A', 'T', 1,    2,    3,    4};
  CHECK_THAT(error_of([&] { data::decode_image(png, {}, "big.png"); }),
             Contains("big.png: cannot decode image: PNG chunk at byte 8 claims 2147483647 bytes but only 4 follow"));
}

TEST_CASE("data.image_folder_empty_class_folder", "[data]") {
  test::TempDir dir;
  write_pets(dir);
  std::filesystem::create_directories(dir / "pets/birds");
  test::write_file(dir / "pets/birds/readme.txt", {'x'});
  CHECK_THAT(error_of([&] { data::ImageFolder({.root = dir / "pets"}); }),
             Contains(dir / "pets/birds: empty class folder"));
  CHECK_THAT(error_of([&] { data::ImageFolder({.root = dir / "nothing"}); }), Contains("folder not found"));
}
