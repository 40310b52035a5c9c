// Optimizers: SGD (momentum, dampening, Nesterov, weight decay), Adam and AdamW, with
// exactly PyTorch 1.13's update rules. Steps run in place on p.data() under NoGradGuard
// and allocate nothing after the first (state buffers are created then); parameters
// whose gradient is undefined are skipped.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "autograd/variable.h"

namespace rg::optim {

// Optimizer state by name, "<i>.<buffer>" for parameter i (in the order given to the
// constructor) plus "lr"; what a checkpoint stores under "optim.".
using OptimizerState = std::map<std::string, Tensor>;

// The largest step count a loaded state may hold: 2^53, the last integer a double (Adam's
// bias correction) holds exactly and far beyond any run; a larger one is a corrupt file.
inline constexpr int64_t kMaxSteps = int64_t{1} << 53;

class Optimizer {
 public:
  Optimizer(std::vector<Variable> params, double lr);
  virtual ~Optimizer() = default;

  virtual void step() = 0;
  void zero_grad(bool set_to_none = false);
  double lr() const { return lr_; }
  void set_lr(double lr);  // LR schedules call this every step or epoch
  const std::vector<Variable>& params() const { return params_; }

  // The live state (tensors shared with the optimizer) and its inverse, which copies
  // values in, all or nothing. It throws naming the entry on an unknown name, a shape or
  // dtype that differs from the parameter's, a step count outside [1, kMaxSteps], or a
  // parameter whose state is not what this optimizer keeps (kept_buffers(): another
  // optimizer's state, which would train on as silent nonsense).
  OptimizerState state_dict() const;
  void load_state_dict(const OptimizerState& state);

  virtual const char* name() const = 0;  // "SGD", "Adam", "AdamW"
  // The per-parameter buffers a step keeps between steps, besides "step".
  virtual std::vector<std::string> kept_buffers() const = 0;

 protected:
  struct ParamState {
    int64_t step = 0;
    std::map<std::string, Tensor> buffers;  // created on the parameter's first step
  };
  // Buffer `name` of parameter i, created as zeros like the parameter on first use.
  Tensor& state_buffer(size_t i, const std::string& name);

  std::vector<Variable> params_;
  std::vector<ParamState> state_;
  double lr_;
};

struct SGDOptions {
  double lr = 0.01;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
};
class SGD : public Optimizer {
 public:
  SGD(std::vector<Variable> params, const SGDOptions& options);
  void step() override;
  const char* name() const override { return "SGD"; }
  std::vector<std::string> kept_buffers() const override;

 private:
  SGDOptions options_;
};

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;  // Adam: L2 added to the gradient; AdamW: decoupled decay
};
class Adam : public Optimizer {
 public:
  Adam(std::vector<Variable> params, const AdamOptions& options) : Adam(std::move(params), options, false) {}
  void step() override;
  const char* name() const override { return decoupled_ ? "AdamW" : "Adam"; }
  std::vector<std::string> kept_buffers() const override { return {"exp_avg", "exp_avg_sq"}; }

 protected:
  Adam(std::vector<Variable> params, const AdamOptions& options, bool decoupled);

 private:
  AdamOptions options_;
  bool decoupled_;
};
// Loshchilov & Hutter 2019: p *= 1 - lr * weight_decay before the Adam update.
class AdamW : public Adam {
 public:
  AdamW(std::vector<Variable> params, const AdamOptions& options) : Adam(std::move(params), options, true) {}
};

}  // namespace rg::optim
