// The safetensors reader/writer and training checkpoints. The reader treats the file as
// hostile: every length, offset and shape is checked before anything is copied, and the
// only thing interpreted is JSON data (no pickles, nothing that can execute).
#include "nn/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sys/file.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>
#include <type_traits>

namespace rg::nn {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

namespace {

using Json = nlohmann::json;
constexpr uint64_t kMaxHeaderBytes = 100u << 20;  // the bound the safetensors reference reader uses
constexpr int kMaxNesting = 128;                  // serde_json's recursion limit, which that reader inherits
constexpr size_t kMaxRank = 64;                   // dims of one tensor
constexpr size_t kQuoteLimit = 64;                // characters of a file's text an error message repeats
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

// Text from the file as an error message repeats it: quoted, and cut short, so a hostile
// file cannot turn an error into megabytes.
std::string excerpt(std::string_view text) {
  if (text.size() <= kQuoteLimit) return detail::concat("'", text, "'");
  return detail::concat("'", text.substr(0, kQuoteLimit), "...' (", text.size(), " bytes)");
}

// A JSON value as an error message shows it: scalars as they are (strings through
// excerpt()), arrays and objects by their size, never dumped whole.
std::string describe(const Json& value) {
  if (value.is_string()) return excerpt(value.get_ref<const std::string&>());
  if (value.is_array()) return "an array of " + std::to_string(value.size()) + " items";
  if (value.is_object()) return "an object of " + std::to_string(value.size()) + " entries";
  return value.dump();  // a number, a boolean or null: short
}

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin, end;
};

// Every reader error names the source first.
#define RG_FILE_CHECK(cond, ...) RG_CHECK(cond, "safetensors '", source, "': ", __VA_ARGS__)

// Watches the JSON parser's events (nlohmann's parser_callback_t). The parser itself is
// iterative, but nesting is capped all the same: the DOM's users (dump(), comparisons)
// recurse, and a few hundred kB nested 100,000 deep once overflowed the stack. A key that
// appears twice in one object is refused too: JSON parsers keep one of the two silently.
class HeaderGuard {
 public:
  explicit HeaderGuard(const std::string& source) : source_(source) {}

  bool operator()(int depth, Json::parse_event_t event, Json& parsed) {
    const std::string& source = source_;
    switch (event) {
      case Json::parse_event_t::object_start:
      case Json::parse_event_t::array_start:
        RG_FILE_CHECK(depth < kMaxNesting, "the header nests arrays and objects deeper than ", kMaxNesting, " levels");
        keys_.emplace_back();
        break;
      case Json::parse_event_t::object_end:
      case Json::parse_event_t::array_end:
        keys_.pop_back();
        break;
      case Json::parse_event_t::key:
        RG_FILE_CHECK(keys_.back().insert(parsed.get<std::string>()).second, "the key ",
                      excerpt(parsed.get_ref<const std::string&>()), " appears twice in one object");
        break;
      case Json::parse_event_t::value:
        break;
    }
    return true;
  }

