// The fuzzing entry points of the data readers, shared by the libFuzzer executables
// (fuzz_<target>.cpp, built with clang-16) and the corpus-replay test data.fuzz_replay
// (tests/data/fuzz_replay, built by the normal g++ build). Each returns 0; a reader may
// reject its input only by throwing rg::Error, anything else is a bug.
#pragma once
#include <cstddef>
#include <cstdint>

namespace rg::fuzz {

int idx(const uint8_t* data, size_t size);    // corpus/idx: IDX images or labels, raw or gzip
int cifar(const uint8_t* data, size_t size);  // corpus/cifar: CIFAR-10/100 binary batches
int image(const uint8_t* data, size_t size);  // corpus/image: PNG, JPEG or BMP files

}  // namespace rg::fuzz
