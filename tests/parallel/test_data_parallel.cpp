// parallel.dp.*: DataParallel over virtual CPU devices. The oracle: one module wrapped over
// N devices with global batch B trains exactly like the module alone with batch B; plus
// uneven splits, the byte accounting of device 0, buffers and the input checks.
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>

#include "oracle.h"
#include "parallel/data_parallel.h"
#include "parallel/fault.h"

namespace rg::parallel {
namespace {

using namespace test;

// fc(bn(x)) on x (B, 3, 1, 1): a model with buffers (the running statistics).
struct BatchNormNet : nn::Cloneable<BatchNormNet> {
  BatchNormNet() {
    bn = register_module("bn", nn::BatchNorm2d(3));
    fc = register_module("fc", nn::Linear(3, kClasses));
  }
  Variable forward(const Variable& x) override { return fc->forward(bn->forward(x).flatten(1)); }
  std::shared_ptr<nn::BatchNorm2d> bn;
  std::shared_ptr<nn::Linear> fc;
};

std::vector<Device> cpus(int n) {
  std::vector<Device> out;
  for (int i = 0; i < n; ++i) out.push_back(Device::cpu(i));
  return out;
}

// Trains one model alone and a copy through DataParallel over n devices on the same
// batches; returns the worst relative error of the copy's parameters.
double oracle_error(int n, DType dtype, int64_t batch, int steps) {
  auto initial = make_mlp(dtype);
  auto batches = make_batches(steps, batch, dtype);
  auto reference = clone_of(*initial);
  train_single(*reference, batches);
  auto wrapped = clone_of(*initial);
  DataParallel dp(wrapped, cpus(n));
  train_single(*wrapped, batches, [&](const Tensor& x) { return dp(x); });
  return relative_error(*wrapped, *reference);
}

// The gradients `loss(model)` leaves in the model's parameters, from zero.
std::vector<Tensor> gradients_of(nn::Module& model, const std::function<Variable()>& loss) {
  model.zero_grad();
  loss().backward();
  std::vector<Tensor> grads;
  for (const Variable& p : model.parameters()) grads.push_back(p.grad().clone());
  return grads;
}

// The worst |a - (b + scale_c * c)| over matching gradients.
double gradient_diff(const std::vector<Tensor>& a, const std::vector<Tensor>& b, const std::vector<Tensor>& c,
                     double scale_c) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, max_abs_diff(a[i], add(b[i], c[i], scale_c)));
  return worst;
}

uint64_t parameter_bytes(const nn::Module& model) {
  uint64_t bytes = 0;
  for (const Variable& p : model.parameters()) bytes += p.data().nbytes();
  return bytes;
}

}  // namespace

TEST_CASE("parallel.dp.matches_single_module_big_batch", "[parallel][dp]") {
  for (int n : {2, 4}) {
    INFO(n << " devices");
    CHECK(oracle_error(n, DType::float64, 16, 20) < 1e-10);
    CHECK(oracle_error(n, DType::float32, 16, 20) < 1e-5);
  }
}

TEST_CASE("parallel.dp.outputs_equal_single_module_forward", "[parallel][dp]") {
  auto model = make_mlp(DType::float64);
  Batch batch = make_batches(1, 12, DType::float64)[0];
  Tensor want = (*model)(batch.x).data();
  DataParallel dp(model, cpus(4));
  Variable out = dp(batch.x);
  CHECK(out.device() == Device::cpu(0));
  CHECK(out.shape() == Shape{12, kClasses});
  CHECK(out.requires_grad());
  CHECK(max_abs_diff(out.data(), want) < 1e-12);
  NoGradGuard no_grad;
  Variable evaluated = dp(batch.x);
  CHECK_FALSE(evaluated.requires_grad());
  CHECK(max_abs_diff(evaluated.data(), want) < 1e-12);
}

TEST_CASE("parallel.dp.input_gradient_matches_single_module", "[parallel][dp]") {
  auto model = make_mlp(DType::float64);
  Batch batch = make_batches(1, 10, DType::float64)[0];
  Variable x(batch.x, true);
  cross_entropy((*model)(x), batch.y).backward();
  Tensor want = x.grad();
  Variable x_dp(batch.x, true);
  DataParallel dp(clone_of(*model), cpus(3));
  cross_entropy(dp(x_dp), batch.y).backward();
  CHECK(max_abs_diff(x_dp.grad(), want) < 1e-12);
  CHECK(dp.stats().reduce.bytes == parameter_bytes(*model) * 2 + (3 + 3) * kIn * sizeof(double));
}

