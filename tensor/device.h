// Where a tensor's storage lives: `cpu` (≡ `cpu:0`), virtual CPU devices `cpu:i`, or `cuda:i`.
// Virtual CPU devices let DataParallel be taught without GPUs: each `cpu:i` owns its
// storage, copies between them are real and counted, and mixing them in one op is an error.
#pragma once
#include <cstdint>
#include <string>

namespace rg {

enum class DeviceType : uint8_t { cpu, cuda };

struct Device {
  DeviceType type = DeviceType::cpu;
  int index = 0;

  static Device cpu(int index = 0) { return {DeviceType::cpu, index}; }
  static Device cuda(int index = 0) { return {DeviceType::cuda, index}; }
  // "cpu", "cpu:3", "cuda", "cuda:1"; anything else throws rg::Error.
  static Device parse(const std::string& text);

  bool is_cpu() const { return type == DeviceType::cpu; }
  bool is_cuda() const { return type == DeviceType::cuda; }
  std::string str() const;  // "cpu:0", "cuda:1"
  bool operator==(const Device&) const = default;
};

// Bytes copied into and out of each device by Tensor::to / copy_ across devices, so
// DataParallel can show what device 0 carries (claim C12).
struct CopyStats {
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
};
CopyStats copy_stats(Device device);
void reset_copy_stats();
void record_copy(Device from, Device to, uint64_t bytes);

}  // namespace rg
