// DataParallel: single-process data parallelism over several devices of one machine
// (PyTorch's nn.DataParallel). Each forward scatters the batch, replicates the module,
// runs the replicas on one thread per device and gathers the outputs on device 0; the
// backward reduces every replica's gradients into device 0's module. It counts the bytes
// and time each phase costs, so device 0's extra load can be measured (claim C12).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "nn/module.h"
#include "parallel/fault.h"
#include "tensor/device.h"

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

// A fault waiting for the next forward's backward (DataParallel::inject_fault).
struct ReplicaFault {
  size_t replica = 0;
  GradientFault kind = GradientFault::drop;
};

namespace detail {
class Recorder;
class DeviceWorker;
}  // namespace detail

// Wraps `module`, which must live on devices[0], for data-parallel training over
// `devices`: all `cuda:i`, or all virtual CPU devices `cpu:i`, no device twice.
//
// forward(x), x (B, ...) on any device:
//  - scatter: x is split along dim 0 into chunks as even as possible (B = 10 over 4
//    devices: 3, 3, 2, 2); a batch smaller than the device count uses its first B
//    devices, one sample each (PyTorch also uses fewer devices, but splits with
//    torch.chunk: 3, 3, 3, 1); B = 0 is an error.
//  - replicate: replica i > 0 is a clone of the module on devices[i] whose parameters are
//    outputs of a differentiable copy (PyTorch's Broadcast) of device 0's parameters, so
//    its gradients flow back through the copy into the module's .grad, summed with the
//    other replicas' (the backward's "reduce"). Device 0's replica is the module itself.
//  - apply: replica i runs forward on its own thread, with its share of the CPU cores.
//  - gather: the outputs, each with a batch dim, are concatenated on devices[0] by a
//    differentiable op whose backward sends each replica its slice of the gradient.
// So the loss is computed on device 0, loss.backward() leaves the full-batch gradient in
// the module's parameters, and an optimizer over module->parameters() works unchanged.
// The backward runs on the thread that calls it, through the replicas' graphs one after
// another: the engine has one thread (PyTorch's has one per GPU).
//
// Buffers follow PyTorch: every forward copies device 0's buffers into the other replicas,
// whose in-place updates are then lost; the module keeps its own, updated by device 0's
// chunk only (BatchNorm's running statistics see a 1/N share of the batch).
// Generators are shared, not replicated: a module that draws random numbers in forward
// (Dropout) would race on its generator across the replicas' threads.
// On CUDA the phase times are host times: they include the kernels only where a copy waits.
class DataParallel {
 public:
  DataParallel(std::shared_ptr<nn::Module> module, std::vector<Device> devices);
  ~DataParallel();
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  Variable forward(const Variable& x);
  Variable operator()(const Variable& x) { return forward(x); }

  // Runs hook(i) on replica i's thread before each of its forwards. For fault injection:
  // the training program's --straggler sleeps there, so one slow device holds up the
  // gather as a slow GPU would.
  void set_before_replica_forward(std::function<void(size_t replica)> hook) {
    before_replica_forward_ = std::move(hook);
  }

  // Applies `fault` to replica `replica`'s share of the next forward's backward, at the
  // gather: drop zeroes its slice of the output gradient, so its samples add nothing to
  // the module's gradients; corrupt adds 1 to every element of that slice, so every
  // gradient it sends back is wrong. One model, so nothing drifts: only the loss shows it.
  void inject_fault(size_t replica, GradientFault fault);

  // Bytes and seconds since construction or the last reset_stats().
  DataParallelStats stats() const;
  void reset_stats();

  const std::shared_ptr<nn::Module>& module() const { return module_; }
  const std::vector<Device>& devices() const { return devices_; }

 private:
  void check_module_on_device_0() const;
  std::vector<Variable> scatter(const Variable& x);
  void replicate(size_t count);
  std::vector<Variable> parallel_apply(const std::vector<Variable>& inputs);
  Variable gather(const std::vector<Variable>& outputs);

  std::shared_ptr<nn::Module> module_;
  std::vector<Device> devices_;
  std::vector<std::shared_ptr<nn::Module>> replicas_;  // replicas_[0] is module_
  std::vector<std::unique_ptr<detail::DeviceWorker>> workers_;  // one thread per device
  std::shared_ptr<detail::Recorder> recorder_;  // shared with the graph's backward closures
  std::vector<std::pair<Variable, int>> hooks_;  // the module's parameters and their grad-ready hook ids
  std::function<void(size_t)> before_replica_forward_;
  std::optional<ReplicaFault> pending_fault_;
};

}  // namespace rg::parallel
