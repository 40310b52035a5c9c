// Device names and the cross-device copy counters.
#include "tensor/device.h"

#include <map>
#include <mutex>

#include "tensor/error.h"

namespace rg {

Device Device::parse(const std::string& text) {
  auto colon = text.find(':');
  std::string kind = text.substr(0, colon);
  int index = 0;
  if (colon != std::string::npos) {
    std::string digits = text.substr(colon + 1);
    bool ok = !digits.empty() && digits.size() < 6 && digits.find_first_not_of("0123456789") == std::string::npos;
    RG_CHECK(ok, "device '", text, "': the index after ':' must be a small non-negative integer");
    index = std::stoi(digits);
  }
  if (kind == "cpu") return cpu(index);
  if (kind == "cuda") return cuda(index);
  RG_THROW("device '", text, "': expected cpu, cpu:N, cuda or cuda:N");
}

std::string Device::str() const { return (is_cpu() ? "cpu:" : "cuda:") + std::to_string(index); }

namespace {
struct CopyCounters {
  std::mutex mutex;
  std::map<std::pair<int, int>, CopyStats> per_device;  // key: (type, index)
};
CopyCounters& counters() {
  static CopyCounters instance;
  return instance;
}
std::pair<int, int> key_of(Device d) { return {static_cast<int>(d.type), d.index}; }
}  // namespace

CopyStats copy_stats(Device device) {
  auto& c = counters();
  std::lock_guard lock(c.mutex);
  auto it = c.per_device.find(key_of(device));
  return it == c.per_device.end() ? CopyStats{} : it->second;
}

void reset_copy_stats() {
  auto& c = counters();
  std::lock_guard lock(c.mutex);
  c.per_device.clear();
}

void record_copy(Device from, Device to, uint64_t bytes) {
  auto& c = counters();
  std::lock_guard lock(c.mutex);
  c.per_device[key_of(from)].bytes_out += bytes;
  c.per_device[key_of(to)].bytes_in += bytes;
}

}  // namespace rg
