// data.fuzz_replay: feeds every file under fuzz/corpus/<target>/ (the seeds, every input
// that ever crashed a fuzzer, and the coverage corpus in coverage/) to the same entry
// points as the libFuzzer targets, in a g++ build with ASan/UBSan, so a fixed crash stays
// fixed on every ctest.
// Usage: data_fuzz_replay <corpus root>. Exits 1 when a target's folder is missing or empty;
// a sanitizer report or an escaping exception aborts with a non-zero status.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz/targets.h"

namespace fs = std::filesystem;

namespace {

struct Target {
  const char* name;
  int (*entry)(const uint8_t*, size_t);
};

constexpr Target kTargets[] = {{"idx", rg::fuzz::idx}, {"cifar", rg::fuzz::cifar}, {"image", rg::fuzz::image}};

// Number of files replayed from `dir` and its subfolders.
int replay(const fs::path& dir, const Target& target) {
  int count = 0;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path(), std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    target.entry(bytes.data(), bytes.size());
    ++count;
  }
  return count;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <fuzz corpus root>\n", argv[0]);
    return 2;
  }
  for (const Target& target : kTargets) {
    const fs::path dir = fs::path(argv[1]) / target.name;
    std::error_code ec;
    const int count = fs::is_directory(dir, ec) ? replay(dir, target) : 0;
    std::printf("%-6s %4d inputs from %s\n", target.name, count, dir.c_str());
    if (count == 0) {
      std::fprintf(stderr, "data_fuzz_replay: no inputs in %s\n", dir.c_str());
      return 1;
    }
  }
  return 0;
}
