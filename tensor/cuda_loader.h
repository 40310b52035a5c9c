// Internal: the CUDA backend, loaded from the plugin libringgrad_cuda.so on first use.
#pragma once
#include "tensor/backend.h"

namespace rg {

// Loads the plugin once (thread-safe) and returns its backend; throws rg::Error
// "cuda: <rg::cuda::unavailable_reason()>" when there is no plugin or no device.
Backend& cuda_backend();

}  // namespace rg
