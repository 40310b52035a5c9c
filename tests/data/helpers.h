// Shared helpers for the data tests: a temporary folder, a scoped $RINGGRAD_DATA, and
// writers of small IDX, CIFAR, gzip, PNG and BMP files built byte by byte (stored,
// uncompressed deflate blocks), so the tests need no zlib or image library of their own
// and can corrupt any byte they like.
#pragma once
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "data/data.h"

namespace test {

using Bytes = std::vector<uint8_t>;

// A fresh folder under the system temp dir, removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() / ("ringgrad-data-test-" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

// RINGGRAD_DATA set to `value` while it lives.
class DataRootsOverride {
 public:
  explicit DataRootsOverride(const std::string& value) {
    if (const char* old = std::getenv("RINGGRAD_DATA")) saved_ = old;
    setenv("RINGGRAD_DATA", value.c_str(), 1);
  }
  ~DataRootsOverride() {
    if (saved_)
      setenv("RINGGRAD_DATA", saved_->c_str(), 1);
    else
      unsetenv("RINGGRAD_DATA");
  }
  DataRootsOverride(const DataRootsOverride&) = delete;
  DataRootsOverride& operator=(const DataRootsOverride&) = delete;

 private:
  std::optional<std::string> saved_;
};

inline void write_file(const std::string& path, const Bytes& bytes) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                              static_cast<std::streamsize>(bytes.size()));
}

inline void put_be32(Bytes& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(v >> shift));
}
inline void put_le32(Bytes& out, uint32_t v) {
  for (int shift = 0; shift < 32; shift += 8) out.push_back(static_cast<uint8_t>(v >> shift));
}
inline void put_le16(Bytes& out, uint32_t v) {
  out.push_back(static_cast<uint8_t>(v));
  out.push_back(static_cast<uint8_t>(v >> 8));
}

// Pixel i of image n is (n * 7 + i) % 256: every byte is predictable.
inline uint8_t idx_pixel(int64_t n, int64_t i) { return static_cast<uint8_t>((n * 7 + i) % 256); }

inline Bytes idx_images(uint32_t n, uint32_t h, uint32_t w) {
  Bytes out;
  put_be32(out, 0x00000803);
  for (uint32_t d : {n, h, w}) put_be32(out, d);
  for (uint32_t k = 0; k < n; ++k)
    for (uint32_t i = 0; i < h * w; ++i) out.push_back(idx_pixel(k, i));
  return out;
}

inline Bytes idx_labels(const std::vector<uint8_t>& labels) {
  Bytes out;
  put_be32(out, 0x00000801);
  put_be32(out, static_cast<uint32_t>(labels.size()));
  out.insert(out.end(), labels.begin(), labels.end());
  return out;
}

// CIFAR-style records: label bytes then 3072 pixels, pixel i of record n = (n + i) % 256.
inline Bytes cifar_records(const std::vector<std::vector<uint8_t>>& labels) {
  Bytes out;
  for (size_t n = 0; n < labels.size(); ++n) {
    out.insert(out.end(), labels[n].begin(), labels[n].end());
    for (int i = 0; i < 3072; ++i) out.push_back(static_cast<uint8_t>((n + i) % 256));
  }
  return out;
}

inline uint32_t crc32(const Bytes& bytes, size_t begin = 0, size_t end = SIZE_MAX) {
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = begin; i < std::min(end, bytes.size()); ++i) {
    crc ^= bytes[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

// Raw deflate data made of stored blocks (RFC 1951 section 3.2.4).
inline Bytes deflate_stored(const Bytes& data) {
  Bytes out;
  size_t pos = 0;
  do {
    const size_t len = std::min<size_t>(65535, data.size() - pos);
    out.push_back(pos + len == data.size() ? 1 : 0);
    put_le16(out, static_cast<uint32_t>(len));
    put_le16(out, static_cast<uint32_t>(~len & 0xFFFF));
    out.insert(out.end(), data.begin() + pos, data.begin() + pos + len);
    pos += len;
  } while (pos < data.size());
  return out;
}

// A gzip member (RFC 1952) holding `data`.
inline Bytes gzip(const Bytes& data) {
  Bytes out = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
  const Bytes body = deflate_stored(data);
  out.insert(out.end(), body.begin(), body.end());
  put_le32(out, crc32(data));
  put_le32(out, static_cast<uint32_t>(data.size()));
  return out;
}

// An 8-bit RGB PNG whose pixel (y, x) is rgb(y, x).
template <class Fn>
Bytes png(uint32_t h, uint32_t w, Fn rgb) {
  Bytes raw;
  for (uint32_t y = 0; y < h; ++y) {
    raw.push_back(0);  // filter: none
    for (uint32_t x = 0; x < w; ++x)
      for (uint8_t v : rgb(y, x)) raw.push_back(v);
  }
  uint32_t a = 1, b = 0;  // Adler-32 of the zlib stream
  for (uint8_t v : raw) {
    a = (a + v) % 65521;
    b = (b + a) % 65521;
  }
  Bytes zlib = {0x78, 0x01};
  const Bytes body = deflate_stored(raw);
  zlib.insert(zlib.end(), body.begin(), body.end());
  put_be32(zlib, b << 16 | a);
  Bytes out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  auto chunk = [&](const char* type, const Bytes& payload) {
    put_be32(out, static_cast<uint32_t>(payload.size()));
    const size_t start = out.size();
    out.insert(out.end(), type, type + 4);
    out.insert(out.end(), payload.begin(), payload.end());
    put_be32(out, crc32(out, start));
  };
  Bytes header;
  put_be32(header, w);
  put_be32(header, h);
  header.insert(header.end(), {8, 2, 0, 0, 0});  // 8-bit, RGB, deflate, no filter, no interlace
  chunk("IHDR", header);
  chunk("IDAT", zlib);
  chunk("IEND", {});
  return out;
}

// A 24-bit BMP, every pixel (r, g, b); the header may claim other dims than it holds.
inline Bytes bmp(int32_t h, int32_t w, uint8_t r, uint8_t g, uint8_t b, int32_t claimed_h = 0) {
  const uint32_t row = (static_cast<uint32_t>(w) * 3 + 3) & ~3u, data = row * static_cast<uint32_t>(h);
  Bytes out = {'B', 'M'};
  put_le32(out, 54 + data);
  put_le32(out, 0);
  put_le32(out, 54);
  put_le32(out, 40);
  put_le32(out, static_cast<uint32_t>(w));
  put_le32(out, static_cast<uint32_t>(claimed_h ? claimed_h : h));
  put_le16(out, 1);
  put_le16(out, 24);
  for (int i = 0; i < 6; ++i) put_le32(out, 0);
  for (int32_t y = 0; y < h; ++y) {
    for (int32_t x = 0; x < w; ++x) out.insert(out.end(), {b, g, r});
    out.resize(out.size() + row - static_cast<uint32_t>(w) * 3, 0);
  }
  return out;
}

// Runs fn, which must throw rg::Error; returns its message.
template <class Fn>
std::string error_of(Fn fn) {
  try {
    fn();
  } catch (const rg::Error& e) {
    return e.what();
  }
  FAIL("expected an rg::Error");
  return {};
}

}  // namespace test
