// Variable: a tensor that remembers how it was made. It holds the data, the gradient
// (filled by backward), whether it requires a gradient, and grad_fn — the graph Node that
// produced it. A Tensor converts implicitly to a Variable that requires no gradient, so
// data from a loader goes straight into a model.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace rg {

class Node;
struct VariableImpl;

class Variable {
 public:
  Variable() = default;  // undefined
  Variable(Tensor data, bool requires_grad = false);  // NOLINT: implicit on purpose (see above)

  bool defined() const { return impl_ != nullptr; }
  const Tensor& data() const;
  // The gradient accumulated by backward(); undefined until the first backward reaches it.
  const Tensor& grad() const;
  void set_grad(const Tensor& grad);
  bool requires_grad() const;
  Variable& set_requires_grad(bool requires_grad);  // leaves only
  const std::shared_ptr<Node>& grad_fn() const;
  bool is_leaf() const { return grad_fn() == nullptr; }
  // A name for messages (parameters get their dotted names, e.g. "fc1.weight").
  const std::string& name() const;
  Variable& set_name(std::string name);

  // Computes gradients of this variable with respect to every leaf that requires one and
  // adds them to the leaves' grad(). `gradient` defaults to ones for a one-element
  // variable. Without retain_graph the graph's saved tensors are freed afterwards.
  void backward(const Tensor& gradient = Tensor(), bool retain_graph = false) const;
  // The same data, cut off from the graph.
  Variable detach() const;

  // Called exactly once per backward that brings this leaf a gradient, when the gradient
  // is final (after it has been added to grad()), in the order gradients become ready; not
  // called when no gradient reaches the leaf (e.g. it is used only behind a stop-gradient).
  // DistributedDataParallel launches its bucket all-reduces from these. Returns an id for
  // remove_grad_ready_hook.
  int add_grad_ready_hook(std::function<void(const Variable&)> hook);
  void remove_grad_ready_hook(int id);

  // ---- tensor metadata ----
  const Shape& shape() const { return data().shape(); }
  int64_t dim() const { return data().dim(); }
  int64_t size(int64_t d) const { return data().size(d); }
  int64_t numel() const { return data().numel(); }
  DType dtype() const { return data().dtype(); }
  Device device() const { return data().device(); }
  double item() const { return data().item(); }

  // ---- differentiable views and moves (see autograd/functions.h for the rest) ----
  // As Tensor's: view never copies (it throws when the strides do not allow one, e.g.
  // after a transpose); reshape is a view when it can be, else a copy.
  Variable view(const Shape& shape) const;
  Variable reshape(const Shape& shape) const;
  Variable flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Variable permute(const std::vector<int64_t>& dims) const;
  Variable transpose(int64_t dim0, int64_t dim1) const;
  Variable t() const;
  Variable narrow(int64_t dim, int64_t start, int64_t length) const;
  Variable select(int64_t dim, int64_t index) const;
  Variable expand(const Shape& shape) const;
  Variable squeeze(int64_t dim) const;
  Variable unsqueeze(int64_t dim) const;
  Variable to(Device device) const;
  Variable to(DType dtype) const;

  bool same(const Variable& other) const { return impl_ == other.impl_; }
  const std::shared_ptr<VariableImpl>& impl() const { return impl_; }
  explicit Variable(std::shared_ptr<VariableImpl> impl) : impl_(std::move(impl)) {}

 private:
  std::shared_ptr<VariableImpl> impl_;
};

struct VariableImpl {
  Tensor data;
  Tensor grad;
  bool requires_grad = false;
  std::shared_ptr<Node> grad_fn;
  std::string name;
  // The node that adds incoming gradients to `grad`; weak, since the graph owns it.
  std::weak_ptr<Node> grad_accumulator;
  std::vector<std::pair<int, std::function<void(const Variable&)>>> grad_ready_hooks;
  int next_hook_id = 0;
};

// ---- grad mode and anomaly mode ----

// While a NoGradGuard lives, ops on this thread record no graph (evaluation, optimizer steps).
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};
bool is_grad_enabled();

// Anomaly mode: every forward and backward result is checked for NaN/Inf, and the first
// op that produces one raises an rg::Error naming it (e.g. "log" of 0). Slow; for debugging.
void set_anomaly_mode(bool enabled);
bool is_anomaly_mode();

}  // namespace rg
