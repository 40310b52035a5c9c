// Run records on disk: JSONL metrics (one JSON object per line, flushed as written, so
// a crashed run keeps every finished step), a reader for tests and tools, and atomic
// JSON files for config.json and summaries.
#pragma once
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "report/value.h"

namespace rg::report {

struct MetricsOptions {
  bool append = false;  // keep existing lines (resumed runs) instead of truncating
};

// Each write() emits {"kind": kind, ...fields} on one line. Doubles keep full
// (round-trip) precision; NaN and +-Inf become null so every line stays valid JSON.
class MetricsWriter {
 public:
  explicit MetricsWriter(const std::filesystem::path& path, MetricsOptions options = {});

  void write(std::string_view kind, const Fields& fields);
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::ofstream out_;
};

// One line of a JSONL file. Nested arrays/objects are rejected (writers emit scalars).
using Record = std::map<std::string, Value>;

// Reads every non-blank line; throws rg::Error naming the file and line on bad JSON.
std::vector<Record> read_jsonl(const std::filesystem::path& path);

// For a run resumed from its checkpoint at `step`: rewrites `path` (atomically) without the
// records of later steps, which the interrupted run wrote after that checkpoint and the
// resumed run will write again, and without a line a kill left half-written.
void drop_records_after(const std::filesystem::path& path, double step);

// One JSON object as a single line, exactly as MetricsWriter writes it.
std::string to_json_line(const Fields& fields);

// Writes pretty-printed JSON atomically (temporary file in the same folder, then
// rename), so readers never see half a file. The text overload validates its input.
void write_json_file(const std::filesystem::path& path, std::string_view json_text);
void write_json_file(const std::filesystem::path& path, const Fields& fields);

}  // namespace rg::report
