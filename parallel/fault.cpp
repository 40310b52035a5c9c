// The injectors. Each changes only what its hook is handed, and only while armed.
#include "parallel/fault.h"

#include <charconv>
#include <chrono>
#include <cmath>
#include <sstream>
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

// "A:B[:C]" as its fields.
std::vector<std::string> split_spec(const std::string& spec, const char* form) {
  std::vector<std::string> fields;
  std::stringstream in(spec);
  for (std::string field; std::getline(in, field, ':');) fields.push_back(field);
  RG_CHECK(fields.size() == 2 || fields.size() == 3, "'", spec, "' is not ", form);
  return fields;
}

template <class T>
T parse_field(const std::string& text, const char* what) {
  T value{};
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  RG_CHECK(!text.empty() && ec == std::errc() && ptr == end, what, " '", text, "' is not a number");
  return value;
}

int parse_rank(const std::string& text, int workers) {
  const auto rank = parse_field<int64_t>(text, "RANK");
  RG_CHECK(rank >= 0 && rank < workers, "rank ", text, " does not exist with ", workers, " worker(s)");
  return static_cast<int>(rank);
}

}  // namespace

GradientFaultPlan parse_gradient_fault(const std::string& spec, int workers) {
  const auto fields = split_spec(spec, "RANK:STEP[:corrupt|drop]");
  GradientFaultPlan plan{.rank = parse_rank(fields[0], workers), .step = parse_field<int64_t>(fields[1], "STEP")};
  RG_CHECK(plan.step >= 1, "STEP must be at least 1, got ", fields[1]);
  if (fields.size() == 3) {
    RG_CHECK(fields[2] == "corrupt" || fields[2] == "drop", "unknown kind '", fields[2], "'; accepted: corrupt|drop");
    plan.kind = fields[2] == "drop" ? GradientFault::drop : GradientFault::corrupt;
  }
  return plan;
}

StragglerPlan parse_straggler(const std::string& spec, int workers) {
  const auto fields = split_spec(spec, "RANK:MS[:PROB]");
  StragglerPlan plan{.rank = parse_rank(fields[0], workers), .delay_ms = parse_field<double>(fields[1], "MS")};
  RG_CHECK(std::isfinite(plan.delay_ms) && plan.delay_ms >= 0, "MS must be a finite number >= 0, got ", fields[1]);
  if (fields.size() == 3) {
    plan.probability = parse_field<double>(fields[2], "PROB");
    RG_CHECK(plan.probability >= 0 && plan.probability <= 1, "PROB must be in [0, 1], got ", fields[2]);
  }
  return plan;
}

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
