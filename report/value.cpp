// Checked accessors of report::Value.
#include "report/value.h"

#include <limits>
#include <sstream>

#include "tensor/error.h"

namespace rg::report {

bool Value::as_bool() const {
  RG_CHECK(is_bool(), "Value::as_bool: value is not a bool");
  return std::get<bool>(value_);
}

std::int64_t Value::as_int() const {
  RG_CHECK(is_int(), "Value::as_int: value is not an integer");
  return std::get<std::int64_t>(value_);
}

double Value::as_number() const {
  if (is_null()) return std::numeric_limits<double>::quiet_NaN();
  if (is_int()) return static_cast<double>(std::get<std::int64_t>(value_));
  RG_CHECK(is_double(), "Value::as_number: value is not a number");
  return std::get<double>(value_);
}

const std::string& Value::as_string() const {
  RG_CHECK(is_string(), "Value::as_string: value is not a string");
  return std::get<std::string>(value_);
}

std::string Value::text() const {
  return visit([](const auto& x) -> std::string {
    using T = std::decay_t<decltype(x)>;
    if constexpr (std::is_same_v<T, std::monostate>) return "";
    else if constexpr (std::is_same_v<T, std::string>) return x;
    else if constexpr (std::is_same_v<T, bool>) return x ? "true" : "false";
    else {
      std::ostringstream out;
      out << x;
      return out.str();
    }
  });
}

}  // namespace rg::report
