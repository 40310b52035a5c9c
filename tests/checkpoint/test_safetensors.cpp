// The safetensors writer and reader: round trip, atomic writes, and corrupt files, each
// rejected with a message that names the file and the problem.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "nn/checkpoint.h"
#include "tensor/ops.h"

using namespace rg;
namespace fs = std::filesystem;

namespace {

std::vector<uint8_t> sample_file() {
  std::map<std::string, Tensor> tensors = {
      {"a", Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3})},
      {"b", Tensor::from_vector<int64_t>({7, -8}, {2})},
  };
  return nn::serialize_safetensors(tensors, {{"note", "hello"}});
}

// A file image with the given header text and `data_bytes` zero bytes of data.
std::vector<uint8_t> file_with_header(const std::string& header, size_t data_bytes) {
  std::vector<uint8_t> bytes(8 + header.size() + data_bytes, 0);
  uint64_t length = header.size();
  std::memcpy(bytes.data(), &length, 8);
  std::memcpy(bytes.data() + 8, header.data(), header.size());
  return bytes;
}

std::string parse_error(const std::vector<uint8_t>& bytes) {
  try {
    nn::parse_safetensors(bytes.data(), bytes.size(), "bad.safetensors");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

fs::path temp_dir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("ringgrad_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

}  // namespace

TEST_CASE("checkpoint.safetensors_round_trip", "[checkpoint]") {
  std::vector<uint8_t> bytes = sample_file();
  uint64_t header_bytes = 0;
  std::memcpy(&header_bytes, bytes.data(), 8);
  CHECK((8 + header_bytes) % 8 == 0);  // data aligned, as the reference writer does
  nn::SafetensorsFile file = nn::parse_safetensors(bytes.data(), bytes.size());
  REQUIRE(file.tensors.size() == 2);
  CHECK(file.tensors["a"].shape() == Shape{2, 3});
  CHECK(file.tensors["a"].to_vector<float>() == std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK(file.tensors["b"].dtype() == DType::int64);
  CHECK(file.tensors["b"].to_vector<int64_t>() == std::vector<int64_t>{7, -8});
  CHECK(file.metadata.at("note") == "hello");
}

TEST_CASE("checkpoint.safetensors_strided_tensors", "[checkpoint]") {
  Tensor t = Tensor::from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3}).t();
  std::vector<uint8_t> bytes = nn::serialize_safetensors({{"t", t}}, {});
  nn::SafetensorsFile file = nn::parse_safetensors(bytes.data(), bytes.size());
  CHECK(file.tensors["t"].to_vector<double>() == std::vector<double>{1, 4, 2, 5, 3, 6});
}

TEST_CASE("checkpoint.atomic_write", "[checkpoint]") {
  fs::path dir = temp_dir("atomic");
  std::string path = (dir / "x.safetensors").string();
  nn::write_safetensors(path, {{"v", Tensor::ones({3})}}, {});
  nn::write_safetensors(path, {{"v", Tensor::zeros({4})}}, {});  // replaces the old file
  CHECK(nn::read_safetensors(path).tensors["v"].shape() == Shape{4});
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) files += entry.is_regular_file();
  CHECK(files == 1);
  CHECK_THROWS_WITH(nn::write_safetensors((dir / "missing" / "x").string(), {}, {}),
                    Catch::Contains("cannot create a temporary file"));
  fs::remove_all(dir);
}

