// Wrong on purpose (labs/README.md, "Wrong solutions"): the landing buffer holds length / N
// elements, rounded down, so a chunk of a length N does not divide is one element too long for it.
// BEGIN SOLUTION lab3.ring_reduce_scatter
void ring_reduce_scatter(PointToPoint& p2p, const Tensor& flat, ReduceOp op, std::ostream* trace) {
  const int n = p2p.size(), rank = p2p.rank();
  const int right = (rank + 1) % n, left = (rank + n - 1) % n;
  // Chunk c starts at rank c+1 and travels once around the ring, each rank adding its own
  // copy, until it arrives complete at rank c. So at step s rank r passes on chunk r-s-1
  // (its own copy at s = 0, else the partial sum it received at step s-1) and receives
  // chunk r-s-2, which it adds to its own copy.
  const int64_t largest_chunk = flat.numel() / n;
  Tensor landing = Tensor::empty({largest_chunk}, flat.dtype(), flat.device());
  for (int step = 0; step < n - 1; ++step) {
    const int send_chunk = wrap(rank - step - 1, n), recv_chunk = wrap(rank - step - 2, n);
    trace_step(trace, "reduce-scatter", step, flat, rank, n, send_chunk, recv_chunk);
    const Tensor incoming = chunk_of(flat, recv_chunk, n);
    const Tensor arrived = landing.narrow(0, 0, incoming.numel());
    p2p.send_recv(chunk_of(flat, send_chunk, n), right, arrived, left);
    reduce_into(incoming, arrived, op);
  }
}
// END SOLUTION
