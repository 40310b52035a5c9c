// Module: the base of every layer and model. It owns named parameters (leaf Variables),
// buffers (Tensors such as BatchNorm's running statistics) and child modules, and offers
// PyTorch's API over the whole tree: parameters, zero_grad, train/eval, to(device),
// state_dict/load_state_dict and a deep clone() (for DataParallel replicas).
#pragma once
#include <concepts>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "autograd/variable.h"

namespace rg::nn {

// Parameters and buffers by dotted name ("fc1.weight", "bn.running_mean"). The tensors
// share storage with the module: they are what a checkpoint writes.
using StateDict = std::map<std::string, Tensor>;

class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(Module&&) = default;
  Module& operator=(Module&&) = default;
  // Copies would share parameters silently; use clone() for a deep copy.
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The single-input interface; operator() calls it.
  virtual Variable forward(const Variable& x) = 0;
  Variable operator()(const Variable& x) { return forward(x); }

  // ---- the tree ----
  std::vector<Variable> parameters() const;  // each shared parameter once
  int64_t parameter_count() const;            // their elements, each shared parameter once
  // Registration order, depth-first: a module's own parameters, then its children's.
  std::vector<std::pair<std::string, Variable>> named_parameters() const;
  std::vector<std::pair<std::string, Tensor>> named_buffers() const;
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& children() const { return children_; }
  Variable& parameter(const std::string& name);  // own parameters only; throws naming the module
  Tensor& buffer(const std::string& name);        // own buffers only

  // ---- whole-tree operations ----
  // Fills existing gradients with 0 in place (DDP and optimizers hold those buffers);
  // set_to_none drops them instead.
  void zero_grad(bool set_to_none = false);
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  // Moves (or casts) every parameter, gradient and buffer in place: the Variables keep
  // their identity, so optimizers built before the move still see the moved data.
  void to(Device device);
  void to(DType dtype);

  StateDict state_dict() const;
  // Copies values into the existing tensors, all or nothing: throws naming the entry on a
  // shape or dtype mismatch (an int32 tensor is not a float32 weight: no silent cast) and,
  // with strict, on missing or unexpected entries (check_state_dict).
  void load_state_dict(const StateDict& state, bool strict = true);
  void check_state_dict(const StateDict& state, bool strict = true) const;

  // A deep copy: new Variables and buffers holding copies of the data, same training
  // mode. Layers and models get it by deriving from nn::Cloneable<Self> (see below).
  std::shared_ptr<Module> clone() const;

 protected:
  // Registers a leaf Variable named `name` (requires_grad on) and returns it.
  Variable register_parameter(std::string name, Tensor data, bool requires_grad = true);
  Tensor& register_buffer(std::string name, Tensor data);
  // Registers a child; takes a module by value (`nn::Linear(784, 256)`) or a shared_ptr.
  template <class M>
  std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> module) {
    add_child(std::move(name), module);
    return module;
  }
  template <class M>
    requires std::derived_from<std::remove_cvref_t<M>, Module> && (!std::is_lvalue_reference_v<M>)
  std::shared_ptr<std::remove_cvref_t<M>> register_module(std::string name, M&& module) {
    return register_module(std::move(name), std::make_shared<std::remove_cvref_t<M>>(std::move(module)));
  }

  // A fresh module of the same class and structure (parameters not yet copied).
  virtual std::shared_ptr<Module> clone_impl() const;

 private:
  void add_child(std::string name, std::shared_ptr<Module> child);
  void check_new_name(const std::string& name) const;
  void set_names(const std::string& prefix);  // gives parameters their dotted names
  void copy_state_from(const Module& source);
  template <class Fn>
  void for_each_tensor(Fn&& fn);  // fn(Tensor&) over own parameters, grads and buffers

  std::vector<std::pair<std::string, Variable>> parameters_;
  std::vector<std::pair<std::string, Tensor>> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

// While an InitSkipGuard lives, nn::init functions leave tensors untouched: clone()
// builds its fresh copy under one, so cloning draws no random numbers.
class InitSkipGuard {
 public:
  InitSkipGuard();
  ~InitSkipGuard();
  InitSkipGuard(const InitSkipGuard&) = delete;
  InitSkipGuard& operator=(const InitSkipGuard&) = delete;

 private:
  bool previous_;
};
bool is_init_skipped();

// Derive from Cloneable<Self> instead of Module to make a class clonable:
//   struct MyModel : nn::Cloneable<MyModel> { ... };
// clone() builds a fresh Self — from `self.options()` when the class has one (the
// layers), else default-constructed (user models) — and copies the state into it.
template <class Derived>
class Cloneable : public Module {
 protected:
  std::shared_ptr<Module> clone_impl() const override {
    InitSkipGuard skip;
    if constexpr (requires(const Derived& self) { self.options(); }) {
      return std::make_shared<Derived>(static_cast<const Derived&>(*this).options());
    } else {
      return std::make_shared<Derived>();
    }
  }
};

}  // namespace rg::nn
