// Wrong on purpose (labs/README.md, "Wrong solutions"): the centre sums but never divides by
// N, so ReduceOp::avg returns the sum.
// BEGIN SOLUTION lab4.star_all_reduce
void star_all_reduce(PointToPoint& p2p, const Tensor& flat, ReduceOp op) {
  const int n = p2p.size();
  if (n == 1) return;
  if (p2p.rank() != 0) {
    p2p.send(flat, 0);
    p2p.recv(flat, 0);
    return;
  }
  // The centre: one worker after another, in rank order (so the sum is the serial one),
  // then the result to everyone at once.
  Tensor incoming = empty_like(flat);
  std::vector<int> workers;
  for (int worker = 1; worker < n; ++worker) {
    p2p.recv(incoming, worker);
    reduce_into(flat, incoming, op);
    workers.push_back(worker);
  }
  p2p.send_to_all(flat, workers);
}
// END SOLUTION
