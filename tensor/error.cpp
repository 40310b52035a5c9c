// Builds rg::Error messages with a short source location appended.
#include "tensor/error.h"

#include <cstring>

namespace rg::detail {

// __FILE__ is the path the compiler was given: absolute, or relative to the build folder
// (e.g. "../tensor/ops.cpp" when ccache's base_dir rewrites it). Keep it from the layer
// folder on, so messages read "tensor/ops.cpp:212" wherever the tree was built.
static const char* short_path(const char* file) {
  for (const char* layer : {"/tensor/", "/autograd/", "/nn/", "/data/", "/models/", "/parallel/", "/report/", "/tools/"}) {
    if (const char* hit = std::strstr(file, layer)) return hit + 1;
  }
  return file;
}

void throw_error(const char* file, int line, const std::string& message) {
  throw Error(message, std::string(short_path(file)) + ":" + std::to_string(line));
}

}  // namespace rg::detail