 private:
  const std::string& source_;
  std::vector<std::set<std::string>> keys_;  // of each open object (arrays: always empty)
};

DType parse_entry_dtype(const Json& value, const std::string& name, const std::string& source) {
  RG_FILE_CHECK(value.is_string(), "tensor ", excerpt(name), ": dtype must be a string, got ", describe(value));
  const std::string& text = value.get_ref<const std::string&>();
  for (DType dtype : {DType::float32, DType::float64, DType::int64, DType::int32, DType::uint8})
    if (text == safetensors_dtype(dtype)) return dtype;
  RG_THROW("safetensors '", source, "': tensor ", excerpt(name), ": unknown dtype ", excerpt(text),
           " (supported: F32, F64, I64, I32, U8)");
}

// A JSON array of `count` (or at most `max_count`) non-negative integers.
std::vector<uint64_t> parse_uints(const Json& value, size_t count, size_t max_count, const char* field,
                                  const std::string& name, const std::string& source) {
  RG_FILE_CHECK(value.is_array(), "tensor ", excerpt(name), ": ", field, " must be an array, got ", describe(value));
  RG_FILE_CHECK(count == 0 ? value.size() <= max_count : value.size() == count, "tensor ", excerpt(name), ": ", field,
                " has ", value.size(), " items, expected ", count == 0 ? "at most " : "",
                count == 0 ? max_count : count);
  std::vector<uint64_t> out;
  for (const Json& item : value) {
    RG_FILE_CHECK(item.is_number_unsigned(), "tensor ", excerpt(name), ": ", field,
                  " must hold non-negative integers, got ", describe(item));
    out.push_back(item.get<uint64_t>());
  }
  return out;
}

Entry parse_entry(const std::string& name, const Json& value, const std::string& source) {
  RG_FILE_CHECK(!name.empty(), "a tensor has an empty name");
  RG_FILE_CHECK(
      value.is_object() && value.contains("dtype") && value.contains("shape") && value.contains("data_offsets"),
      "tensor ", excerpt(name), " needs dtype, shape and data_offsets, got ", describe(value));
  Entry entry{name, parse_entry_dtype(value["dtype"], name, source), {}, 0, 0};
  // bytes = dtype size * the dims; extent, with zero dims counted as 1, bounds every stride
  // and partial product as Tensor requires (a [0, 2^40, 2^40, 2^40] tensor has none).
  uint64_t bytes = dtype_size(entry.dtype), extent = bytes;
  for (uint64_t dim : parse_uints(value["shape"], 0, kMaxRank, "shape", name, source)) {
    RG_FILE_CHECK(!__builtin_mul_overflow(extent, std::max<uint64_t>(dim, 1), &extent) && extent <= INT64_MAX,
                  "tensor ", excerpt(name), ": shape dim ", entry.shape.size(), " = ", dim,
                  " is too large: the sizes overflow int64");
    bytes *= dim;  // <= extent
    entry.shape.push_back(static_cast<int64_t>(dim));
  }
  std::vector<uint64_t> offsets = parse_uints(value["data_offsets"], 2, 2, "data_offsets", name, source);
  entry.begin = offsets[0];
  entry.end = offsets[1];
  RG_FILE_CHECK(entry.begin <= entry.end, "tensor ", excerpt(name), ": data_offsets [", entry.begin, ", ", entry.end,
                "] are reversed");
  RG_FILE_CHECK(entry.end - entry.begin == bytes, "tensor ", excerpt(name), ": shape ", shape_str(entry.shape), " of ",
                safetensors_dtype(entry.dtype), " needs ", bytes, " bytes but data_offsets [", entry.begin, ", ",
                entry.end, "] span ", entry.end - entry.begin);
  return entry;
}

std::map<std::string, std::string> parse_metadata(const Json& value, const std::string& source) {
  RG_FILE_CHECK(value.is_object(), "__metadata__ must be an object of strings, got ", describe(value));
  std::map<std::string, std::string> out;
  for (const auto& [key, item] : value.items()) {
    RG_FILE_CHECK(item.is_string(), "__metadata__ ", excerpt(key), " must be a string, got ", describe(item));
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
  HeaderGuard guard(source);
  Json header = Json::parse(data + 8, data + 8 + header_bytes, std::ref(guard), false);
  RG_FILE_CHECK(!header.is_discarded(), "the header is not valid JSON");
  RG_FILE_CHECK(header.is_object(), "the header must be a JSON object, got ", header.type_name());
  return {std::move(header), header_bytes};
}

// The tensors' data must tile the data section exactly, in some order, as the reference
// reader requires: no overlaps (one tensor's bytes read as another's), no gaps and no
// trailing bytes (data no tensor accounts for, e.g. a tensor whose entry was dropped).
void check_layout(std::vector<Entry>& entries, uint64_t data_bytes, const std::string& source) {
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t covered = 0;  // the data section up to here belongs to the tensors before entry i
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    RG_FILE_CHECK(e.end <= data_bytes, "tensor ", excerpt(e.name), ": data_offsets [", e.begin, ", ", e.end,
                  "] lie outside the data section (", data_bytes, " bytes): the file is truncated or corrupt");
    RG_FILE_CHECK(e.begin >= covered, "tensors ", excerpt(entries[i - 1].name), " and ", excerpt(e.name),
                  " overlap (data_offsets [", entries[i - 1].begin, ", ", entries[i - 1].end, "] and [", e.begin, ", ",
                  e.end, "])");
    RG_FILE_CHECK(e.begin == covered, "bytes [", covered, ", ", e.begin, ") of the data section belong to no tensor");
    covered = e.end;
  }
  RG_FILE_CHECK(covered == data_bytes, "bytes [", covered, ", ", data_bytes,
                ") of the data section belong to no tensor (trailing data)");
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

// The one temporary file of `path`, `temp` = <path>.tmp, opened, locked (flock) and
// emptied. A writer killed mid-write leaves it behind; its lock died with it, so the next
// save of the same path takes the file over and renames it away: stale temporaries never
// pile up. A second live writer of the same path gets an error rather than mixing its
// bytes into the first one's file.
int open_locked_temp(const std::string& temp, const std::string& path) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    RG_CHECK(fd >= 0, "checkpoint '", path, "': cannot create a temporary file beside it: ", std::strerror(errno));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
      ::close(fd);
      RG_THROW("checkpoint '", path, "': another process is writing it (", temp, " is locked)");
    }  // (a file system without flock: write unlocked)
    // Between our open and our lock, the writer before us may have renamed that file to
    // `path`: write only into the file that is still called <path>.tmp.
    struct stat locked = {}, named = {};
    if (::fstat(fd, &locked) == 0 && ::stat(temp.c_str(), &named) == 0 && locked.st_dev == named.st_dev &&
        locked.st_ino == named.st_ino) {
      if (::ftruncate(fd, 0) == 0) return fd;
      const int error = errno;
      ::close(fd);
      RG_THROW("checkpoint '", path, "': cannot empty ", temp, ": ", std::strerror(error));
    }
    ::close(fd);
  }
  RG_THROW("checkpoint '", path, "': ", temp, " keeps changing under this writer");
}

