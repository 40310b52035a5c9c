// libFuzzer target for the IDX reader (MNIST-style files, raw or gzip).
// Built by fuzz/CMakeLists.txt with clang++-16 -fsanitize=fuzzer,address,undefined.
#include "fuzz/targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return rg::fuzz::idx(data, size); }