TEST_CASE("checkpoint.corrupt_files", "[checkpoint]") {
  std::vector<uint8_t> good = sample_file();
  const std::string tensor_f32 = R"("x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";

  SECTION("truncated header length") {
    std::vector<uint8_t> bytes(good.begin(), good.begin() + 5);
    CHECK_THAT(parse_error(bytes), Catch::Contains("bad.safetensors") && Catch::Contains("truncated: 5 bytes"));
  }
  SECTION("header length beyond the file") {
    std::vector<uint8_t> bytes(good.begin(), good.begin() + 40);
    CHECK_THAT(parse_error(bytes), Catch::Contains("exceeds the file (40 bytes)"));
  }
  SECTION("header length beyond the limit") {
    std::vector<uint8_t> bytes = good;
    uint64_t huge = uint64_t{1} << 40;
    std::memcpy(bytes.data(), &huge, 8);
    CHECK_THAT(parse_error(bytes), Catch::Contains("exceeds the limit"));
  }
  SECTION("bad JSON") {
    CHECK_THAT(parse_error(file_with_header(R"({"x": {"dtype": )", 0)), Catch::Contains("not valid JSON"));
    CHECK_THAT(parse_error(file_with_header("[1, 2]", 0)), Catch::Contains("must be a JSON object"));
  }
  SECTION("truncated data: offsets outside the file") {
    std::vector<uint8_t> bytes(good.begin(), good.end() - 4);
    CHECK_THAT(parse_error(bytes), Catch::Contains("lie outside the data section") &&
                                       Catch::Contains("truncated or corrupt"));
  }
  SECTION("overlapping offsets") {
    std::string header = "{" + tensor_f32 + R"(,"y":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
    CHECK_THAT(parse_error(file_with_header(header, 12)), Catch::Contains("tensors 'x' and 'y' overlap"));
  }
  SECTION("unknown dtype") {
    std::string header = R"({"x":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}})";
    CHECK_THAT(parse_error(file_with_header(header, 4)), Catch::Contains("tensor 'x': unknown dtype 'BF16'"));
  }
  SECTION("shape and offsets disagree") {
    std::string header = R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})";
    CHECK_THAT(parse_error(file_with_header(header, 8)), Catch::Contains("needs 12 bytes but data_offsets [0, 8] span 8"));
  }
  SECTION("negative, reversed or missing fields") {
    std::string negative = R"({"x":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})";
    CHECK_THAT(parse_error(file_with_header(negative, 8)), Catch::Contains("non-negative integers"));
    std::string reversed = R"({"x":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})";
    CHECK_THAT(parse_error(file_with_header(reversed, 8)), Catch::Contains("are reversed"));
    CHECK_THAT(parse_error(file_with_header(R"({"x":{"dtype":"F32"}})", 0)),
               Catch::Contains("needs dtype, shape and data_offsets"));
  }
  SECTION("huge shapes do not overflow") {
    std::string header = R"({"x":{"dtype":"F64","shape":[1099511627776,1099511627776],"data_offsets":[0,8]}})";
    CHECK_THAT(parse_error(file_with_header(header, 8)), Catch::Contains("is too large"));
  }
  SECTION("metadata values must be strings") {
    CHECK_THAT(parse_error(file_with_header(R"({"__metadata__":{"step":3}})", 0)),
               Catch::Contains("__metadata__ 'step' must be a string"));
  }
  SECTION("missing file") {
    CHECK_THROWS_WITH(nn::read_safetensors("/nonexistent/x.safetensors"),
                      Catch::Contains("'/nonexistent/x.safetensors': cannot open"));
  }
}

TEST_CASE("checkpoint.mutated_files", "[checkpoint]") {
  std::vector<uint8_t> good = sample_file();
  Generator gen(11);
  int rejected = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<uint8_t> bytes = good;
    std::vector<int64_t> edits(4);
    gen.fill_randint(edits.data(), 4, 0, static_cast<int64_t>(bytes.size()));
    for (int k = 0; k < 3; ++k) bytes[static_cast<size_t>(edits[k])] ^= static_cast<uint8_t>(1 + trial % 255);
    if (trial % 4 == 0) bytes.resize(static_cast<size_t>(edits[3]));
    try {
      nn::parse_safetensors(bytes.data(), bytes.size(), "mutated");
    } catch (const Error&) {
      ++rejected;
    }
  }
  CHECK(rejected > 500);
}

TEST_CASE("checkpoint.fuzz_corpus_replay", "[checkpoint]") {
  fs::path corpus = fs::path(RINGGRAD_TESTS_DIR).parent_path() / "fuzz" / "corpus" / "checkpoint";
  REQUIRE(fs::is_directory(corpus));
  int files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(corpus)) {  // the seeds, then coverage/
    if (!entry.is_regular_file()) continue;
    ++files;
    try {
      nn::read_safetensors(entry.path().string());
    } catch (const Error&) {
    }
  }
  CHECK(files >= 200);
}
