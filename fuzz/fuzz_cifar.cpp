// libFuzzer target for the CIFAR-10/100 binary reader.
// Built by fuzz/CMakeLists.txt with clang++-16 -fsanitize=fuzzer,address,undefined.
#include "fuzz/targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return rg::fuzz::cifar(data, size); }
