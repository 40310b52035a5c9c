// libFuzzer target for the checkpoint (safetensors) reader: arbitrary bytes may only be
// rejected with rg::Error. Built by fuzz/CMakeLists.txt with clang++-16
// -fsanitize=fuzzer,address,undefined; seed corpus in fuzz/corpus/checkpoint.
#include "nn/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    rg::nn::parse_safetensors(data, size, "fuzz.safetensors");
  } catch (const rg::Error&) {
  }
  return 0;
}