TEST_CASE("parallel.dp.uneven_and_small_batches", "[parallel][dp]") {
  CHECK(oracle_error(4, DType::float64, 10, 5) < 1e-10);  // chunks 3, 3, 2, 2
  CHECK(oracle_error(3, DType::float64, 16, 5) < 1e-10);  // chunks 6, 5, 5
  CHECK(oracle_error(4, DType::float64, 3, 5) < 1e-10);   // 3 samples use 3 devices
  auto model = make_mlp(DType::float64);
  DataParallel dp(model, cpus(4));
  auto bytes_in = [&](size_t device) { return dp.stats().devices[device].bytes_in; };
  const uint64_t sample = kIn * sizeof(double);
  dp(make_batches(1, 10, DType::float64)[0].x);
  CHECK(dp.stats().scatter.bytes == (3 + 2 + 2) * sample);
  CHECK(bytes_in(1) - parameter_bytes(*model) == 3 * sample);
  CHECK(bytes_in(3) - parameter_bytes(*model) == 2 * sample);
  dp.reset_stats();
  dp(make_batches(1, 3, DType::float64)[0].x);
  CHECK(dp.stats().scatter.bytes == 2 * sample);
  CHECK(bytes_in(3) == 0);
  CHECK(dp.stats().devices[3].bytes_out == 0);
}

TEST_CASE("parallel.dp.stats_show_device_0_receives_outputs_and_gradients", "[parallel][dp]") {
  const int n = 4;
  const int64_t batch_size = 16;
  auto model = make_mlp(DType::float32);
  DataParallel dp(model, cpus(n));
  Batch batch = make_batches(1, batch_size, DType::float32)[0];
  reset_copy_stats();
  cross_entropy(dp(batch.x), batch.y).backward();
  DataParallelStats s = dp.stats();
  const uint64_t others = n - 1;
  const uint64_t params = parameter_bytes(*model);
  const uint64_t outputs = (batch_size / n) * kClasses * sizeof(float);  // per replica
  CHECK(s.forwards == 1);
  CHECK(s.scatter.bytes == others * (batch_size / n) * kIn * sizeof(float));
  CHECK(s.replicate.bytes == others * params);
  CHECK(s.gather.bytes == others * outputs);
  CHECK(s.gather_backward.bytes == others * outputs);
  CHECK(s.reduce.bytes == others * params);
  // Device 0 receives every other replica's outputs and gradients, and sends the rest.
  REQUIRE(s.devices.size() == static_cast<size_t>(n));
  CHECK(s.devices[0].device == Device::cpu(0));
  CHECK(s.devices[0].bytes_in == s.gather.bytes + s.reduce.bytes);
  CHECK(s.devices[0].bytes_out == s.scatter.bytes + s.replicate.bytes + s.gather_backward.bytes);
  for (int i = 1; i < n; ++i) {
    CHECK(s.devices[i].bytes_in == s.devices[0].bytes_out / others);
    CHECK(s.devices[i].bytes_out == s.devices[0].bytes_in / others);
  }
  // The tensor library's own copy counters saw the same traffic.
  for (const DeviceTraffic& t : s.devices) {
    INFO(t.device.str());
    CHECK(copy_stats(t.device).bytes_in == t.bytes_in);
    CHECK(copy_stats(t.device).bytes_out == t.bytes_out);
  }
  CHECK(s.apply.seconds > 0);
  CHECK(s.backward_seconds > 0);
  CHECK(s.backward_seconds >= s.reduce.seconds);
  dp.reset_stats();
  s = dp.stats();
  CHECK(s.forwards == 0);
  CHECK(s.devices[0].bytes_in == 0);
  CHECK(s.backward_seconds == 0);
}

TEST_CASE("parallel.dp.input_on_another_device_is_counted", "[parallel][dp]") {
  auto model = make_mlp(DType::float32);
  model->to(Device::cpu(1));
  DataParallel dp(model, {Device::cpu(1), Device::cpu(2)});
  Tensor x = make_batches(1, 8, DType::float32)[0].x;  // on cpu:0
  Variable out = dp(x);
  CHECK(out.device() == Device::cpu(1));
  DataParallelStats s = dp.stats();
  REQUIRE(s.devices.size() == 3);
  CHECK(s.devices[2].device == Device::cpu(0));
  CHECK(s.devices[2].bytes_out == x.nbytes());
  CHECK(s.scatter.bytes == x.nbytes());
}

