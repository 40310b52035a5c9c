// The relay all-reduce: the first all-reduce a student writes. Correct, but every hop
// waits for the one before it and carries the whole buffer, so it takes 2(N-1) message
// times where the ring takes 2(N-1)/N.
#include "parallel/algorithms.h"
#include "tensor/ops.h"

namespace rg::parallel {

void relay_all_reduce(PointToPoint& p2p, const Tensor& flat, ReduceOp op) {
  const int n = p2p.size(), rank = p2p.rank();
  if (n == 1) return;
  const int right = (rank + 1) % n, left = (rank + n - 1) % n;
  // Relay 0 -> 1 -> ... -> N-1: each rank adds its buffer to the running total and passes it on.
  if (rank > 0) {
    Tensor incoming = empty_like(flat);
    p2p.recv(incoming, left);
    reduce_into(flat, incoming, op);
  }
  if (rank == n - 1 && op == ReduceOp::avg) divide_by(flat, n);
  if (rank < n - 1) p2p.send(flat, right);
  // The total goes once more around the ring: N-1 -> 0 -> 1 -> ... -> N-2.
  if (rank == n - 1) {
    p2p.send(flat, right);
    return;
  }
  p2p.recv(flat, left);
  if (rank < n - 2) p2p.send(flat, right);
}

}  // namespace rg::parallel
