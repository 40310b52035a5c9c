// The backward engine: iterative (no recursion anywhere, so a 100k-node chain is fine),
// dependency-counted, running ready nodes newest-first so leaf gradients become ready in
// reverse order of the forward pass. Nodes also destroy their graph iteratively.
#include <atomic>
#include <queue>
#include <unordered_map>

#include "autograd/node.h"
#include "tensor/ops.h"

namespace rg {

namespace {
std::atomic<uint64_t> g_next_sequence_number{0};

// Moves the edges that only this node owns onto `stack`, so the caller can destroy them
// one at a time instead of through a chain of nested destructors.
void steal_unique_edges(Node& node, std::vector<std::shared_ptr<Node>>& stack) {
  for (auto& edge : node.next)
    if (edge && edge.use_count() == 1) stack.push_back(std::move(edge));
  node.next.clear();
}
}  // namespace

Node::Node(const char* name, BackwardFn backward)
    : name_(name), backward_(std::move(backward)), sequence_number_(g_next_sequence_number++) {}

Node::~Node() {
  std::vector<std::shared_ptr<Node>> stack;
  steal_unique_edges(*this, stack);
  while (!stack.empty()) {
    std::shared_ptr<Node> node = std::move(stack.back());
    stack.pop_back();
    steal_unique_edges(*node, stack);
  }  // `node` dies here with no edges left, so its destructor does not recurse
}

Gradients Node::apply(const Tensor& grad_output) {
  RG_CHECK(!released_, "backward: trying to backward through the graph a second time (at '", name_,
           "'); its saved tensors were freed. Pass retain_graph=true to the first backward.");
  NeedsGrad needs(next.size());
  for (size_t i = 0; i < next.size(); ++i) needs[i] = next[i] != nullptr;
  return backward_(grad_output, needs);
}

void Node::release() {
  backward_ = nullptr;  // frees the captured tensors
  released_ = true;
}

AccumulateGrad::AccumulateGrad(std::shared_ptr<VariableImpl> leaf) : Node("AccumulateGrad", nullptr), leaf_(std::move(leaf)) {}

Gradients AccumulateGrad::apply(const Tensor& grad_output) {
  Tensor& grad = leaf_->grad;
  if (grad.defined()) {
    grad.add_(grad_output);  // in place: optimizers and DDP buckets hold on to this buffer
  } else {
    grad = grad_output.clone();  // the incoming tensor may be shared with other gradients
  }
  Variable leaf(leaf_);
  for (auto& [id, hook] : std::vector(leaf_->grad_ready_hooks)) hook(leaf);
  return {};
}

// The node that collects a leaf's gradient; one per leaf, shared by every use of it.
static std::shared_ptr<Node> grad_accumulator(const Variable& leaf) {
  auto& impl = *leaf.impl();
  if (auto existing = impl.grad_accumulator.lock()) return existing;
  auto node = std::make_shared<AccumulateGrad>(leaf.impl());
  impl.grad_accumulator = node;
  return node;
}

static std::shared_ptr<Node> edge_to(const Variable& input) {
  if (!input.defined() || !input.requires_grad()) return nullptr;
  return input.is_leaf() ? grad_accumulator(input) : input.grad_fn();
}

Variable make_result(const char* name, Tensor output, const std::vector<Variable>& inputs, BackwardFn backward) {
  if (is_anomaly_mode()) check_finite(name, "forward", output);
  Variable result(std::move(output));
  if (!is_grad_enabled()) return result;
  bool any = false;
  for (const Variable& input : inputs) any = any || (input.defined() && input.requires_grad());
  if (!any) return result;
  auto node = std::make_shared<Node>(name, std::move(backward));
  for (const Variable& input : inputs) node->next.push_back(edge_to(input));
  result.impl()->requires_grad = true;
  result.impl()->grad_fn = std::move(node);
  return result;
}

namespace {

// Counts, for every node reachable from the roots, how many edges lead into it.
std::unordered_map<Node*, int> count_dependencies(const std::vector<Node*>& roots) {
  std::unordered_map<Node*, int> dependencies;
  std::vector<Node*> stack = roots;
  std::unordered_map<Node*, bool> seen;
  for (Node* root : roots) seen[root] = true;
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    for (auto& edge : node->next) {
      if (!edge) continue;
      dependencies[edge.get()] += 1;
      if (!seen[edge.get()]) {
        seen[edge.get()] = true;
        stack.push_back(edge.get());
      }
    }
  }
  return dependencies;
}

struct NewestFirst {
  bool operator()(Node* a, Node* b) const { return a->sequence_number() < b->sequence_number(); }
};

}  // namespace

void run_backward(const std::vector<Variable>& roots, const std::vector<Tensor>& gradients, bool retain_graph) {
  std::unordered_map<Node*, Tensor> pending;  // summed gradient waiting at each node
  std::vector<Node*> root_nodes;              // each once, even when listed twice
  std::vector<std::shared_ptr<Node>> keep_alive;
  for (size_t i = 0; i < roots.size(); ++i) {
    const Variable& root = roots[i];
    RG_CHECK(root.requires_grad(), "backward: the variable does not require grad (no parameter or input with ",
             "requires_grad=true was used to compute it)");
    Tensor gradient = gradients[i];
    if (!gradient.defined()) {
      RG_CHECK(root.numel() == 1, "backward: a gradient must be given for a non-scalar output of shape ",
               shape_str(root.shape()));
      gradient = ones_like(root.data());
    }
    RG_CHECK(gradient.shape() == root.shape(), "backward: gradient of shape ", shape_str(gradient.shape()),
             " for an output of shape ", shape_str(root.shape()));
    std::shared_ptr<Node> node = edge_to(root);
    keep_alive.push_back(node);
    Tensor& slot = pending[node.get()];
    if (!slot.defined()) root_nodes.push_back(node.get());
    slot = slot.defined() ? slot + gradient : gradient;
  }

  // Every reachable node becomes ready exactly once, when the last edge into it has been
  // followed, and is then processed whether or not a gradient reached it.
  std::unordered_map<Node*, int> dependencies = count_dependencies(root_nodes);
  std::priority_queue<Node*, std::vector<Node*>, NewestFirst> ready;
  for (Node* root : root_nodes)
    if (dependencies[root] == 0) ready.push(root);
  std::vector<Node*> processed;
  while (!ready.empty()) {
    Node* node = ready.top();
    ready.pop();
    processed.push_back(node);
    // A node that no gradient reached (every path to it went through a backward that
    // returned none for it, e.g. a stop-gradient) passes nothing on and is not applied,
    // so a leaf's hooks fire only for a gradient. It must still release its inputs below:
    // otherwise their counts never reach zero and gradients that reached them by other
    // paths are lost.
    Gradients grads;
    if (auto it = pending.find(node); it != pending.end()) {
      Tensor grad_output = std::move(it->second);
      pending.erase(it);
      grads = node->apply(grad_output);
    }
    for (size_t i = 0; i < node->next.size(); ++i) {
      Node* input = node->next[i].get();
      if (!input) continue;
      if (i < grads.size() && grads[i].defined()) {
        if (is_anomaly_mode()) check_finite(node->name(), "backward", grads[i]);
        Tensor& slot = pending[input];
        slot = slot.defined() ? slot + grads[i] : grads[i];
      }
      if (--dependencies[input] == 0) ready.push(input);
    }
  }
  if (!retain_graph)
    for (Node* node : processed) node->release();
}

}  // namespace rg