TEST_CASE("parallel.dp.buffers_follow_pytorch", "[parallel][dp]") {
  Generator gen(3);
  auto initial = std::make_shared<BatchNormNet>();
  Tensor x = randn({8, 3, 1, 1}, gen, 0.0, 2.0);
  auto model = clone_of(*initial);
  DataParallel dp(model, cpus(2));
  dp(x);
  // The module's running statistics saw device 0's chunk only; the replica's updates are lost.
  auto device_0_only = clone_of(*initial);
  (*device_0_only)(x.narrow(0, 0, 4));
  CHECK(max_abs_diff(model->bn->running_mean(), device_0_only->bn->running_mean()) == 0);
  CHECK(max_abs_diff(model->bn->running_var(), device_0_only->bn->running_var()) == 0);
  // In eval mode every replica normalises with device 0's running statistics.
  model->eval();
  Tensor want = (*model)(x).data();
  CHECK(max_abs_diff(dp(x).data(), want) < 1e-6);
}

TEST_CASE("parallel.dp.injected_faults_hit_one_replicas_share_once", "[parallel][dp]") {
  // Loss = sum of the outputs, so every output gradient is 1 and each half of the batch
  // contributes its own gradients: dropping replica 1 leaves the first half's, corrupting
  // it (+1 on its output gradient) counts the second half twice.
  auto model = make_mlp(DType::float64);
  const Tensor x = make_batches(1, 4, DType::float64)[0].x;
  auto alone = clone_of(*model);
  const auto first = gradients_of(*alone, [&] { return sum((*alone)(Variable(x.narrow(0, 0, 2)))); });
  const auto second = gradients_of(*alone, [&] { return sum((*alone)(Variable(x.narrow(0, 2, 2)))); });
  DataParallel dp(model, cpus(2));
  ReplicaFaultInjector faults(dp.devices().size());
  dp.set_output_gradient_hook(faults.hook());
  auto through_dp = [&] { return gradients_of(*model, [&] { return sum(dp(Variable(x))); }); };
  faults.arm(1, GradientFault::drop);
  CHECK(gradient_diff(through_dp(), first, second, 0.0) < 1e-12);
  faults.arm(1, GradientFault::corrupt);
  CHECK(gradient_diff(through_dp(), first, second, 2.0) < 1e-12);
  CHECK(gradient_diff(through_dp(), first, second, 1.0) < 1e-12);  // the fault was for one step
  CHECK_THAT(error_from([&] { faults.arm(2, GradientFault::drop); }),
             Catch::Contains("ReplicaFaultInjector::arm: replica 2 does not exist with 2 devices"));
}

TEST_CASE("parallel.dp.bad_input_errors_clearly", "[parallel][dp]") {
  auto model = make_mlp(DType::float32);
  CHECK_THAT(error_from([&] { DataParallel dp(model, {}); }),
             Catch::Contains("DataParallel: the device list is empty"));
  CHECK_THAT(error_from([&] { DataParallel dp(model, {Device::cpu(0), Device::cuda(1)}); }),
             Catch::Contains("DataParallel: the devices must be all cpu:i or all cuda:i, got [cpu:0, cuda:1]"));
  CHECK_THAT(error_from([&] { DataParallel dp(model, {Device::cpu(0), Device::cpu(1), Device::cpu(0)}); }),
             Catch::Contains("DataParallel: cpu:0 appears twice in [cpu:0, cpu:1, cpu:0]"));
  CHECK_THAT(error_from([&] { DataParallel dp(nullptr, cpus(2)); }), Catch::Contains("DataParallel: the module is null"));
  DataParallel dp(model, cpus(2));
  CHECK_THAT(error_from([&] { dp(Tensor::zeros({0, kIn})); }),
             Catch::Contains("DataParallel: the input's batch is empty (shape [0, 6]), so there is nothing to split "
                             "over [cpu:0, cpu:1]"));
  CHECK_THAT(error_from([&] { dp(Tensor::scalar(1.0)); }),
             Catch::Contains("DataParallel: the input must have a batch dim (dim 0)"));
  CHECK_THAT(error_from([&] { dp(Tensor::zeros({4, kIn + 1})); }),
             Catch::Contains("DataParallel: the replica on cpu:0 failed: "));
  auto elsewhere = make_mlp(DType::float32);
  DataParallel misplaced(elsewhere, {Device::cpu(1), Device::cpu(2)});
  CHECK_THAT(error_from([&] { misplaced(Tensor::zeros({4, kIn})); }),
             Catch::Contains("DataParallel: parameter 'fc1.weight' is on cpu:0 but the module must live on "
                             "devices[0] = cpu:1"));
}

}  // namespace rg::parallel
