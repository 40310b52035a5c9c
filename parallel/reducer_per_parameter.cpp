// Stepping stone 1: wait until backward is over, then all-reduce each parameter's gradient
// on its own. The version a student writes first: correct, but one message per parameter
// (the MLP's six, ResNet's dozens) and no overlap with backward: the trace shows every
// all-reduce after the last gradient.
#include "parallel/reducer.h"

namespace rg::parallel {

namespace {

class PerParameterReducer : public Reducer {
 public:
  PerParameterReducer(std::vector<NamedParameter> parameters, std::shared_ptr<ProcessGroup> pg, CommHook hook)
      : Reducer(std::move(parameters), std::move(pg), std::move(hook)) {}

  void gradient_ready(size_t) override {}  // nothing to do until the end
  size_t launches_per_backward() const override { return parameters_.size(); }

  // BEGIN SOLUTION lab5.per_parameter_finish_backward
  void finish_backward() override {
    // All of it is time spent waiting for communication after backward: no overlap.
    ObservedSpan after_backward(observer_, "all-reduce after backward", "wait");
    // Last-registered first, as the gradients became ready: bucket 0 is the last parameter.
    for (size_t k = 0; k < parameters_.size(); ++k) {
      Tensor grad = gradient_of(parameters_.size() - 1 - k);
      std::vector<std::shared_ptr<Work>> work{launch({k, grad.view({grad.numel()}), {grad}})};
      wait_for(work);
    }
  }
  // END SOLUTION

  void reset() override {}  // nothing stays in flight: finish_backward waits for each all-reduce
};

}  // namespace

std::unique_ptr<Reducer> make_per_parameter_reducer(std::vector<NamedParameter> parameters,
                                                    std::shared_ptr<ProcessGroup> pg, CommHook hook) {
  return std::make_unique<PerParameterReducer>(std::move(parameters), std::move(pg), std::move(hook));
}

}  // namespace rg::parallel
