// DataParallelStatsCounter: bytes and seconds per phase and per device.
#include "parallel/data_parallel_stats.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

#include "tensor/error.h"

namespace rg::parallel {

std::string per_step_summary(const DataParallelStats& s) {
  const double steps = static_cast<double>(std::max<int64_t>(1, s.forwards));
  const auto kib = [&](uint64_t bytes) { return static_cast<double>(bytes) / 1024.0 / steps; };
  const auto ms = [&](double seconds) { return 1000.0 * seconds / steps; };
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << "device 0 per step: " << kib(s.devices[0].bytes_in) << " KiB in, "
      << kib(s.devices[0].bytes_out) << " KiB out";
  if (s.devices.size() > 1) out << " (device 1: " << kib(s.devices[1].bytes_in) << " KiB in)";
  out << "; " << std::setprecision(2) << "ms per step: scatter " << ms(s.scatter.seconds) << ", replicate "
      << ms(s.replicate.seconds) << ", apply " << ms(s.apply.seconds) << ", gather " << ms(s.gather.seconds)
      << ", backward " << ms(s.backward_seconds);
  return out.str();
}

DataParallelStatsCounter::DataParallelStatsCounter(std::vector<Device> devices, nn::Module& module)
    : devices_(std::move(devices)) {
  reset();
  for (Variable& p : module.parameters())
    if (p.requires_grad()) hooks_.emplace_back(p, p.add_grad_ready_hook([this](const Variable&) { gradient_final(); }));
}

DataParallelStatsCounter::~DataParallelStatsCounter() {
  for (auto& [parameter, id] : hooks_) parameter.remove_grad_ready_hook(id);
}

PhaseStats& DataParallelStatsCounter::phase(const std::string& name) {
  if (name == "scatter") return stats_.scatter;
  if (name == "replicate") return stats_.replicate;
  if (name == "apply") return stats_.apply;
  if (name == "gather") return stats_.gather;
  if (name == "gather_backward") return stats_.gather_backward;
  if (name == "reduce") return stats_.reduce;
  RG_THROW("DataParallelStatsCounter: unknown phase '", name, "'");
}

DeviceTraffic& DataParallelStatsCounter::traffic(Device device) {
  auto found = std::find_if(stats_.devices.begin(), stats_.devices.end(),
                            [device](const DeviceTraffic& t) { return t.device == device; });
  if (found != stats_.devices.end()) return *found;
  return stats_.devices.emplace_back(DeviceTraffic{device});
}

void DataParallelStatsCounter::span(const std::string& name, const std::string&, Clock::time_point start,
                                    Clock::time_point end) {
  std::lock_guard lock(mutex_);
  phase(name).seconds += std::chrono::duration<double>(end - start).count();
  if (name == "scatter") {
    ++stats_.forwards;
    end_backward();
  } else if (name == "gather_backward") {  // the first DataParallel node a backward reaches
    end_backward();
    backward_start_ = start;
    backward_seconds_ = 0;
    gradients_pending_ = hooks_.size();
    backward_running_ = !hooks_.empty();
  }
}

void DataParallelStatsCounter::copied(const std::string& name, Device from, Device to, uint64_t bytes) {
  std::lock_guard lock(mutex_);
  phase(name).bytes += bytes;
  traffic(from).bytes_out += bytes;
  traffic(to).bytes_in += bytes;
}

void DataParallelStatsCounter::gradient_final() {
  std::lock_guard lock(mutex_);
  if (!backward_running_) return;
  backward_seconds_ = std::chrono::duration<double>(Clock::now() - backward_start_).count();
  if (--gradients_pending_ == 0) end_backward();
}

// Adds the running backward to the totals: at its module's last gradient, or at the next
// forward or backward when some parameter got no gradient.
void DataParallelStatsCounter::end_backward() {
  if (backward_running_) stats_.backward_seconds += backward_seconds_;
  backward_running_ = false;
}

DataParallelStats DataParallelStatsCounter::snapshot() const {
  std::lock_guard lock(mutex_);
  DataParallelStats out = stats_;
  if (backward_running_) out.backward_seconds += backward_seconds_;
  return out;
}

void DataParallelStatsCounter::reset() {
  std::lock_guard lock(mutex_);
  stats_ = {};
  for (Device device : devices_) stats_.devices.push_back({device});
  backward_running_ = false;
}

}  // namespace rg::parallel
