// ringgrad-demo: a tour of the tensor library on its own (it links only ringgrad::tensor):
// broadcasting, views, matmul, reductions, and a linear model fitted by gradient descent
// with its gradient derived by hand. autograd/ derives such gradients for every op; the
// training program and chapters/01_single_device train that way.
#include <cstdio>
#include <iostream>

#include "tensor/cuda.h"
#include "tensor/ops.h"
#include "tensor/thread_pool.h"

using namespace rg;

int main() {
  std::cout << "ringgrad tensor demo — " << get_num_threads() << " thread(s); CUDA: "
            << (cuda::is_available() ? "available" : cuda::unavailable_reason()) << "\n\n";

  Tensor x = arange(0.0, 6.0, 1.0).view({2, 3});
  std::cout << "x = arange(6).view({2, 3}):\n" << x << "\n";
  std::cout << "x.t() (a view, no copy):\n" << x.t() << "\n";
  std::cout << "x + [10, 20, 30] (broadcast):\n" << x + Tensor::from_vector<float>({10, 20, 30}, {3}) << "\n";
  std::cout << "sum over dim 1: " << sum(x, {1}) << "\n";
  std::cout << "x @ x.t():\n" << matmul(x, x.t()) << "\n\n";

  // Fit y = X w_true + noise by gradient descent on the mean squared error:
  //   loss = mean((X w - y)^2),  dloss/dw = 2/N X^T (X w - y)
  Generator gen(42);
  const int64_t n = 4096, d = 8;
  Tensor X = randn({n, d}, gen);
  Tensor w_true = randn({d, 1}, gen);
  Tensor y = matmul(X, w_true) + randn({n, 1}, gen, 0.0, 0.01);
  Tensor w = Tensor::zeros({d, 1});
  const double lr = 0.1;
  std::cout << "fitting a linear model (N=" << n << ", D=" << d << ") by gradient descent:\n";
  for (int step = 0; step <= 50; ++step) {
    Tensor residual = matmul(X, w) - y;
    Tensor grad = matmul(X.t(), residual) * (2.0 / n);
    w.sub_(grad, lr);
    if (step % 10 == 0) std::printf("  step %2d  loss %.6f\n", step, mean(square(residual)).item());
  }
  std::printf("max |w - w_true| = %.5f\n", max_abs_diff(w, w_true));
  return 0;
}