// <path>.tmp (see open_locked_temp), fsync, rename (atomic: the same directory), fsync the
// directory (so the rename itself survives a crash).
void write_file_atomically(const std::string& path, const std::vector<uint8_t>& bytes) {
  const std::string temp = path + ".tmp";
  int fd = open_locked_temp(temp, path);
  try {
    write_all(fd, bytes, path);
    RG_CHECK(::fsync(fd) == 0, "checkpoint '", path, "': fsync failed: ", std::strerror(errno));
    RG_CHECK(::rename(temp.c_str(), path.c_str()) == 0, "checkpoint '", path, "': rename failed: ",
             std::strerror(errno));
  } catch (...) {
    ::unlink(temp.c_str());  // still ours: we hold its lock
    ::close(fd);
    throw;
  }
  RG_CHECK(::close(fd) == 0, "checkpoint '", path, "': close failed: ", std::strerror(errno));
  size_t slash = path.rfind('/');
  std::string directory = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  int dir_fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

// ---- checkpoint metadata ----

// Counters above 2^53 are past what a double holds exactly and far beyond any run: a
// checkpoint holding one (or a negative one) is corrupt.
constexpr int64_t kMaxCounter = int64_t{1} << 53;

int64_t metadata_counter(const std::map<std::string, std::string>& metadata, const std::string& key,
                         const std::string& path) {
  auto found = metadata.find(key);
  RG_CHECK(found != metadata.end(), "checkpoint '", path, "': metadata '", key, "' is missing");
  const std::string& text = found->second;
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  RG_CHECK(error == std::errc() && end == text.data() + text.size(), "checkpoint '", path, "': metadata '", key,
           "' = ", excerpt(text), " is not an integer");
  RG_CHECK(value >= 0 && value <= kMaxCounter, "checkpoint '", path, "': metadata '", key, "' = ", value,
           " is out of range (0..2^53)");
  return value;
}

std::pair<uint64_t, uint64_t> parse_generator_state(const std::string& text, const std::string& key,
                                                    const std::string& path) {
  size_t colon = text.find(':');
  bool ok = colon != std::string::npos && colon > 0 && colon + 1 < text.size() &&
            text.find_first_not_of("0123456789:") == std::string::npos && text.find(':', colon + 1) == std::string::npos &&
            colon <= 20 && text.size() - colon - 1 <= 20;
  RG_CHECK(ok, "checkpoint '", path, "': metadata ", excerpt(key), " = ", excerpt(text), " is not '<seed>:<offset>'");
  try {
    return {std::stoull(text.substr(0, colon)), std::stoull(text.substr(colon + 1))};
  } catch (const std::exception&) {
    RG_THROW("checkpoint '", path, "': metadata ", excerpt(key), " = ", excerpt(text), " is out of range");
  }
}

// The flat index of the first NaN or infinity of a floating tensor, or -1.
int64_t first_non_finite(const Tensor& tensor) {
  if (!is_floating(tensor.dtype())) return -1;
  const Tensor t = tensor.contiguous();
  return dispatch(t.dtype(), [&](auto tag) -> int64_t {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      const T* values = t.data<T>();
      for (int64_t i = 0; i < t.numel(); ++i)
        if (!std::isfinite(values[i])) return i;
    }
    return -1;
  });
}

