// What DataParallel costs, phase by phase and device by device (claim C12: device 0 does
// more than the others). The counter is an Observer: DataParallel reports its copies and
// phases to it, so the core in data_parallel.cpp carries no accounting.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "nn/module.h"
#include "parallel/observer.h"

namespace rg::parallel {

// One phase of DataParallel, summed over all forwards (or backwards) since the last reset.
struct PhaseStats {
  double seconds = 0;
  uint64_t bytes = 0;  // copied between devices
};

// Bytes one device received from and sent to other devices.
struct DeviceTraffic {
  Device device;
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
};

struct DataParallelStats {
  int64_t forwards = 0;
  // The wrapped devices in order (devices[0] is device 0), then any other device an input
  // came from.
  std::vector<DeviceTraffic> devices;
  // Forward.
  PhaseStats scatter;    // input chunks to the replicas' devices
  PhaseStats replicate;  // parameters and buffers from device 0 to the other replicas
  PhaseStats apply;      // the replicas' forwards, in parallel (no copies)
  PhaseStats gather;     // the outputs to device 0
  // Backward, inside loss.backward().
  PhaseStats gather_backward;  // the output's gradient, split and sent back to the replicas
  PhaseStats reduce;           // each replica's parameter gradients to device 0 (and an input's gradient to its device)
  double backward_seconds = 0;  // from the gather's backward until the module's last gradient is final
};

// Device 0's extra load per forward, in one line: "device 0 per step: 1250.0 KiB in, 610.2
// KiB out (device 1: 310.0 KiB in); ms per step: scatter 0.11, replicate 0.20, ...".
std::string per_step_summary(const DataParallelStats& stats);

// Counts what DataParallel reports. Phases are spans named "scatter", "replicate",
// "apply", "gather" (a forward begins with its scatter), "gather_backward" (which starts a
// backward) and "reduce"; copies carry the same phase names. The backward ends when every
// trainable parameter of `module` has its final gradient, which the counter learns from
// gradient-ready hooks of its own.
class DataParallelStatsCounter : public Observer {
 public:
  DataParallelStatsCounter(std::vector<Device> devices, nn::Module& module);
  ~DataParallelStatsCounter() override;

  void span(const std::string& name, const std::string& category, Clock::time_point start,
            Clock::time_point end) override;
  void copied(const std::string& phase, Device from, Device to, uint64_t bytes) override;

  DataParallelStats snapshot() const;
  void reset();

 private:
  PhaseStats& phase(const std::string& name);  // caller holds mutex_
  DeviceTraffic& traffic(Device device);        // caller holds mutex_
  void gradient_final();
  void end_backward();  // caller holds mutex_

  mutable std::mutex mutex_;
  std::vector<Device> devices_;
  DataParallelStats stats_;
  std::vector<std::pair<Variable, int>> hooks_;  // the module's parameters and their hook ids
  Clock::time_point backward_start_;
  double backward_seconds_ = 0;
  size_t gradients_pending_ = 0;
  bool backward_running_ = false;
};

}  // namespace rg::parallel
