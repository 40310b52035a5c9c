// The safetensors writer and reader: round trip, atomic writes (one locked temporary per
// target, even across kills), and corrupt or hostile files, each rejected with a short
// message that names the file and the problem.
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "nn/checkpoint.h"
#include "tensor/ops.h"
#include "tensor/thread_pool.h"

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

TEST_CASE("checkpoint.hostile_headers", "[checkpoint]") {
  const std::string deep_array = std::string(100000, '[') + std::string(100000, ']');
  std::string deep_object;
  for (int i = 0; i < 100000; ++i) deep_object += R"({"a":)";
  deep_object.append("1").append(100000, '}');
  const std::string long_name(1 << 20, 'n');
  std::string long_array = "[0";
  for (int i = 0; i < 100000; ++i) long_array += ",1";
  long_array += "]";
  const std::string x4 = R"("x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]})";
  struct Case {
    std::string header;
    size_t data_bytes;
    const char* expected;
  };
  const std::vector<Case> cases = {
      // Nesting: a few hundred kB nested 100,000 deep once overflowed the stack.
      {R"({"__metadata__":{"k":)" + deep_array + "}}", 0, "deeper than 128 levels"},
      {R"({"x":)" + deep_object + "}", 0, "deeper than 128 levels"},
      {R"({"x":{"dtype":"F32","shape":)" + deep_array + R"(,"data_offsets":[0,0]}})", 0, "deeper than 128 levels"},
      {"{\"x\":" + std::string(128, '[') + std::string(128, ']') + "}", 0, "deeper than 128 levels"},
      {"{\"x\":" + std::string(127, '[') + std::string(127, ']') + "}", 0, "needs dtype, shape and data_offsets"},
      {deep_array, 0, "deeper than 128 levels"},
      // Repeated keys: the parser would keep one silently.
      {"{" + x4 + "," + x4 + "}", 4, "the key 'x' appears twice"},
      {R"({"__metadata__":{"step":"1","step":"9"}})", 0, "the key 'step' appears twice"},
      {R"({"__metadata__":{"a":"1"},"__metadata__":{"a":"2"}})", 0, "appears twice"},
      // Long text is quoted short.
      {R"({")" + long_name + R"(":{"dtype":"Q8","shape":[1],"data_offsets":[0,1]}})", 1, "(1048576 bytes)"},
      {R"({"x":{"dtype":")" + long_name + R"(","shape":[1],"data_offsets":[0,1]}})", 1, "unknown dtype 'nnnn"},
      {R"({"__metadata__":{"k":)" + long_array + "}}", 0, "must be a string, got an array of 100001 items"},
      {R"({"x":{"dtype":"F32","shape":)" + long_array + R"(,"data_offsets":[0,4]}})", 4, "has 100001 items"},
      {R"({"x":)" + long_array + "}", 0, "got an array of 100001 items"},
      // Shapes whose sizes do not fit, counted with zeros as 1.
      {R"({"x":{"dtype":"U8","shape":[0,1099511627776,1099511627776,1099511627776],"data_offsets":[0,0]}})", 0,
       "is too large"},
      {R"({"x":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", 0, "is too large"},
      {R"({"x":{"dtype":"U8","shape":[18446744073709551615],"data_offsets":[0,0]}})", 0, "is too large"},
      {R"({"x":{"dtype":"U8","shape":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,)"
       R"(1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1],"data_offsets":[0,1]}})",
       1, "shape has 65 items, expected at most 64"},
      {R"({"x":{"dtype":"U8","shape":[2.0],"data_offsets":[0,2]}})", 2, "non-negative integers, got 2.0"},
      {R"({"x":{"dtype":"U8","shape":"abc","data_offsets":[0,2]}})", 2, "shape must be an array, got 'abc'"},
      {R"({"x":{"dtype":"U8","shape":[2],"data_offsets":[0,2,4]}})", 4, "data_offsets has 3 items, expected 2"},
      {R"({"x":{"dtype":7,"shape":[2],"data_offsets":[0,2]}})", 2, "dtype must be a string, got 7"},
      {R"({"__metadata__":["a"]})", 0, "__metadata__ must be an object of strings, got an array of 1 items"},
      // The data must tile the data section: no gap, no trailing bytes, no overlap.
      {"{" + x4 + R"(,"y":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})", 12, "bytes [4, 8) of the data"},
      {R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8, "bytes [0, 4) of the data section belong"},
      {"{" + x4 + "}", 12, "bytes [4, 12) of the data section belong to no tensor (trailing data)"},
      {R"({"__metadata__":{"a":"b"}})", 3, "bytes [0, 3) of the data section belong to no tensor"},
      {"{" + x4 + R"(,"y":{"dtype":"U8","shape":[0],"data_offsets":[2,2]}})", 4, "overlap"},
      {R"({"x":{"dtype":"U8","shape":[1],"data_offsets":[18446744073709551614,18446744073709551615]}})", 1,
       "lie outside the data section"},
      {"{\"x\xff\":1}", 0, "not valid JSON"},  // not UTF-8
  };
  for (const Case& c : cases) {
    const std::string error = parse_error(file_with_header(c.header, c.data_bytes));
    INFO(error.substr(0, 300));
    CHECK_THAT(error, Catch::Contains(c.expected));
    CHECK(error.size() < 400);  // no whole value, name or shape repeated
  }
  // Valid layouts in any order, zero-sized tensors included.
  const std::string reordered = R"({"y":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},)" + x4 +
                                R"(,"e":{"dtype":"F64","shape":[0,3],"data_offsets":[4,4]},)"
                                R"("z":{"dtype":"U8","shape":[0],"data_offsets":[8,8]}})";
  const std::vector<uint8_t> bytes = file_with_header(reordered, 8);
  const nn::SafetensorsFile file = nn::parse_safetensors(bytes.data(), bytes.size());
  CHECK(file.tensors.size() == 4);
  CHECK(file.tensors.at("e").shape() == Shape{0, 3});
  std::string rank64 = R"({"x":{"dtype":"U8","shape":[1)";
  for (int i = 1; i < 64; ++i) rank64 += ",1";
  const std::vector<uint8_t> ones = file_with_header(rank64 + R"(],"data_offsets":[0,1]}})", 1);
  CHECK(nn::parse_safetensors(ones.data(), ones.size()).tensors.at("x").dim() == 64);
}

