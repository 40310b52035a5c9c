// Conversions between report::Value and JSON, and the atomic file write.
#include "report/json_util.h"

#include <unistd.h>

#include <cmath>
#include <fstream>

#include "tensor/error.h"

namespace rg::report::detail {

Json to_json(const Value& value) {
  return value.visit([](const auto& v) -> Json {
    using T = std::decay_t<decltype(v)>;
    if constexpr (std::is_same_v<T, std::monostate>) {
      return nullptr;
    } else if constexpr (std::is_same_v<T, double>) {
      // nlohmann would also print null, but saying so here keeps the contract explicit.
      return std::isfinite(v) ? Json(v) : Json(nullptr);
    } else {
      return v;
    }
  });
}

Json to_json(const Fields& fields) {
  Json object = Json::object();
  for (const auto& [key, value] : fields) object[key] = to_json(value);
  return object;
}

Value from_json(const Json& json, const std::string& context) {
  switch (json.type()) {
    case Json::value_t::null: return {};
    case Json::value_t::boolean: return json.get<bool>();
    case Json::value_t::number_integer: return json.get<std::int64_t>();
    case Json::value_t::number_unsigned: return json.get<std::uint64_t>();
    case Json::value_t::number_float: return json.get<double>();
    case Json::value_t::string: return json.get<std::string>();
    default: RG_THROW(context, " is not a scalar: ", json.dump());
  }
}

void write_atomically(std::string_view op, const std::filesystem::path& path, const std::string& text) {
  // The pid in the name keeps two ranks writing the same file from sharing a temporary.
  auto temp = path;
  temp += ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    RG_CHECK(out, op, ": cannot open ", temp.string(), " for writing");
    out << text;
    out.close();
    RG_CHECK(out, op, ": writing ", temp.string(), " failed");
  }
  std::error_code error;
  std::filesystem::rename(temp, path, error);
  if (error) {
    std::filesystem::remove(temp, error);
    RG_THROW(op, ": cannot rename into ", path.string());
  }
}

}  // namespace rg::report::detail
