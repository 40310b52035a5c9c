// The injectors. Each changes only what its hook is handed, and only while armed.
#include "parallel/fault.h"

#include <chrono>
#include <thread>

#include "tensor/ops.h"

namespace rg::parallel {

namespace {

// A Work that runs `after` once `inner` is done, before wait() returns.
class ThenWork : public Work {
 public:
  ThenWork(std::shared_ptr<Work> inner, std::function<void()> after)
      : inner_(std::move(inner)), after_(std::move(after)) {}
  void wait() override {
    inner_->wait();
    if (after_) std::exchange(after_, nullptr)();
  }
  bool is_completed() const override { return inner_->is_completed() && !after_; }

 private:
  std::shared_ptr<Work> inner_;
  std::function<void()> after_;
};

}  // namespace

std::optional<GradientFaultPlan> plan_for(const std::optional<GradientFaultPlan>& plan, int rank) {
  return plan && plan->rank == rank ? plan : std::nullopt;
}

StragglerDelay::StragglerDelay(StragglerPlan plan, uint64_t run_seed)
    : plan_(plan), dice_(run_seed + 7919 * static_cast<uint64_t>(plan.rank + 1)) {}

void StragglerDelay::maybe_sleep(Observer* observer) {
  float dice = 0;
  dice_.fill_uniform(&dice, 1, 0.0, 1.0);
  if (dice >= plan_.probability) return;
  ObservedSpan sleeping(observer, "straggler delay", "straggler");
  std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(plan_.delay_ms));
}

CommHook GradientFaultInjector::wrap(CommHook inner) {
  return [this, inner = std::move(inner)](ProcessGroup& pg, const GradBucket& bucket) -> std::shared_ptr<Work> {
    if (bucket.index == 0) active_ = std::exchange(armed_, std::nullopt);  // a new backward
    if (active_ == GradientFault::drop) bucket.flat.zero_();
    std::shared_ptr<Work> work = inner(pg, bucket);
    if (active_ != GradientFault::corrupt || bucket.index != 0) return work;
    return std::make_shared<ThenWork>(std::move(work), [gradient = bucket.gradients.front()] { gradient.add_(1.0); });
  };
}

void ReplicaFaultInjector::arm(size_t replica, GradientFault kind) {
  RG_CHECK(replica < replicas_, "ReplicaFaultInjector::arm: replica ", replica, " does not exist with ", replicas_,
           " devices");
  armed_ = std::make_pair(replica, kind);
}

std::function<Tensor(size_t, const Tensor&)> ReplicaFaultInjector::hook() {
  return [this](size_t replica, const Tensor& slice) {
    if (!armed_ || armed_->first != replica) return slice;
    const GradientFault kind = std::exchange(armed_, std::nullopt)->second;
    return kind == GradientFault::drop ? zeros_like(slice) : slice + 1.0;
  };
}

void damage_gradients(GradientFault kind, nn::Module& model) {
  std::vector<Variable> parameters = model.parameters();
  if (kind == GradientFault::corrupt) {
    parameters.back().grad().add_(1.0);
    return;
  }
  for (Variable& p : parameters)
    if (p.grad().defined()) p.grad().zero_();
}

}  // namespace rg::parallel
