// The graph: each differentiable op that ran with grad mode on leaves one Node holding its
// backward closure (with the tensors it saved) and edges to the nodes of its inputs.
// Leaves that require a gradient end in an AccumulateGrad node.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "autograd/variable.h"

namespace rg {

// Which inputs need a gradient, so a backward can skip work nobody will use.
using NeedsGrad = std::vector<bool>;
// One gradient per input, in input order; an undefined Tensor means "no gradient".
using Gradients = std::vector<Tensor>;
using BackwardFn = std::function<Gradients(const Tensor& grad_output, const NeedsGrad& needs)>;

class Node {
 public:
  Node(const char* name, BackwardFn backward);
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  const char* name() const { return name_; }
  // Creation order: the engine runs later nodes first, so gradients become ready in
  // reverse order of the forward pass.
  uint64_t sequence_number() const { return sequence_number_; }
  virtual Gradients apply(const Tensor& grad_output);
  // Frees saved tensors; a later apply() is an error ("backward twice").
  virtual void release();

  std::vector<std::shared_ptr<Node>> next;  // one per input; null when it needs no gradient

 protected:
  const char* name_;
  BackwardFn backward_;
  bool released_ = false;
  uint64_t sequence_number_;
};

// The sink of a leaf: adds the incoming gradient to the leaf's grad and fires its
// grad-ready hooks. The engine applies it at most once per backward, when every edge into
// it has been followed, and not at all when none of them brought a gradient.
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(std::shared_ptr<VariableImpl> leaf);
  Gradients apply(const Tensor& grad_output) override;
  void release() override {}

 private:
  std::shared_ptr<VariableImpl> leaf_;
};

// Builds the result Variable of an op: when grad mode is on and any input requires a
// gradient, records a Node called `name` with `backward` and edges to the inputs.
Variable make_result(const char* name, Tensor output, const std::vector<Variable>& inputs, BackwardFn backward);

// Runs backward from `roots` (the engine; see engine.cpp).
void run_backward(const std::vector<Variable>& roots, const std::vector<Tensor>& gradients, bool retain_graph);

// Anomaly mode check: throws naming `op` and `stage` when t has a NaN or Inf.
void check_finite(const char* op, const char* stage, const Tensor& t);

}  // namespace rg
