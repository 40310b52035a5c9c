// Module tree operations. Every walk is over a small tree of modules (depth = nesting of
// the model's definition), so plain recursion is fine here, unlike the autograd graph.
#include "nn/module.h"

#include <set>
#include <typeinfo>

#include "autograd/functions.h"

namespace rg::nn {

namespace {
thread_local bool tl_init_skipped = false;
}  // namespace

InitSkipGuard::InitSkipGuard() : previous_(tl_init_skipped) { tl_init_skipped = true; }
InitSkipGuard::~InitSkipGuard() { tl_init_skipped = previous_; }
bool is_init_skipped() { return tl_init_skipped; }

void Module::check_new_name(const std::string& name) const {
  RG_CHECK(!name.empty() && name.find('.') == std::string::npos, "Module: invalid name '", name,
           "' (names must be non-empty and contain no '.')");
  auto taken = [&](const auto& entries) {
    for (const auto& entry : entries)
      if (entry.first == name) return true;
    return false;
  };
  RG_CHECK(!taken(parameters_) && !taken(buffers_) && !taken(children_), "Module: the name '", name,
           "' is already registered");
}

Variable Module::register_parameter(std::string name, Tensor data, bool requires_grad) {
  check_new_name(name);
  Variable parameter(std::move(data), requires_grad);
  parameter.set_name(name);
  parameters_.emplace_back(std::move(name), parameter);
  return parameter;
}

Tensor& Module::register_buffer(std::string name, Tensor data) {
  check_new_name(name);
  buffers_.emplace_back(std::move(name), std::move(data));
  return buffers_.back().second;
}

void Module::add_child(std::string name, std::shared_ptr<Module> child) {
  RG_CHECK(child != nullptr, "register_module: module '", name, "' is null");
  check_new_name(name);
  child->set_names(name + ".");
  children_.emplace_back(std::move(name), std::move(child));
}

void Module::set_names(const std::string& prefix) {
  for (auto& [name, parameter] : parameters_) parameter.set_name(prefix + name);
  for (auto& [name, child] : children_) child->set_names(prefix + name + ".");
}

Variable& Module::parameter(const std::string& name) {
  for (auto& entry : parameters_)
    if (entry.first == name) return entry.second;
  RG_THROW("Module: no parameter named '", name, "'");
}

Tensor& Module::buffer(const std::string& name) {
  for (auto& entry : buffers_)
    if (entry.first == name) return entry.second;
  RG_THROW("Module: no buffer named '", name, "'");
}

std::vector<std::pair<std::string, Variable>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Variable>> out = parameters_;
  for (const auto& [prefix, child] : children_)
    for (auto& [name, parameter] : child->named_parameters()) out.emplace_back(prefix + "." + name, parameter);
  return out;
}

std::vector<Variable> Module::parameters() const {
  std::vector<Variable> out;
  std::set<const VariableImpl*> seen;  // a parameter shared by two layers is optimised once
  for (auto& [name, parameter] : named_parameters())
    if (seen.insert(parameter.impl().get()).second) out.push_back(parameter);
  return out;
}

int64_t Module::parameter_count() const {
  int64_t count = 0;
  for (const Variable& p : parameters()) count += p.data().numel();
  return count;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers() const {
  std::vector<std::pair<std::string, Tensor>> out = buffers_;
  for (const auto& [prefix, child] : children_)
    for (auto& [name, buffer] : child->named_buffers()) out.emplace_back(prefix + "." + name, buffer);
  return out;
}

void Module::zero_grad(bool set_to_none) {
  for (Variable& parameter : parameters()) {
    if (set_to_none) {
      parameter.set_grad(Tensor());
    } else if (parameter.grad().defined()) {
      parameter.grad().zero_();
    }
  }
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

template <class Fn>
void Module::for_each_tensor(Fn&& fn) {
  for (auto& [name, parameter] : parameters_) {
    fn(parameter.impl()->data);
    if (parameter.grad().defined()) fn(parameter.impl()->grad);
  }
  for (auto& [name, buffer] : buffers_) fn(buffer);
  for (auto& [name, child] : children_) child->for_each_tensor(fn);
}

void Module::to(Device device) {
  for_each_tensor([device](Tensor& t) { t = t.to(device); });
}

void Module::to(DType dtype) {
  // Integer buffers (counters) keep their type, as PyTorch's Module.to(dtype).
  for_each_tensor([dtype](Tensor& t) {
    if (is_floating(t.dtype())) t = t.to(dtype);
  });
}

StateDict Module::state_dict() const {
  StateDict out;
  for (auto& [name, parameter] : named_parameters()) out[name] = parameter.data();
  for (auto& [name, buffer] : named_buffers()) out[name] = buffer;
  return out;
}

void Module::check_state_dict(const StateDict& state, bool strict) const {
  StateDict own = state_dict();
  for (const auto& [name, target] : own) {
    auto found = state.find(name);
    RG_CHECK(found != state.end() || !strict, "load_state_dict: missing entry '", name, "' of shape ",
             shape_str(target.shape()));
    if (found == state.end()) continue;
    RG_CHECK(found->second.shape() == target.shape(), "load_state_dict: '", name, "' has shape ",
             shape_str(found->second.shape()), " in the state but ", shape_str(target.shape()), " in the model");
    RG_CHECK(found->second.dtype() == target.dtype(), "load_state_dict: '", name, "' is ",
             dtype_name(found->second.dtype()), " in the state but ", dtype_name(target.dtype()), " in the model");
  }
  if (!strict) return;
  for (const auto& [name, value] : state)
    RG_CHECK(own.count(name), "load_state_dict: unexpected entry '", name, "' of shape ", shape_str(value.shape()),
             " (the model has no such parameter or buffer)");
}

void Module::load_state_dict(const StateDict& state, bool strict) {
  check_state_dict(state, strict);
  for (const auto& [name, target] : state_dict()) {
    auto found = state.find(name);
    if (found != state.end()) target.copy_(found->second);
  }
}

std::shared_ptr<Module> Module::clone_impl() const {
  RG_THROW("clone: ", typeid(*this).name(), " is not clonable; derive it from nn::Cloneable<Self> instead of ",
           "nn::Module");
}

std::shared_ptr<Module> Module::clone() const {
  std::shared_ptr<Module> copy = clone_impl();
  copy->copy_state_from(*this);
  return copy;
}

// The fresh copy has the same structure, so entries correspond one to one.
void Module::copy_state_from(const Module& source) {
  RG_CHECK(parameters_.size() == source.parameters_.size() && buffers_.size() == source.buffers_.size() &&
               children_.size() == source.children_.size(),
           "clone: the fresh copy of ", typeid(source).name(), " has a different structure than the original");
  for (size_t i = 0; i < parameters_.size(); ++i) {
    const Variable& from = source.parameters_[i].second;
    VariableImpl& to = *parameters_[i].second.impl();
    to.data = from.data().clone();
    to.grad = Tensor();
    to.requires_grad = from.requires_grad();
  }
  for (size_t i = 0; i < buffers_.size(); ++i) buffers_[i].second = source.buffers_[i].second.clone();
  for (size_t i = 0; i < children_.size(); ++i) children_[i].second->copy_state_from(*source.children_[i].second);
  training_ = source.training_;
}

}  // namespace rg::nn
