// Checkpoints in a safetensors-compatible file: 8-byte little-endian header length, a JSON
// header ({name: {dtype, shape, data_offsets}}, strings under "__metadata__"), then the raw
// little-endian data. Writes are atomic (temp file in the same directory, fsync, rename);
// reads validate everything and never execute anything from the file.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "nn/module.h"
#include "nn/optim.h"
#include "tensor/generator.h"

namespace rg::nn {

// ---- the file format ----
struct SafetensorsFile {
  std::map<std::string, Tensor> tensors;            // CPU tensors
  std::map<std::string, std::string> metadata;      // the "__metadata__" strings
};
// The file image of `tensors` (any device, any strides) and `metadata`.
std::vector<uint8_t> serialize_safetensors(const std::map<std::string, Tensor>& tensors,
                                           const std::map<std::string, std::string>& metadata);
// Parses and validates a whole file image: header length within bounds, JSON, known
// dtypes, shapes and offsets consistent and inside the data, no overlaps. Throws rg::Error
// naming `source` and the problem. Safe on arbitrary bytes (the fuzzers call it).
SafetensorsFile parse_safetensors(const uint8_t* data, size_t size, const std::string& source = "<memory>");
SafetensorsFile read_safetensors(const std::string& path);
// Atomic: readers see the old file or the complete new one, never a torn write.
void write_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata);

// ---- training checkpoints ----
// Tensors "model.<name>" (parameters and buffers) and "optim.<name>"; metadata "format",
// "step", "epoch", "sampler_epoch", "sampler_position", "rng.<name>" = "<seed>:<offset>"
// and the caller's free-form `extra` entries (e.g. a model/config description).
struct Checkpoint {
  int64_t step = 0;
  int64_t epoch = 0;
  int64_t sampler_epoch = 0;
  int64_t sampler_position = 0;
  std::map<std::string, Generator*> generators = {};  // saved; restored in place by load
  std::map<std::string, std::string> extra = {};
};
inline constexpr const char* kCheckpointFormat = "ringgrad-checkpoint-1";

void save_checkpoint(const std::string& path, const Module& model, const optim::Optimizer* optimizer,
                     const Checkpoint& info);
// Restores the model (shapes must match exactly), the optimizer when given, and every
// generator named in info.generators; fills the counters and `extra` of `info`. Nothing is
// modified when the file or its contents do not fit.
void load_checkpoint(const std::string& path, Module& model, optim::Optimizer* optimizer, Checkpoint& info);

}  // namespace rg::nn
