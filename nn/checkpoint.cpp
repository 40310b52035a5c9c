// The safetensors reader/writer and training checkpoints. The reader treats the file as
// hostile: every length, offset and shape is checked before anything is copied, and the
// only thing interpreted is JSON data (no pickles, nothing that can execute).
#include "nn/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

namespace rg::nn {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

namespace {

using Json = nlohmann::json;
constexpr uint64_t kMaxHeaderBytes = 100u << 20;  // the bound the safetensors reference reader uses
constexpr size_t kAlignment = 8;                  // the header is padded so the data starts aligned

const char* safetensors_dtype(DType dtype) {
  switch (dtype) {
    case DType::float32: return "F32";
    case DType::float64: return "F64";
    case DType::int64: return "I64";
    case DType::int32: return "I32";
    case DType::uint8: return "U8";
  }
  return "?";
}

// ---- reading ----

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin, end;
};

// Every reader error names the source first.
#define RG_FILE_CHECK(cond, ...) RG_CHECK(cond, "safetensors '", source, "': ", __VA_ARGS__)

DType parse_entry_dtype(const Json& value, const std::string& name, const std::string& source) {
  RG_FILE_CHECK(value.is_string(), "tensor '", name, "': dtype must be a string");
  const std::string& text = value.get_ref<const std::string&>();
  for (DType dtype : {DType::float32, DType::float64, DType::int64, DType::int32, DType::uint8})
    if (text == safetensors_dtype(dtype)) return dtype;
  RG_THROW("safetensors '", source, "': tensor '", name, "': unknown dtype '", text,
           "' (supported: F32, F64, I64, I32, U8)");
}

// A JSON array of `count` (or any, when count < 0) non-negative integers.
std::vector<uint64_t> parse_uints(const Json& value, int64_t count, const char* field, const std::string& name,
                                  const std::string& source) {
  RG_FILE_CHECK(value.is_array() && (count < 0 || value.size() == static_cast<size_t>(count)), "tensor '", name,
                "': ", field, " must be an array", count < 0 ? "" : " of 2", " of non-negative integers");
  std::vector<uint64_t> out;
  for (const Json& item : value) {
    RG_FILE_CHECK(item.is_number_unsigned(), "tensor '", name, "': ", field, " must hold non-negative integers, got ",
                  item.dump());
    out.push_back(item.get<uint64_t>());
  }
  return out;
}

Entry parse_entry(const std::string& name, const Json& value, const std::string& source) {
  RG_FILE_CHECK(!name.empty(), "a tensor has an empty name");
  RG_FILE_CHECK(value.is_object() && value.contains("dtype") && value.contains("shape") &&
                    value.contains("data_offsets"),
                "tensor '", name, "' needs dtype, shape and data_offsets");
  Entry entry{name, parse_entry_dtype(value["dtype"], name, source), {}, 0, 0};
  uint64_t bytes = dtype_size(entry.dtype);
  for (uint64_t dim : parse_uints(value["shape"], -1, "shape", name, source)) {
    RG_FILE_CHECK(dim <= (uint64_t{1} << 40) && !__builtin_mul_overflow(bytes, dim, &bytes), "tensor '", name,
                  "': shape ", value["shape"].dump(), " is too large");
    entry.shape.push_back(static_cast<int64_t>(dim));
  }
  std::vector<uint64_t> offsets = parse_uints(value["data_offsets"], 2, "data_offsets", name, source);
  entry.begin = offsets[0];
  entry.end = offsets[1];
  RG_FILE_CHECK(entry.begin <= entry.end, "tensor '", name, "': data_offsets [", entry.begin, ", ", entry.end,
                "] are reversed");
  RG_FILE_CHECK(entry.end - entry.begin == bytes, "tensor '", name, "': shape ", shape_str(entry.shape), " of ",
                safetensors_dtype(entry.dtype), " needs ", bytes, " bytes but data_offsets [", entry.begin, ", ",
                entry.end, "] span ", entry.end - entry.begin);
  return entry;
}

std::map<std::string, std::string> parse_metadata(const Json& value, const std::string& source) {
  RG_FILE_CHECK(value.is_object(), "__metadata__ must be an object of strings");
  std::map<std::string, std::string> out;
  for (const auto& [key, item] : value.items()) {
    RG_FILE_CHECK(item.is_string(), "__metadata__ '", key, "' must be a string, got ", item.dump());
    out[key] = item.get<std::string>();
  }
  return out;
}

// Returns the header and its length in bytes.
std::pair<Json, uint64_t> parse_header(const uint8_t* data, size_t size, const std::string& source) {
  RG_FILE_CHECK(size >= 8, "truncated: ", size, " bytes, too short for the 8-byte header length");
  uint64_t header_bytes = 0;
  std::memcpy(&header_bytes, data, 8);
  RG_FILE_CHECK(header_bytes <= kMaxHeaderBytes, "header length ", header_bytes, " exceeds the limit of ",
                kMaxHeaderBytes, " bytes");
  RG_FILE_CHECK(header_bytes <= size - 8, "header length ", header_bytes, " exceeds the file (", size,
                " bytes): the file is truncated or corrupt");
  Json header = Json::parse(data + 8, data + 8 + header_bytes, nullptr, false);
  RG_FILE_CHECK(!header.is_discarded(), "the header is not valid JSON");
  RG_FILE_CHECK(header.is_object(), "the header must be a JSON object, got ", header.type_name());
  return {std::move(header), header_bytes};
}

void check_layout(std::vector<Entry>& entries, uint64_t data_bytes, const std::string& source) {
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    RG_FILE_CHECK(e.end <= data_bytes, "tensor '", e.name, "': data_offsets [", e.begin, ", ", e.end,
                  "] lie outside the data section (", data_bytes, " bytes): the file is truncated or corrupt");
    RG_FILE_CHECK(i == 0 || entries[i - 1].end <= e.begin, "tensors '", entries[i - 1].name, "' and '", e.name,
                  "' overlap (data_offsets [", entries[i - 1].begin, ", ", entries[i - 1].end, "] and [", e.begin, ", ",
                  e.end, "])");
  }
}

