// Optimizer updates, line for line as torch/optim/sgd.py, adam.py and adamw.py (PyTorch
// 1.13, single-tensor path). Temporaries live in per-parameter state buffers, so a step
// after the first asks the allocator for nothing.
#include "nn/optim.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "tensor/ops.h"

namespace rg::optim {

namespace {
const std::string kScratch = "scratch";  // the per-parameter temporary of a step
}  // namespace

Optimizer::Optimizer(std::vector<Variable> params, double lr) : params_(std::move(params)), state_(params_.size()) {
  std::set<const VariableImpl*> seen;
  for (const Variable& p : params_) {
    RG_CHECK(p.defined() && p.is_leaf() && p.requires_grad(), "optimizer: parameter '", p.name(),
             "' must be a leaf that requires grad");
    RG_CHECK(seen.insert(p.impl().get()).second, "optimizer: parameter '", p.name(), "' is given twice");
  }
  set_lr(lr);
}

void Optimizer::set_lr(double lr) {
  RG_CHECK(lr >= 0 && std::isfinite(lr), "optimizer: learning rate must be finite and >= 0, got ", lr);
  lr_ = lr;
}

void Optimizer::zero_grad(bool set_to_none) {
  for (Variable& p : params_) {
    if (set_to_none) {
      p.set_grad(Tensor());
    } else if (p.grad().defined()) {
      p.grad().zero_();
    }
  }
}

Tensor& Optimizer::state_buffer(size_t i, const std::string& name) {
  Tensor& buffer = state_[i].buffers[name];
  if (!buffer.defined()) buffer = zeros_like(params_[i].data());
  return buffer;
}

OptimizerState Optimizer::state_dict() const {
  OptimizerState out;
  out["lr"] = Tensor::scalar(lr_, DType::float64);
  for (size_t i = 0; i < state_.size(); ++i) {
    if (state_[i].step == 0) continue;
    std::string prefix = std::to_string(i) + ".";
    out[prefix + "step"] = Tensor::from_vector<int64_t>({state_[i].step}, {});
    for (const auto& [name, buffer] : state_[i].buffers)
      if (name != kScratch) out[prefix + name] = buffer;  // scratch holds no state between steps
  }
  return out;
}

void Optimizer::load_state_dict(const OptimizerState& state) {
  auto lr = state.find("lr");
  RG_CHECK(lr != state.end() && lr->second.numel() == 1, "optimizer load_state_dict: missing entry 'lr'");
  std::vector<ParamState> loaded(params_.size());
  for (const auto& [key, value] : state) {
    if (key == "lr") continue;
    size_t dot = key.find('.');
    bool indexed = dot != std::string::npos && dot > 0 && dot < 10 && key.find_first_not_of("0123456789") == dot;
    size_t i = indexed ? std::stoul(key.substr(0, dot)) : params_.size();
    RG_CHECK(i < params_.size(), "optimizer load_state_dict: unexpected entry '", key, "' (the optimizer has ",
             params_.size(), " parameters)");
    std::string name = key.substr(dot + 1);
    if (name == "step") {
      RG_CHECK(value.numel() == 1 && value.dtype() == DType::int64, "optimizer load_state_dict: '", key,
               "' must be one int64, got ", dtype_name(value.dtype()), " ", shape_str(value.shape()));
      loaded[i].step = value.to_vector<int64_t>()[0];
      RG_CHECK(loaded[i].step >= 1 && loaded[i].step <= kMaxSteps, "optimizer load_state_dict: '", key,
               "' = ", loaded[i].step, " is not a step count (1..2^53)");
      continue;
    }
    const Variable& p = params_[i];
    RG_CHECK(value.shape() == p.shape(), "optimizer load_state_dict: '", key, "' has shape ",
             shape_str(value.shape()), " but parameter ", i, " ('", p.name(), "') has shape ", shape_str(p.shape()));
    RG_CHECK(value.dtype() == p.data().dtype(), "optimizer load_state_dict: '", key, "' is ", dtype_name(value.dtype()),
             " but parameter ", i, " ('", p.name(), "') is ", dtype_name(p.data().dtype()));
    Tensor buffer = empty_like(p.data());
    buffer.copy_(value);
    loaded[i].buffers[name] = buffer;
  }
  // A parameter that has stepped keeps exactly kept_buffers(); one that has not keeps none.
  const std::vector<std::string> kept = kept_buffers();
  for (size_t i = 0; i < loaded.size(); ++i) {
    const ParamState& s = loaded[i];
    for (const auto& [buffer, _] : s.buffers)
      RG_CHECK(s.step > 0 && std::find(kept.begin(), kept.end(), buffer) != kept.end(), "optimizer load_state_dict: '",
               i, ".", buffer, "' is not state ", name(), " keeps", s.step > 0 ? "" : " (and there is no step count)",
               ": the state of another optimizer or other options?");
    for (const std::string& buffer : kept)
      RG_CHECK(s.step == 0 || s.buffers.count(buffer), "optimizer load_state_dict: parameter ", i, " ('",
               params_[i].name(), "') has a step count but no '", buffer, "', which ", name(),
               " keeps: the state of another optimizer or other options?");
  }
  set_lr(lr->second.item());
  state_ = std::move(loaded);
}

SGD::SGD(std::vector<Variable> params, const SGDOptions& options) : Optimizer(std::move(params), options.lr), options_(options) {
  RG_CHECK(options.momentum >= 0 && options.weight_decay >= 0, "SGD: momentum ", options.momentum,
           " and weight_decay ", options.weight_decay, " must be >= 0");
  RG_CHECK(!options.nesterov || (options.momentum > 0 && options.dampening == 0),
           "SGD: Nesterov momentum needs momentum > 0 and dampening 0");
}

std::vector<std::string> SGD::kept_buffers() const {
  if (options_.momentum == 0) return {};
  return {"momentum_buffer"};
}

void SGD::step() {
  NoGradGuard no_grad;
  const SGDOptions& o = options_;
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i].data();
    const Tensor& grad = params_[i].grad();
    if (!grad.defined()) continue;
    bool first = state_[i].step++ == 0;
    Tensor d_p = grad;
    if (o.weight_decay != 0) {  // d_p = g + wd * p
      d_p = state_buffer(i, kScratch);
      d_p.copy_(grad).add_(p, o.weight_decay);
    }
    if (o.momentum != 0) {
      Tensor& buf = state_buffer(i, "momentum_buffer");
      if (first) {
        buf.copy_(d_p);  // buf_1 = d_p
      } else {
        buf.mul_(o.momentum).add_(d_p, 1 - o.dampening);  // buf = momentum buf + (1 - dampening) d_p
      }
      if (o.nesterov) {  // d_p = d_p + momentum buf
        Tensor& scratch = state_buffer(i, kScratch);
        if (!scratch.same_data(d_p)) scratch.copy_(d_p);
        d_p = scratch.add_(buf, o.momentum);
      } else {
        d_p = buf;
      }
    }
    p.sub_(d_p, lr_);  // p = p - lr d_p
  }
}

