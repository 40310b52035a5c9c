// Variable accessors, grad mode, anomaly mode, and the differentiable view methods.
#include "autograd/variable.h"

#include <atomic>
#include <cmath>

#include "autograd/functions.h"
#include "autograd/node.h"
#include "tensor/ops.h"

namespace rg {

namespace {
thread_local bool tl_grad_enabled = true;
std::atomic<bool> g_anomaly_mode{false};
}  // namespace

Variable::Variable(Tensor data, bool requires_grad) : impl_(std::make_shared<VariableImpl>()) {
  impl_->data = std::move(data);
  set_requires_grad(requires_grad);
}

static VariableImpl& checked(const std::shared_ptr<VariableImpl>& impl) {
  RG_CHECK(impl, "Variable: the variable is undefined");
  return *impl;
}

const Tensor& Variable::data() const { return checked(impl_).data; }
const Tensor& Variable::grad() const { return checked(impl_).grad; }
bool Variable::requires_grad() const { return checked(impl_).requires_grad; }
const std::shared_ptr<Node>& Variable::grad_fn() const { return checked(impl_).grad_fn; }
const std::string& Variable::name() const { return checked(impl_).name; }

void Variable::set_grad(const Tensor& grad) {
  RG_CHECK(!grad.defined() || grad.shape() == shape(), "set_grad: gradient of shape ", shape_str(grad.shape()),
           " for variable '", name(), "' of shape ", shape_str(shape()));
  checked(impl_).grad = grad;
}

Variable& Variable::set_requires_grad(bool requires_grad) {
  RG_CHECK(is_leaf() || requires_grad, "set_requires_grad: only leaves can stop requiring grad; use detach()");
  RG_CHECK(!requires_grad || is_floating(data().dtype()), "set_requires_grad: only float tensors can require a ",
           "gradient, got ", dtype_name(data().dtype()));
  checked(impl_).requires_grad = requires_grad;
  return *this;
}

Variable& Variable::set_name(std::string name) {
  checked(impl_).name = std::move(name);
  return *this;
}

void Variable::backward(const Tensor& gradient, bool retain_graph) const {
  run_backward({*this}, {gradient}, retain_graph);
}

Variable Variable::detach() const { return Variable(data(), false); }

int Variable::add_grad_ready_hook(std::function<void(const Variable&)> hook) {
  RG_CHECK(is_leaf() && requires_grad(), "add_grad_ready_hook: '", name(),
           "' must be a leaf that requires grad (hooks fire when a leaf's gradient is final)");
  VariableImpl& impl = checked(impl_);
  impl.grad_ready_hooks.emplace_back(impl.next_hook_id, std::move(hook));
  return impl.next_hook_id++;
}

void Variable::remove_grad_ready_hook(int id) {
  auto& hooks = checked(impl_).grad_ready_hooks;
  std::erase_if(hooks, [id](const auto& entry) { return entry.first == id; });
}

// ---- differentiable views: the backward of a view maps the gradient back to the input shape ----

// `out` holds x's elements in a new shape; the gradient takes x's shape back.
static Variable reshaped(const char* name, const Variable& x, Tensor out) {
  return make_result(name, std::move(out), {x},
                     [old = x.shape()](const Tensor& g, const NeedsGrad&) { return Gradients{g.reshape(old)}; });
}

Variable Variable::view(const Shape& new_shape) const { return reshaped("view", *this, data().view(new_shape)); }

Variable Variable::reshape(const Shape& new_shape) const {
  return reshaped("reshape", *this, data().reshape(new_shape));
}

Variable Variable::flatten(int64_t start_dim, int64_t end_dim) const {
  return reshape(data().flatten(start_dim, end_dim).shape());
}

Variable Variable::permute(const std::vector<int64_t>& dims) const {
  std::vector<int64_t> inverse(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) inverse[wrap_dim(dims[i], dim(), "permute")] = static_cast<int64_t>(i);
  return make_result("permute", data().permute(dims), {*this},
                     [inverse](const Tensor& g, const NeedsGrad&) { return Gradients{g.permute(inverse)}; });
}

Variable Variable::transpose(int64_t dim0, int64_t dim1) const {
  return make_result("transpose", data().transpose(dim0, dim1), {*this},
                     [dim0, dim1](const Tensor& g, const NeedsGrad&) { return Gradients{g.transpose(dim0, dim1)}; });
}

Variable Variable::t() const {
  RG_CHECK(dim() == 2, "t: expects a 2-d variable, got shape ", shape_str(shape()));
  return transpose(0, 1);
}

Variable Variable::narrow(int64_t d, int64_t start, int64_t length) const {
  Shape old = shape();
  return make_result("narrow", data().narrow(d, start, length), {*this},
                     [old, d, start, length](const Tensor& g, const NeedsGrad&) {
                       Tensor full = Tensor::zeros(old, g.dtype(), g.device());
                       full.narrow(d, start, length).copy_(g);
                       return Gradients{full};
                     });
}

Variable Variable::select(int64_t d, int64_t index) const {
  int64_t wrapped = wrap_dim(d, dim(), "select");
  int64_t i = index < 0 ? index + size(wrapped) : index;
  return narrow(wrapped, i, 1).squeeze(wrapped);
}

Variable Variable::expand(const Shape& new_shape) const {
  Shape old = shape();
  return make_result("expand", data().expand(new_shape), {*this},
                     [old](const Tensor& g, const NeedsGrad&) { return Gradients{sum_to(g, old)}; });
}

Variable Variable::squeeze(int64_t d) const { return reshape(data().squeeze(d).shape()); }
Variable Variable::unsqueeze(int64_t d) const { return reshape(data().unsqueeze(d).shape()); }

Variable Variable::to(Device target) const {
  Device source = device();
  if (source == target) return *this;
  return make_result("to", data().to(target), {*this},
                     [source](const Tensor& g, const NeedsGrad&) { return Gradients{g.to(source)}; });
}

Variable Variable::to(DType target) const {
  DType source = dtype();
  if (source == target) return *this;
  return make_result("to", data().to(target), {*this},
                     [source](const Tensor& g, const NeedsGrad&) { return Gradients{g.to(source)}; });
}

// ---- modes ----

NoGradGuard::NoGradGuard() : previous_(tl_grad_enabled) { tl_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { tl_grad_enabled = previous_; }
bool is_grad_enabled() { return tl_grad_enabled; }

void set_anomaly_mode(bool enabled) { g_anomaly_mode = enabled; }
bool is_anomaly_mode() { return g_anomaly_mode; }

void check_finite(const char* op, const char* stage, const Tensor& t) {
  if (!t.defined() || !is_floating(t.dtype())) return;
  for (double v : t.to_vector<double>())
    RG_CHECK(std::isfinite(v), "anomaly: the ", stage, " of '", op, "' produced ", (std::isnan(v) ? "NaN" : "Inf"),
             " (shape ", shape_str(t.shape()), ")");
}

}  // namespace rg