TEST_CASE("checkpoint.reads_regular_files_only", "[checkpoint]") {
  CHECK_THROWS_WITH(nn::read_safetensors("/dev/zero"), Catch::Contains("'/dev/zero': not a regular file"));
  fs::path dir = temp_dir("not_regular");
  CHECK_THROWS_WITH(nn::read_safetensors(dir.string()), Catch::Contains("not a regular file"));
  fs::remove_all(dir);
}

namespace {

std::vector<std::string> files_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_CASE("checkpoint.temp_files_do_not_pile_up", "[checkpoint]") {
  fs::path dir = temp_dir("temp_files");
  const std::string path = (dir / "ckpt.safetensors").string(), temp = path + ".tmp";
  const std::map<std::string, Tensor> small = {{"v", Tensor::ones({3})}};

  SECTION("a stale temporary from a killed writer is taken over by the next save") {
    std::ofstream(temp) << "half a checkpoint";
    nn::write_safetensors(path, small, {});
    CHECK(files_in(dir) == std::vector<std::string>{"ckpt.safetensors"});
    CHECK(nn::read_safetensors(path).tensors.at("v").shape() == Shape{3});
  }
  SECTION("writers killed mid-write leave one temporary at most, and the last good file") {
    // 16 MB files, so that a kill lands inside a write; the child saves until killed.
    const std::map<std::string, Tensor> big = {{"v", Tensor::zeros({4 << 20})}};
    nn::write_safetensors(path, small, {});
    for (int kill = 0; kill < 5; ++kill) {
      const pid_t pid = ::fork();
      if (pid == 0) {
        ThreadPoolScope inline_ops(1);  // the parent's pool has no workers in this child
        for (;;) nn::write_safetensors(path, big, {});
      }
      REQUIRE(pid > 0);
      for (int wait = 0; wait < 2000 && !fs::exists(temp); ++wait) ::usleep(500);
      ::usleep(1000 * kill);
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
      const std::vector<std::string> files = files_in(dir);
      CHECK(files.size() <= 2);                   // the checkpoint, and perhaps ckpt.safetensors.tmp
      CHECK_NOTHROW(nn::read_safetensors(path));  // the old file or a complete new one
    }
    nn::write_safetensors(path, small, {});
    CHECK(files_in(dir) == std::vector<std::string>{"ckpt.safetensors"});
  }
  SECTION("a second writer of the same file is refused while the first writes") {
    const int holder = ::open(temp.c_str(), O_WRONLY | O_CREAT, 0644);
    REQUIRE(holder >= 0);
    REQUIRE(::flock(holder, LOCK_EX) == 0);  // as a live writer holds it
    CHECK_THROWS_WITH(nn::write_safetensors(path, small, {}),
                      Catch::Contains("another process is writing it") && Catch::Contains(temp));
    ::close(holder);
    nn::write_safetensors(path, small, {});
    CHECK(files_in(dir) == std::vector<std::string>{"ckpt.safetensors"});
  }
  SECTION("a failed write removes its temporary") {
    fs::create_directories(path);  // rename onto a directory fails
    CHECK_THROWS_WITH(nn::write_safetensors(path, small, {}), Catch::Contains("rename failed"));
    CHECK(files_in(dir) == std::vector<std::string>{"ckpt.safetensors"});  // the directory alone
  }
  fs::remove_all(dir);
}
