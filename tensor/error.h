// Errors: every failure in ringgrad throws rg::Error. The message names the op and the
// offending shapes/values first and ends with the source location, e.g.
//   "matmul: inner dimensions differ: [2, 3] @ [4, 5] (tensor/ops.cpp:212)".
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace rg {

class Error : public std::runtime_error {
 public:
  // what() is the message, then " (<location>)" when there is one.
  explicit Error(const std::string& message, const std::string& location = {})
      : std::runtime_error(location.empty() ? message : message + " (" + location + ")"), message_(message) {}
  // The message without the source location: for text a user reads ("error: --lr: ...").
  const std::string& message() const { return message_; }

 private:
  std::string message_;
};

// Thrown by the bodies that scripts/make-student-release puts in place of the lab solutions
// (DESIGN.md section 7). `piece` is the region name, e.g. "lab3.ring_reduce_scatter"; the grader
// reports the message as it is: "lab3.ring_reduce_scatter: not implemented".
class NotImplemented : public Error {
 public:
  explicit NotImplemented(const std::string& piece) : Error(piece + ": not implemented") {}
};

namespace detail {
[[noreturn]] void throw_error(const char* file, int line, const std::string& message);

template <class... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}
}  // namespace detail
}  // namespace rg

// RG_THROW("op: what went wrong ", value, ...) streams its arguments into one message.
#define RG_THROW(...) ::rg::detail::throw_error(__FILE__, __LINE__, ::rg::detail::concat(__VA_ARGS__))
#define RG_CHECK(cond, ...)  \
  do {                       \
    if (!(cond)) RG_THROW(__VA_ARGS__); \
  } while (0)
