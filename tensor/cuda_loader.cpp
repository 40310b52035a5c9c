// Loads the CUDA backend plugin and implements the rg::cuda device queries on top of it.
//
// Why a plugin loaded with dlopen rather than a linked library: loading libcudart,
// libcublas and libcublasLt costs ~160 ms and hundreds of MB of address space at
// start-up. Most programs and every CPU test never touch a GPU, so they must not pay
// that; the plugin is opened only on the first cuda query or the first cuda tensor.
// It also lets one binary run on machines with and without the CUDA libraries.
#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include "tensor/cuda.h"
#include "tensor/cuda/plugin_api.h"
#include "tensor/cuda_loader.h"
#include "tensor/error.h"

#ifndef RINGGRAD_CUDA_PLUGIN
#define RINGGRAD_CUDA_PLUGIN ""
#endif

namespace rg {
namespace {

constexpr std::string_view kPluginFile = RINGGRAD_CUDA_PLUGIN;  // empty: built without CUDA

struct Plugin {
  Backend* backend = nullptr;  // null when CUDA is unavailable
  const cuda::PluginApi* api = nullptr;
  int device_count = 0;
  std::string unavailable;  // why backend is null
};

// $RINGGRAD_CUDA_PLUGIN_PATH (the plugin file or its folder), else the folder this
// library was loaded from: the build and the install both put the plugin there.
std::string plugin_path() {
  namespace fs = std::filesystem;
  if (const char* env = std::getenv("RINGGRAD_CUDA_PLUGIN_PATH"); env && *env) {
    fs::path path(env);
    return (fs::is_directory(path) ? path / kPluginFile : path).string();
  }
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&cuda_backend), &info) && info.dli_fname)
    return (fs::path(info.dli_fname).parent_path() / kPluginFile).string();
  return std::string(kPluginFile);  // let the dynamic linker search
}

template <class Fn>
Fn find_symbol(void* handle, const char* name) {
  return reinterpret_cast<Fn>(dlsym(handle, name));
}

// Never throws: every failure becomes the reason CUDA is unavailable. The handle is
// never closed; the backend it holds lives until the process exits.
Plugin load_plugin() {
  Plugin plugin;
  if (kPluginFile.empty()) {
    plugin.unavailable = "ringgrad was built without CUDA (RINGGRAD_CUDA=OFF or nvcc not found)";
    return plugin;
  }
  const std::string path = plugin_path();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* error = dlerror();
    plugin.unavailable = std::string(kPluginFile) + " could not be loaded: " + (error ? error : path);
    return plugin;
  }
  auto get_api = find_symbol<const cuda::PluginApi* (*)()>(handle, cuda::kApiSymbol);
  auto get_backend = find_symbol<Backend* (*)()>(handle, cuda::kBackendSymbol);
  if (!get_api || !get_backend) {
    plugin.unavailable = path + " does not export " + cuda::kApiSymbol + " and " + cuda::kBackendSymbol;
    return plugin;
  }
  plugin.api = get_api();
  char reason[256] = {};
  plugin.device_count = plugin.api->device_count(reason, sizeof reason);
  if (plugin.device_count == 0) {
    plugin.unavailable = std::string("no CUDA device (cudaGetDeviceCount: ") + reason + ")";
    return plugin;
  }
  try {
    plugin.backend = get_backend();
  } catch (const std::exception& e) {
    plugin.unavailable = std::string("the CUDA backend failed to start: ") + e.what();
  }
  return plugin;
}

// A function-local static: loaded on first use (never during static initialisation),
// and C++ guarantees one thread loads while the others wait.
const Plugin& plugin() {
  static const Plugin instance = load_plugin();
  return instance;
}

void check_device(int device, const char* what) {
  cuda_backend();  // throws when CUDA is unavailable
  RG_CHECK(device >= 0 && device < plugin().device_count, "cuda::", what, ": no device cuda:", device, " (",
           plugin().device_count, " visible)");
}

}  // namespace

Backend& cuda_backend() {
  const Plugin& p = plugin();
  if (!p.backend) RG_THROW("cuda: ", p.unavailable);
  return *p.backend;
}

namespace cuda {

bool is_available() { return plugin().backend != nullptr; }

int device_count() { return is_available() ? plugin().device_count : 0; }

std::string unavailable_reason() { return plugin().unavailable; }

std::string device_name(int device) {
  check_device(device, "device_name");
  char name[256] = {};
  RG_CHECK(plugin().api->device_name(device, name, sizeof name), "cuda::device_name(", device, "): ", name);
  return name;
}

void synchronize(int device) {
  check_device(device, "synchronize");
  cuda_backend().synchronize(device);
}

AllocatorStats memory_stats(int device) {
  check_device(device, "memory_stats");
  return cuda_backend().memory_stats(device);
}

void empty_cache(int device) {
  check_device(device, "empty_cache");
  cuda_backend().empty_cache(device);
}

}  // namespace cuda
}  // namespace rg
