// Whole-file reads, capped gzip inflation and the data-root search (see io.h).
#include "data/io.h"

#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "tensor/error.h"

namespace rg::data {

namespace fs = std::filesystem;

Bytes read_file(const std::string& path, size_t max_bytes) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) RG_THROW(path, ": file not found");
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) RG_THROW(path, ": cannot read its size: ", ec.message());
  if (size > max_bytes) RG_THROW(path, ": file too large: ", size, " bytes, the limit is ", max_bytes);
  std::ifstream in(path, std::ios::binary);
  if (!in) RG_THROW(path, ": cannot open for reading");
  Bytes bytes(static_cast<size_t>(size));
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (static_cast<size_t>(in.gcount()) != bytes.size()) RG_THROW(path, ": read failed");
  return bytes;
}

namespace {

bool is_gzip(const Bytes& bytes) { return bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b; }

// deflate never inflates one byte to more than 1032.
constexpr size_t kMaxDeflateRatio = 1032;

// The first output buffer: the size stored in the trailer (mod 2^32) when deflate could
// reach it, else 4x the input. A good guess matters: the buffer is zero-filled, and each
// doubling fills and copies again (47 MB of Fashion-MNIST images started at 105 MB).
size_t initial_output_size(const Bytes& in, size_t max_bytes) {
  size_t stored = in.size() >= 4 ? size_t{in[in.size() - 4]} | size_t{in[in.size() - 3]} << 8 |
                                       size_t{in[in.size() - 2]} << 16 | size_t{in[in.size() - 1]} << 24
                                 : 0;
  size_t guess = stored > 0 && stored <= in.size() * kMaxDeflateRatio ? stored : in.size() * 4;
  return std::min(max_bytes, std::max<size_t>(guess, 4096));
}

// Inflates every gzip member of `in`: a file may hold several end to end (RFC 1952 2.2,
// `cat a.gz b.gz`), and gzip -d reads them all. The output still grows geometrically when
// the trailer's size was wrong: a corrupt file can set it to anything, so it is only a
// first guess.
Bytes gunzip(const Bytes& in, const std::string& path, size_t max_bytes) {
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) RG_THROW(path, ": zlib inflateInit2 failed");
  Bytes out(initial_output_size(in, max_bytes));
  size_t consumed = 0, produced = 0;
  int rc = Z_OK;
  for (;;) {
    if (rc == Z_STREAM_END) {
      // The member ended: another may follow; anything else is trailing garbage.
      const size_t rest = in.size() - consumed;
      if (rest < 2 || in[consumed] != 0x1f || in[consumed + 1] != 0x8b) break;
      if (inflateReset(&zs) != Z_OK) {
        inflateEnd(&zs);
        RG_THROW(path, ": zlib inflateReset failed");
      }
    }
    if (produced == out.size()) {
      if (out.size() >= max_bytes) {
        inflateEnd(&zs);
        RG_THROW(path, ": gzip data inflates to more than ", max_bytes, " bytes");
      }
      out.resize(std::min(max_bytes, out.size() * 2));
    }
    // zlib counts in uInt, so feed at most 1 GiB per call.
    const size_t in_chunk = std::min<size_t>(in.size() - consumed, size_t{1} << 30);
    const size_t out_chunk = std::min<size_t>(out.size() - produced, size_t{1} << 30);
    zs.next_in = const_cast<Bytef*>(in.data() + consumed);
    zs.avail_in = static_cast<uInt>(in_chunk);
    zs.next_out = out.data() + produced;
    zs.avail_out = static_cast<uInt>(out_chunk);
    rc = inflate(&zs, Z_NO_FLUSH);
    consumed += in_chunk - zs.avail_in;
    produced += out_chunk - zs.avail_out;
    if (rc == Z_BUF_ERROR && consumed == in.size()) rc = Z_DATA_ERROR;  // input ended mid-stream
    if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
      const std::string why = rc == Z_DATA_ERROR && consumed == in.size() ? "truncated" : (zs.msg ? zs.msg : "error");
      inflateEnd(&zs);
      RG_THROW(path, ": corrupt gzip data (", why, ")");
    }
  }
  inflateEnd(&zs);
  if (consumed != in.size()) RG_THROW(path, ": ", in.size() - consumed, " trailing bytes after the gzip stream");
  out.resize(produced);
  return out;
}

}  // namespace

Bytes maybe_gunzip(Bytes bytes, const std::string& path, size_t max_bytes) {
  return is_gzip(bytes) ? gunzip(bytes, path, max_bytes) : std::move(bytes);
}

Bytes read_maybe_gzipped(const std::string& path) { return maybe_gunzip(read_file(path), path); }

uint32_t read_be32(std::span<const uint8_t> bytes, size_t pos) {
  RG_CHECK(pos + 4 <= bytes.size(), "read_be32: position ", pos, " past the end (", bytes.size(), " bytes)");
  return uint32_t{bytes[pos]} << 24 | uint32_t{bytes[pos + 1]} << 16 | uint32_t{bytes[pos + 2]} << 8 |
         uint32_t{bytes[pos + 3]};
}

std::vector<std::string> data_roots() {
  std::vector<std::string> roots;
  if (const char* env = std::getenv("RINGGRAD_DATA"); env && *env) {
    std::string list = env;
    for (size_t start = 0; start <= list.size();) {
      size_t end = list.find(':', start);
      if (end == std::string::npos) end = list.size();
      if (end > start) roots.push_back(list.substr(start, end - start));
      start = end + 1;
    }
  }
  if (const char* home = std::getenv("HOME"); home && *home) roots.push_back(std::string(home) + "/.cache/ringgrad/data");
  roots.push_back("/usr/share/datasets");
  return roots;
}

std::string resolve_file(const std::string& dir, const std::string& file, bool gz_ok) {
  std::error_code ec;
  const std::string raw = dir + "/" + file;
  if (fs::is_regular_file(raw, ec)) return raw;
  if (gz_ok && fs::is_regular_file(raw + ".gz", ec)) return raw + ".gz";
  return raw;
}

std::string find_dataset_dir(const std::string& name, const std::vector<std::string>& files, bool gz_ok,
                             const std::string& root_override, const std::string& how_to_get) {
  const std::vector<std::string> roots = root_override.empty() ? data_roots() : std::vector{root_override};
  std::string tried;
  for (const std::string& root : roots) {
    const std::string dir = root + "/" + name;
    std::error_code ec;
    if (!fs::exists(dir, ec)) {  // this root does not hold the data set: the next may
      tried += "\n  " + dir + "/" + files.front() + (gz_ok ? "[.gz]" : "") + " (no folder " + dir + ")";
      continue;
    }
    // A root that holds the data set must hold all of it: falling back to the next root
    // would train on other data than the folder the user prepared, without a word.
    std::string missing;
    for (const std::string& file : files) {
      const std::string path = resolve_file(dir, file, gz_ok);
      if (!fs::is_regular_file(path, ec)) missing += "\n  " + path + (gz_ok ? "[.gz]" : "");
    }
    if (missing.empty()) return dir;
    RG_THROW(name, ": the data set in ", dir, " is incomplete: these are missing or not regular files:", missing,
             "\n  (the other data roots are not searched: complete or remove ", dir, ")\n  ", how_to_get);
  }
  RG_THROW(name, ": dataset not found; expected file missing in every data root:", tried,
           "\n  (roots: $RINGGRAD_DATA, ~/.cache/ringgrad/data, /usr/share/datasets)\n  ", how_to_get);
}

}  // namespace rg::data
