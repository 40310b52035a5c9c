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
// Parses and validates a whole file image: header length within bounds (100 MB), JSON
// nested at most 128 deep without repeated keys, known dtypes, at most 64 dims, shapes whose
// sizes fit in int64 and agree with their offsets, and data that tiles the data section
// exactly (no overlaps, gaps or trailing bytes), as the reference reader requires. Throws
// rg::Error naming `source` and the problem, quoting at most 64 characters of the file's
// text. Safe on arbitrary bytes (the fuzzers call it).
SafetensorsFile parse_safetensors(const uint8_t* data, size_t size, const std::string& source = "<memory>");
SafetensorsFile read_safetensors(const std::string& path);
// Atomic: readers see the old file or the complete new one, never a torn write. The data
// goes to <path>.tmp first, locked while written: a writer killed mid-write leaves that one
// file, which the next save of `path` reuses; a second concurrent writer of `path` is refused.
void write_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata);

// ---- training checkpoints ----
// Tensors "model.<name>" (parameters and buffers) and "optim.<name>"; metadata "format",
// "step", "epoch", "sampler_epoch", "sampler_position", "optimizer" (its name(), when one
// was saved), "rng.<name>" = "<seed>:<offset>" and the caller's free-form `extra` entries
// (e.g. a model/config description).
struct Checkpoint {
  int64_t step = 0;  // the counters: 0..2^53 (a load refuses others)
  int64_t epoch = 0;
  int64_t sampler_epoch = 0;
  int64_t sampler_position = 0;
  std::string optimizer = {};  // filled by load: the saved optimizer's name, "" if none was saved
  std::map<std::string, Generator*> generators = {};  // saved; restored in place by load
  std::map<std::string, std::string> extra = {};
};
inline constexpr const char* kCheckpointFormat = "ringgrad-checkpoint-1";

void save_checkpoint(const std::string& path, const Module& model, const optim::Optimizer* optimizer,
                     const Checkpoint& info);
// Restores the model (shapes and dtypes must match exactly), the optimizer when given, and
// every generator named in info.generators; fills the counters, `optimizer` and `extra` of
// `info`. Refused, naming the file and the key or tensor: counters outside 0..2^53, a NaN or
// infinity in any tensor, state of another optimizer than `optimizer` (pass nullptr to start
// it afresh), tensors that are neither model nor optimizer state. Nothing is modified when
// the file or its contents do not fit.
void load_checkpoint(const std::string& path, Module& model, optim::Optimizer* optimizer, Checkpoint& info);

}  // namespace rg::nn
