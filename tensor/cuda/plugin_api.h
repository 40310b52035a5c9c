// The C-callable entry points of the CUDA backend plugin (libringgrad_cuda.so), found by
// tensor/cuda_loader.cpp with dlsym. Free of CUDA types so the loader builds without the
// toolkit; plain C signatures so a mismatch shows up as a missing symbol, not a crash.
#pragma once
#include <cstddef>

namespace rg {
class Backend;
}

namespace rg::cuda {

struct PluginApi {
  // Visible devices; 0 on any CUDA error (no driver makes cudaGetDeviceCount fail rather
  // than return 0), with CUDA's message written to `reason` (always NUL-terminated).
  int (*device_count)(char* reason, size_t capacity);
  // Writes the device's name (or CUDA's error message) to `out`; false on error.
  bool (*device_name)(int device, char* out, size_t capacity);
};

inline constexpr const char* kBackendSymbol = "ringgrad_cuda_backend";
inline constexpr const char* kApiSymbol = "ringgrad_cuda_api";

}  // namespace rg::cuda

extern "C" {
// The backend object, created on the first call and never destroyed (see cuda_backend.cu).
rg::Backend* ringgrad_cuda_backend();
const rg::cuda::PluginApi* ringgrad_cuda_api();
}
