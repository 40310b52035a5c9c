// Wrong on purpose (labs/README.md, "Wrong solutions"): the target's one-hot is added, not
// subtracted, so the gradient is softmax + onehot instead of softmax - onehot.
// BEGIN SOLUTION lab1.cross_entropy_backward
static Gradients cross_entropy_backward(const Tensor& g, const Tensor& log_probs, const Tensor& targets,
                                        double scale) {
  Tensor grad = rg::exp(log_probs);
  scatter_add_(grad, 1, targets, Tensor::full(targets.shape(), 1.0, grad.dtype(), grad.device()));
  grad.mul_(g * scale);
  return Gradients{grad};
}
// END SOLUTION