Adam::Adam(std::vector<Variable> params, const AdamOptions& options, bool decoupled)
    : Optimizer(std::move(params), options.lr), options_(options), decoupled_(decoupled) {
  RG_CHECK(options.beta1 >= 0 && options.beta1 < 1 && options.beta2 >= 0 && options.beta2 < 1,
           decoupled ? "AdamW" : "Adam", ": betas must be in [0, 1), got (", options.beta1, ", ", options.beta2, ")");
  RG_CHECK(options.eps >= 0 && options.weight_decay >= 0, decoupled ? "AdamW" : "Adam", ": eps ", options.eps,
           " and weight_decay ", options.weight_decay, " must be >= 0");
}

// Kingma & Ba 2015, Algorithm 1, in PyTorch's arrangement:
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//   p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
void Adam::step() {
  NoGradGuard no_grad;
  const AdamOptions& o = options_;
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i].data();
    const Tensor& grad = params_[i].grad();
    if (!grad.defined()) continue;
    double t = static_cast<double>(++state_[i].step);
    Tensor& m = state_buffer(i, "exp_avg");
    Tensor& v = state_buffer(i, "exp_avg_sq");
    Tensor& scratch = state_buffer(i, kScratch);
    Tensor g = grad;
    if (decoupled_) {
      p.mul_(1 - lr_ * o.weight_decay);  // AdamW: p = p (1 - lr wd)
    } else if (o.weight_decay != 0) {
      g = scratch.copy_(grad).add_(p, o.weight_decay);  // Adam: g = g + wd p
    }
    m.mul_(o.beta1).add_(g, 1 - o.beta1);
    v.mul_(o.beta2);
    binary_into(BinaryOp::mul, g, g, scratch);  // g is no longer needed after this
    v.add_(scratch, 1 - o.beta2);
    double bias_correction1 = 1 - std::pow(o.beta1, t);
    double bias_correction2 = 1 - std::pow(o.beta2, t);
    unary_into(UnaryOp::sqrt, v, scratch);  // denom = sqrt(v) / sqrt(bc2) + eps
    backend_for(scratch).binary_scalar(BinaryOp::div, scratch, std::sqrt(bias_correction2), scratch);
    scratch.add_(o.eps);
    binary_into(BinaryOp::div, m, scratch, scratch);
    p.sub_(scratch, lr_ / bias_correction1);
  }
}

}  // namespace rg::optim