// ---- writing ----

void write_all(int fd, const std::vector<uint8_t>& bytes, const std::string& path) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    RG_CHECK(n > 0, "checkpoint '", path, "': write failed: ", std::strerror(errno));
    done += static_cast<size_t>(n);
  }
}

// Temp file in the same directory (so rename is atomic), fsync, rename, fsync the directory
// (so the rename itself survives a crash).
void write_file_atomically(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::string temp = path + ".tmp.XXXXXX";
  int fd = ::mkstemp(temp.data());
  RG_CHECK(fd >= 0, "checkpoint '", path, "': cannot create a temporary file beside it: ", std::strerror(errno));
  try {
    write_all(fd, bytes, path);
    RG_CHECK(::fchmod(fd, 0644) == 0 && ::fsync(fd) == 0, "checkpoint '", path, "': fsync failed: ",
             std::strerror(errno));
    RG_CHECK(::close(fd) == 0, "checkpoint '", path, "': close failed: ", std::strerror(errno));
    fd = -1;
    RG_CHECK(::rename(temp.c_str(), path.c_str()) == 0, "checkpoint '", path, "': rename failed: ",
             std::strerror(errno));
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(temp.c_str());
    throw;
  }
  size_t slash = path.rfind('/');
  std::string directory = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  int dir_fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

// ---- checkpoint metadata ----

int64_t metadata_int(const std::map<std::string, std::string>& metadata, const std::string& key,
                     const std::string& path) {
  auto found = metadata.find(key);
  RG_CHECK(found != metadata.end(), "checkpoint '", path, "': metadata '", key, "' is missing");
  size_t used = 0;
  int64_t value = 0;
  try {
    value = std::stoll(found->second, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  RG_CHECK(used > 0 && used == found->second.size(), "checkpoint '", path, "': metadata '", key, "' = '",
           found->second, "' is not an integer");
  return value;
}

std::pair<uint64_t, uint64_t> parse_generator_state(const std::string& text, const std::string& key,
                                                    const std::string& path) {
  size_t colon = text.find(':');
  bool ok = colon != std::string::npos && colon > 0 && colon + 1 < text.size() &&
            text.find_first_not_of("0123456789:") == std::string::npos && text.find(':', colon + 1) == std::string::npos &&
            colon <= 20 && text.size() - colon - 1 <= 20;
  RG_CHECK(ok, "checkpoint '", path, "': metadata '", key, "' = '", text, "' is not '<seed>:<offset>'");
  try {
    return {std::stoull(text.substr(0, colon)), std::stoull(text.substr(colon + 1))};
  } catch (const std::exception&) {
    RG_THROW("checkpoint '", path, "': metadata '", key, "' = '", text, "' is out of range");
  }
}

// Metadata keys the checkpoint itself writes; the caller's `extra` entries are the rest.
bool is_reserved(const std::string& key) {
  for (const char* reserved : {"format", "step", "epoch", "sampler_epoch", "sampler_position"})
    if (key == reserved) return true;
  return key.rfind("rng.", 0) == 0;
}

// The entries of `tensors` whose names start with `prefix`, with the prefix removed.
std::map<std::string, Tensor> with_prefix(const std::map<std::string, Tensor>& tensors, const std::string& prefix) {
  std::map<std::string, Tensor> out;
  for (const auto& [name, tensor] : tensors)
    if (name.rfind(prefix, 0) == 0) out[name.substr(prefix.size())] = tensor;
  return out;
}

}  // namespace

std::vector<uint8_t> serialize_safetensors(const std::map<std::string, Tensor>& tensors,
                                           const std::map<std::string, std::string>& metadata) {
  Json header = Json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    RG_CHECK(!name.empty() && name != "__metadata__", "safetensors: invalid tensor name '", name, "'");
    header[name] = {{"dtype", safetensors_dtype(tensor.dtype())},
                    {"shape", tensor.shape()},
                    {"data_offsets", {offset, offset + tensor.nbytes()}}};
    offset += tensor.nbytes();
  }
  std::string text = header.dump();
  text.append((kAlignment - (8 + text.size()) % kAlignment) % kAlignment, ' ');
  std::vector<uint8_t> bytes(8 + text.size() + offset);
  uint64_t header_bytes = text.size();
  std::memcpy(bytes.data(), &header_bytes, 8);
  std::memcpy(bytes.data() + 8, text.data(), text.size());
  uint8_t* out = bytes.data() + 8 + text.size();
  for (const auto& [name, tensor] : tensors) {
    Tensor host = tensor.to(Device::cpu()).contiguous();
    std::memcpy(out, host.raw_data(), host.nbytes());
    out += host.nbytes();
  }
  return bytes;
}

SafetensorsFile parse_safetensors(const uint8_t* data, size_t size, const std::string& source) {
  auto [header, header_bytes] = parse_header(data, size, source);
  const uint8_t* payload = data + 8 + header_bytes;
  SafetensorsFile file;
  std::vector<Entry> entries;
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") {
      file.metadata = parse_metadata(value, source);
    } else {
      entries.push_back(parse_entry(name, value, source));
    }
  }
  check_layout(entries, size - 8 - header_bytes, source);
  for (const Entry& e : entries) {
    Tensor t = Tensor::empty(e.shape, e.dtype);
    if (e.end > e.begin) std::memcpy(t.raw_data(), payload + e.begin, e.end - e.begin);
    file.tensors[e.name] = t;
  }
  return file;
}

