// JSONL metrics and atomic JSON files, built on nlohmann::json (kept out of the headers
// so users of the report module need not have it).
#include "report/metrics.h"

#include "report/json_util.h"
#include "tensor/error.h"

namespace rg::report {
using detail::Json;
using detail::to_json;

MetricsWriter::MetricsWriter(const std::filesystem::path& path, MetricsOptions options)
    : path_(path), out_(path, options.append ? std::ios::app : std::ios::trunc) {
  RG_CHECK(out_, "MetricsWriter: cannot open ", path.string(), " for writing");
}

void MetricsWriter::write(std::string_view kind, const Fields& fields) {
  Fields line{{"kind", std::string(kind)}};
  for (const auto& field : fields) {
    RG_CHECK(field.first != "kind", "MetricsWriter::write: field name 'kind' is reserved");
    line.push_back(field);
  }
  // One flush per line: a killed run then loses at most the line being written.
  out_ << to_json_line(line) << '\n' << std::flush;
  RG_CHECK(out_, "MetricsWriter::write: writing ", path_.string(), " failed");
}

std::string to_json_line(const Fields& fields) { return to_json(fields).dump(); }

std::vector<Record> read_jsonl(const std::filesystem::path& path) {
  std::ifstream in(path);
  RG_CHECK(in, "read_jsonl: cannot open ", path.string());
  std::vector<Record> records;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    Json object;
    try {
      object = Json::parse(line);
    } catch (const Json::parse_error& e) {
      RG_THROW("read_jsonl: ", path.string(), ":", number, ": ", e.what());
    }
    RG_CHECK(object.is_object(), "read_jsonl: ", path.string(), ":", number, ": not a JSON object");
    Record record;
    const std::string where = "read_jsonl: " + path.string() + ":" + std::to_string(number) + ": field '";
    for (const auto& [key, value] : object.items()) record[key] = detail::from_json(value, where + key + "'");
    records.push_back(std::move(record));
  }
  return records;
}

void drop_records_after(const std::filesystem::path& path, double step) {
  std::ifstream in(path);
  if (!in) return;  // nothing written yet
  std::string kept, line;
  while (std::getline(in, line)) {
    const Json object = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!object.is_object()) continue;  // blank, or torn by a kill
    const auto found = object.find("step");
    if (found != object.end() && found->is_number() && found->get<double>() > step) continue;
    kept += line + "\n";
  }
  in.close();
  detail::write_atomically("drop_records_after", path, kept);
}

void write_json_file(const std::filesystem::path& path, std::string_view json_text) {
  Json json;
  try {
    json = Json::parse(json_text);
  } catch (const Json::parse_error& e) {
    RG_THROW("write_json_file: ", path.string(), ": invalid JSON: ", e.what());
  }
  detail::write_atomically("write_json_file", path, json.dump(2) + "\n");
}

void write_json_file(const std::filesystem::path& path, const Fields& fields) {
  detail::write_atomically("write_json_file", path, to_json(fields).dump(2) + "\n");
}

}  // namespace rg::report
