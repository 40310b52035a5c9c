// The optimised ring: the same reduce-scatter and all-gather as ring.cpp, but each
// reduce-scatter step sends its chunk in kRingPieceBytes pieces through two landing
// buffers, so that piece p+1 is on the wire while piece p is being added. A chunk of a
// few MiB or less is a single piece, and then this is exactly ring.cpp's step.
#include <algorithm>

#include "parallel/algorithms.h"

namespace rg::parallel {

namespace {

std::vector<Tensor> split_pieces(const Tensor& t, int64_t piece) {
  std::vector<Tensor> pieces;
  for (int64_t begin = 0; begin < t.numel() || pieces.empty(); begin += piece)
    pieces.push_back(t.narrow(0, begin, std::min(piece, t.numel() - begin)));
  return pieces;
}

// Sends `out` to `to` while receiving a chunk from `from` and folding it into `acc`, in
// pieces: the receive of piece p+1 is started before piece p is added.
void send_recv_reduce(PointToPoint& p2p, const Tensor& out, int to, const Tensor& acc, int from, ReduceOp op) {
  const int64_t piece = std::max<int64_t>(1, kRingPieceBytes / static_cast<int64_t>(dtype_size(acc.dtype())));
  const std::vector<Tensor> outgoing = split_pieces(out, piece), incoming = split_pieces(acc, piece);
  const int64_t landing_size = std::min(piece, acc.numel());
  const Tensor landing[2] = {Tensor::empty({landing_size}, acc.dtype(), acc.device()),
                             Tensor::empty({landing_size}, acc.dtype(), acc.device())};
  auto landing_for = [&](size_t p) { return landing[p % 2].narrow(0, 0, incoming[p].numel()); };
  auto start_piece = [&](size_t p) {
    std::vector<P2POp> ops;
    if (p < incoming.size()) ops.push_back({P2POp::recv, landing_for(p), from});
    if (p < outgoing.size()) ops.push_back({P2POp::send, outgoing[p], to});
    return p2p.start(ops);
  };
  const size_t count = std::max(outgoing.size(), incoming.size());
  auto request = start_piece(0);
  for (size_t p = 0; p < count; ++p) {
    p2p.wait(*request);
    if (p + 1 < count) request = start_piece(p + 1);
    if (p < incoming.size()) reduce_into(incoming[p], landing_for(p), op);
  }
}

int wrap(int chunk, int n) { return ((chunk % n) + n) % n; }

}  // namespace

void pipelined_ring_all_reduce(PointToPoint& p2p, const Tensor& flat, ReduceOp op) {
  const int n = p2p.size(), rank = p2p.rank();
  const int right = (rank + 1) % n, left = (rank + n - 1) % n;
  for (int step = 0; step < n - 1; ++step)  // reduce-scatter, as ring_reduce_scatter
    send_recv_reduce(p2p, chunk_of(flat, wrap(rank - step - 1, n), n), right, chunk_of(flat, wrap(rank - step - 2, n), n),
                     left, op);
  if (op == ReduceOp::avg) divide_by(chunk_of(flat, rank, n), n);
  ring_all_gather(p2p, flat, nullptr);
}

}  // namespace rg::parallel
