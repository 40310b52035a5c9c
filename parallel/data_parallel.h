// DataParallel: single-process data parallelism over several devices of one machine
// (PyTorch's nn.DataParallel; claim C12). Each forward scatters the batch, replicates the
// module, runs the replicas on one thread per device and gathers the outputs on device 0;
// the backward reduces every replica's gradients into device 0's module. What each phase
// costs is counted by an observer (parallel/data_parallel_stats.h).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "nn/module.h"
#include "parallel/data_parallel_stats.h"
#include "parallel/observer.h"
#include "parallel/threads.h"
#include "tensor/device.h"

namespace rg::parallel {

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

  // Hooks, for fault and straggler injection (parallel/fault.h):
  // runs hook(i) on replica i's thread before each of its forwards (a --straggler sleeps
  // there, so one slow device holds up the gather as a slow GPU would);
  void set_before_replica_forward(std::function<void(size_t replica)> hook) {
    before_replica_forward_ = std::move(hook);
  }
  // in backward, hook(i, slice) is what replica i receives of the output's gradient.
  using OutputGradientHook = std::function<Tensor(size_t replica, const Tensor& slice)>;
  void set_output_gradient_hook(OutputGradientHook hook) { output_gradient_hook_ = std::move(hook); }

  // Bytes and seconds since construction or the last reset_stats().
  DataParallelStats stats() const { return stats_->snapshot(); }
  void reset_stats() { stats_->reset(); }
  // Also reports every phase and copy to `observer` (null: none); call between steps.
  void set_observer(Observer* observer) { observers_->set_second(observer); }

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
  std::vector<std::unique_ptr<WorkerThread>> workers_;  // one thread per device
  std::shared_ptr<DataParallelStatsCounter> stats_;
  std::shared_ptr<ObserverTee> observers_;  // stats_, then the user's; shared with the graph's backward closures
  std::function<void(size_t)> before_replica_forward_;
  OutputGradientHook output_gradient_hook_;
};

}  // namespace rg::parallel
