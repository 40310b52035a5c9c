// Stepping stone 2: wait until backward is over, then pack every gradient into one flat
// buffer (one per dtype) and all-reduce that: one large message instead of one per
// parameter, so the per-message latency is paid once. Still no overlap with backward.
#include "parallel/flat_parameters.h"
#include "parallel/reducer.h"

namespace rg::parallel {

namespace {

// Last-registered first, the order the gradients became ready in (and the bucketed
// reducer's order, so bucket 0 starts with the same parameter in every reducer).
std::vector<Variable> in_reverse(const std::vector<NamedParameter>& parameters) {
  std::vector<Variable> reversed;
  for (auto it = parameters.rbegin(); it != parameters.rend(); ++it) reversed.push_back(it->param);
  return reversed;
}

class FlatReducer : public Reducer {
 public:
  FlatReducer(std::vector<NamedParameter> parameters, std::shared_ptr<ProcessGroup> pg, CommHook hook)
      : Reducer(std::move(parameters), std::move(pg), std::move(hook)),
        layout_(in_reverse(parameters_)),
        buffers_(layout_.make_buffers()) {}

  void gradient_ready(size_t) override {}  // nothing to do until the end
  size_t launches_per_backward() const override { return buffers_.size(); }

  void finish_backward() override {
    // All of it is time spent waiting for communication after backward: no overlap.
    ObservedSpan after_backward(observer_, "all-reduce after backward", "wait");
    layout_.pack_grads(buffers_);
    std::vector<std::shared_ptr<Work>> works;
    for (size_t b = 0; b < buffers_.size(); ++b) works.push_back(launch({b, buffers_[b], gradients(b)}));
    wait_for(works);
    layout_.unpack_grads(buffers_);
  }

  void reset() override {}  // nothing stays in flight: finish_backward waits for its all-reduces

 private:
  // Buffer b's parameters' slices, for a comm hook that works on gradients.
  std::vector<Tensor> gradients(size_t b) const {
    std::vector<Tensor> slices;
    for (size_t i = 0; i < layout_.parameters().size(); ++i)
      if (layout_.group_of(i) == b) slices.push_back(layout_.slice(buffers_, i));
    return slices;
  }

  FlatParameters layout_;
  std::vector<Tensor> buffers_;  // one per dtype
};

}  // namespace

std::unique_ptr<Reducer> make_flat_reducer(std::vector<NamedParameter> parameters, std::shared_ptr<ProcessGroup> pg,
                                           CommHook hook) {
  return std::make_unique<FlatReducer>(std::move(parameters), std::move(pg), std::move(hook));
}

}  // namespace rg::parallel