SafetensorsFile read_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  RG_CHECK(in, "safetensors '", path, "': cannot open: ", std::strerror(errno));
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  RG_CHECK(!in.bad(), "safetensors '", path, "': read failed");
  return parse_safetensors(bytes.data(), bytes.size(), path);
}

void write_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  write_file_atomically(path, serialize_safetensors(tensors, metadata));
}

void save_checkpoint(const std::string& path, const Module& model, const optim::Optimizer* optimizer,
                     const Checkpoint& info) {
  std::map<std::string, std::string> metadata = info.extra;
  for (const auto& [key, value] : info.extra)
    RG_CHECK(!is_reserved(key), "save_checkpoint: extra metadata '", key, "' clashes with a reserved key");
  auto set = [&](const std::string& key, const std::string& value) { metadata[key] = value; };
  set("format", kCheckpointFormat);
  set("step", std::to_string(info.step));
  set("epoch", std::to_string(info.epoch));
  set("sampler_epoch", std::to_string(info.sampler_epoch));
  set("sampler_position", std::to_string(info.sampler_position));
  for (const auto& [name, gen] : info.generators) {
    RG_CHECK(gen != nullptr, "save_checkpoint: generator '", name, "' is null");
    set("rng." + name, std::to_string(gen->seed()) + ":" + std::to_string(gen->offset()));
  }
  std::map<std::string, Tensor> tensors;
  for (const auto& [name, tensor] : model.state_dict()) tensors["model." + name] = tensor;
  if (optimizer)
    for (const auto& [name, tensor] : optimizer->state_dict()) tensors["optim." + name] = tensor;
  write_safetensors(path, tensors, metadata);
}

void load_checkpoint(const std::string& path, Module& model, optim::Optimizer* optimizer, Checkpoint& info) {
  SafetensorsFile file = read_safetensors(path);
  auto format = file.metadata.find("format");
  RG_CHECK(format != file.metadata.end() && format->second == kCheckpointFormat, "checkpoint '", path,
           "': not a ringgrad checkpoint (metadata 'format' is ",
           format == file.metadata.end() ? std::string("missing") : "'" + format->second + "'", ", expected '",
           kCheckpointFormat, "')");
  Checkpoint loaded;
  loaded.step = metadata_int(file.metadata, "step", path);
  loaded.epoch = metadata_int(file.metadata, "epoch", path);
  loaded.sampler_epoch = metadata_int(file.metadata, "sampler_epoch", path);
  loaded.sampler_position = metadata_int(file.metadata, "sampler_position", path);
  std::map<std::string, std::pair<uint64_t, uint64_t>> generator_states;
  for (const auto& [name, gen] : info.generators) {
    auto found = file.metadata.find("rng." + name);
    RG_CHECK(found != file.metadata.end(), "checkpoint '", path, "': no state for generator '", name, "'");
    generator_states[name] = parse_generator_state(found->second, found->first, path);
  }
  StateDict model_state = with_prefix(file.tensors, "model.");
  optim::OptimizerState optimizer_state = with_prefix(file.tensors, "optim.");
  try {
    model.check_state_dict(model_state);
    if (optimizer) optimizer->load_state_dict(optimizer_state);
  } catch (const Error& e) {
    throw Error("checkpoint '" + path + "': " + e.what());  // keeps the original location
  }
  model.load_state_dict(model_state);
  for (const auto& [name, gen] : info.generators) gen->set_state(generator_states[name].first, generator_states[name].second);
  for (const auto& [key, value] : file.metadata)
    if (!is_reserved(key)) loaded.extra[key] = value;
  loaded.generators = std::move(info.generators);
  info = std::move(loaded);
}

}  // namespace rg::nn
