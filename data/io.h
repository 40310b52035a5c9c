// File access for the dataset readers: whole-file reads with a size cap, gzip inflation
// through zlib (also capped, so a 1 KB "zip bomb" cannot eat the machine), big-endian
// fields, and the search for a dataset's folder among the data roots.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace rg::data {

using Bytes = std::vector<uint8_t>;

inline constexpr size_t kMaxFileBytes = size_t{2} << 30;  // 2 GiB: far above any dataset file we read

// The whole file; throws naming `path` if it is missing, unreadable or above `max_bytes`.
Bytes read_file(const std::string& path, size_t max_bytes = kMaxFileBytes);

// `bytes` inflated when they start with the gzip magic (1f 8b), else unchanged; every member
// of a multi-member file (`cat a.gz b.gz`), in order. Throws, naming `path`, on a corrupt or
// truncated stream, bytes after the last member, or output above `max_bytes`.
Bytes maybe_gunzip(Bytes bytes, const std::string& path, size_t max_bytes = kMaxFileBytes);

// read_file + maybe_gunzip.
Bytes read_maybe_gzipped(const std::string& path);

uint32_t read_be32(std::span<const uint8_t> bytes, size_t pos);

// Where datasets live, searched in this order: $RINGGRAD_DATA (':'-separated),
// ~/.cache/ringgrad/data, /usr/share/datasets. Each dataset sits in <root>/<name>/.
std::vector<std::string> data_roots();

// The folder <root>/<name> of the first root (or only `root_override` when not empty) where
// it exists; it must hold every file of `files` (present raw or with ".gz" appended when
// `gz_ok`). A partial or broken folder is an error naming what is missing, not a reason to
// fall back to the next root. Throws listing the paths tried and `how_to_get` when no root
// holds the folder.
std::string find_dataset_dir(const std::string& name, const std::vector<std::string>& files, bool gz_ok,
                             const std::string& root_override, const std::string& how_to_get);

// `dir/file`, or `dir/file.gz` when only that exists and `gz_ok`.
std::string resolve_file(const std::string& dir, const std::string& file, bool gz_ok);

}  // namespace rg::data