// Weights and optimizer state must be finite: a NaN or an infinity loaded from a file
// would train on as NaN.
void check_finite(const std::map<std::string, Tensor>& tensors, const std::string& path) {
  for (const auto& [name, tensor] : tensors) {
    const int64_t bad = first_non_finite(tensor);
    if (bad < 0) continue;
    const double value = tensor.contiguous().view({-1}).select(0, bad).item();
    RG_THROW("checkpoint '", path, "': tensor ", excerpt(name), " holds ", value, " at index ", bad, " (of ",
             tensor.numel(), " elements, shape ", shape_str(tensor.shape()), ")");
  }
}

// Metadata keys the checkpoint itself writes; the caller's `extra` entries are the rest.
bool is_reserved(const std::string& key) {
  for (const char* reserved : {"format", "step", "epoch", "sampler_epoch", "sampler_position", "optimizer"})
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
  // Sized from the file system: a FIFO or a device (/dev/zero) would otherwise be read forever.
  std::error_code ec;
  RG_CHECK(std::filesystem::is_regular_file(path, ec), "safetensors '", path, "': not a regular file");
  const uintmax_t size = std::filesystem::file_size(path, ec);
  RG_CHECK(!ec, "safetensors '", path, "': cannot read its size: ", ec.message());
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  RG_CHECK(static_cast<size_t>(in.gcount()) == bytes.size(), "safetensors '", path, "': read failed");
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
  if (optimizer) set("optimizer", optimizer->name());
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
           format == file.metadata.end() ? std::string("missing") : excerpt(format->second), ", expected '",
           kCheckpointFormat, "')");
  Checkpoint loaded;
  loaded.step = metadata_counter(file.metadata, "step", path);
  loaded.epoch = metadata_counter(file.metadata, "epoch", path);
  loaded.sampler_epoch = metadata_counter(file.metadata, "sampler_epoch", path);
  loaded.sampler_position = metadata_counter(file.metadata, "sampler_position", path);
  if (auto found = file.metadata.find("optimizer"); found != file.metadata.end()) loaded.optimizer = found->second;
  RG_CHECK(!optimizer || loaded.optimizer.empty() || loaded.optimizer == optimizer->name(), "checkpoint '", path,
           "': its optimizer state is ", excerpt(loaded.optimizer), "'s, this optimizer is ", optimizer->name(),
           " (to start this optimizer afresh, load the checkpoint without one)");
  std::map<std::string, std::pair<uint64_t, uint64_t>> generator_states;
  for (const auto& [name, gen] : info.generators) {
    auto found = file.metadata.find("rng." + name);
    RG_CHECK(found != file.metadata.end(), "checkpoint '", path, "': no state for generator '", name, "'");
    generator_states[name] = parse_generator_state(found->second, found->first, path);
  }
  for (const auto& [name, tensor] : file.tensors)
    RG_CHECK(name.starts_with("model.") || name.starts_with("optim."), "checkpoint '", path, "': tensor ",
             excerpt(name), " is neither model state ('model.') nor optimizer state ('optim.')");
  check_finite(file.tensors, path);
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
