// Internal to the report module: report::Value <-> nlohmann::json, shared by the
// metrics and trace writers. Not installed; nlohmann is a private dependency.
#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "report/value.h"

namespace rg::report::detail {

using Json = nlohmann::ordered_json;

// Non-finite doubles become null so the output is always valid JSON.
Json to_json(const Value& value);
Json to_json(const Fields& fields);
// Throws rg::Error for arrays and objects; `context` starts the message ("read_jsonl: f:3: field 'x'").
Value from_json(const Json& json, const std::string& context);
// Temporary file in the same folder, then rename: readers never see half a file.
void write_atomically(std::string_view op, const std::filesystem::path& path, const std::string& text);

}  // namespace rg::report::detail
