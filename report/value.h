// A scalar value for metrics lines, config files and trace-event arguments: null, bool,
// integer, floating point or string. Any arithmetic type converts implicitly, so
// `{{"step", step}, {"loss", 0.31}, {"mode", "ddp"}}` reads like a Python dict.
#pragma once
#include <concepts>
#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace rg::report {

class Value {
 public:
  Value() = default;  // null
  Value(bool b) : value_(b) {}
  // Integers are stored as int64 (JSON readers handle that range exactly).
  template <std::integral T>
    requires(!std::same_as<T, bool>)
  Value(T i) : value_(static_cast<std::int64_t>(i)) {}
  template <std::floating_point T>
  Value(T d) : value_(static_cast<double>(d)) {}
  Value(std::string s) : value_(std::move(s)) {}
  Value(const char* s) : value_(std::string(s)) {}

  bool is_null() const { return std::holds_alternative<std::monostate>(value_); }
  bool is_bool() const { return std::holds_alternative<bool>(value_); }
  bool is_int() const { return std::holds_alternative<std::int64_t>(value_); }
  bool is_double() const { return std::holds_alternative<double>(value_); }
  bool is_number() const { return is_int() || is_double(); }
  bool is_string() const { return std::holds_alternative<std::string>(value_); }

  // Each accessor throws rg::Error when the value holds another kind. as_number()
  // accepts integers and doubles, and reads null as NaN (the JSONL writer's NaN -> null).
  bool as_bool() const;
  std::int64_t as_int() const;
  double as_number() const;
  const std::string& as_string() const;
  // As a person reads it: "" for null, "true"/"false", numbers as an ostream prints them.
  std::string text() const;

  // Calls f with the held alternative (std::monostate for null).
  template <class F>
  decltype(auto) visit(F&& f) const {
    return std::visit(std::forward<F>(f), value_);
  }

  bool operator==(const Value&) const = default;

 private:
  std::variant<std::monostate, bool, std::int64_t, double, std::string> value_;
};

// Named values in the order given (a JSON object with stable key order).
using Fields = std::vector<std::pair<std::string, Value>>;

}  // namespace rg::report
