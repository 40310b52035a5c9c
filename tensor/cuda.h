// CUDA device queries. Usable in every build: without the CUDA backend, or on a machine
// without a GPU, is_available() is false, device_count() is 0 and unavailable_reason()
// says why. The backend is a plugin loaded on the first call here or on the first use
// of a cuda device (see tensor/cuda_loader.cpp); no CUDA types appear in this header.
#pragma once
#include <string>

#include "tensor/caching_allocator.h"

namespace rg::cuda {

bool is_available();  // the plugin loads and sees at least one device; never throws
int device_count();   // 0 when there is no plugin, no driver or no device; never throws
// Why is_available() is false, e.g. "no CUDA device (cudaGetDeviceCount: ...)"; empty when it is true.
std::string unavailable_reason();

// The calls below throw rg::Error when CUDA is unavailable or `device` is out of range.
std::string device_name(int device);            // e.g. "NVIDIA H200"
void synchronize(int device = 0);               // waits for all work queued on the device
AllocatorStats memory_stats(int device = 0);    // the device's caching allocator
void empty_cache(int device = 0);               // returns cached free blocks to the driver

}  // namespace rg::cuda
