// Ring, naive ring and star all-reduce over point-to-point messages. Chunks and pieces are
// views (narrow) of the caller's buffer, so nothing is copied except what arrives.
#include "parallel/algorithms.h"

#include <algorithm>
#include <mutex>
#include <ostream>
#include <sstream>

#include "tensor/ops.h"

namespace rg::parallel {

namespace {
std::vector<Tensor> split_pieces(const Tensor& t, int64_t piece) {
  std::vector<Tensor> pieces;
  for (int64_t begin = 0; begin < t.numel() || pieces.empty(); begin += piece)
    pieces.push_back(t.narrow(0, begin, std::min(piece, t.numel() - begin)));
  return pieces;
}

Tensor chunk_of(const Tensor& flat, int chunk, int n) {
  int64_t begin = chunk_begin(flat.numel(), chunk, n);
  return flat.narrow(0, begin, chunk_begin(flat.numel(), chunk + 1, n) - begin);
}

// One line of the ring's trace; whole lines under a lock so ranks on threads do not interleave.
void trace_step(std::ostream& out, const char* phase, int step, int steps, int rank, int send_chunk, int to,
                int recv_chunk, int from, const Tensor& flat, int n) {
  static std::mutex mutex;
  auto range = [&](int c) {
    std::ostringstream r;
    r << "chunk " << c << " [" << chunk_begin(flat.numel(), c, n) << "," << chunk_begin(flat.numel(), c + 1, n) << ")";
    Tensor view = chunk_of(flat, c, n);
    if (view.device().is_cpu() && view.numel() <= 8) {
      r << " {";
      for (double v : view.to_vector<double>()) r << " " << v;
      r << " }";
    }
    return r.str();
  };
  std::ostringstream line;
  line << phase << " step " << step + 1 << "/" << steps << "  rank " << rank << ": sends " << range(send_chunk)
       << " to rank " << to << ", receives chunk " << recv_chunk << " from rank " << from << "\n";
  std::lock_guard lock(mutex);
  out << line.str() << std::flush;
}
}  // namespace

int64_t chunk_begin(int64_t length, int chunk, int n) { return length * chunk / n; }

std::unique_ptr<P2PRequest> PointToPoint::start(const std::vector<P2POp>& ops) {
  for (const auto& op : ops) (op.kind == P2POp::send ? traffic_.bytes_sent : traffic_.bytes_received) += op.buffer.nbytes();
  return comm_.start_p2p(ops, Channel::collective, ctx_.seq);
}

void PointToPoint::send_recv(const Tensor& out, int to, const Tensor& in, int from) {
  std::vector<P2POp> ops;
  if (in.defined()) ops.push_back({P2POp::recv, in, from});
  if (out.defined()) ops.push_back({P2POp::send, out, to});
  start(ops)->wait(ctx_);
}

void PointToPoint::send_to_all(const Tensor& out, const std::vector<int>& to) {
  std::vector<P2POp> ops;
  for (int peer : to) ops.push_back({P2POp::send, out, peer});
  start(ops)->wait(ctx_);
}

void PointToPoint::send_recv_reduce(const Tensor& out, int to, const Tensor& acc, int from, ReduceOp op) {
  const int64_t piece = std::max<int64_t>(1, kRingPieceBytes / static_cast<int64_t>(dtype_size(acc.dtype())));
  std::vector<Tensor> outgoing = split_pieces(out, piece), incoming = split_pieces(acc, piece);
  // Two landing buffers: piece p+1 arrives in one while piece p is reduced from the other.
  Tensor scratch[2] = {Tensor::empty({std::min(piece, acc.numel())}, acc.dtype(), acc.device()),
                       Tensor::empty({std::min(piece, acc.numel())}, acc.dtype(), acc.device())};
  auto landing = [&](size_t p) { return scratch[p % 2].narrow(0, 0, incoming[p].numel()); };
  auto start_piece = [&](size_t p) {
    std::vector<P2POp> ops;
    if (p < incoming.size()) ops.push_back({P2POp::recv, landing(p), from});
    if (p < outgoing.size()) ops.push_back({P2POp::send, outgoing[p], to});
    return start(ops);
  };
  const size_t count = std::max(outgoing.size(), incoming.size());
  auto request = start_piece(0);
  for (size_t p = 0; p < count; ++p) {
    request->wait(ctx_);
    if (p + 1 < count) request = start_piece(p + 1);
    if (p < incoming.size()) reduce_into(incoming[p], landing(p), op);
  }
}

void ring_all_reduce(PointToPoint& p2p, const Tensor& flat, ReduceOp op, std::ostream* trace) {
  // BEGIN SOLUTION lab3.ring_allreduce
  const int n = p2p.size(), rank = p2p.rank();
  const int right = (rank + 1) % n, left = (rank + n - 1) % n;
  auto wrap = [n](int c) { return ((c % n) + n) % n; };
  // Reduce-scatter: at step s, rank r passes chunk r-s (its partial sum so far) to the
  // right and folds chunk r-s-1 from the left into its own copy. After N-1 steps rank r
  // holds the complete reduction of chunk r+1.
  for (int step = 0; step < n - 1; ++step) {
    int send_chunk = wrap(rank - step), recv_chunk = wrap(rank - step - 1);
    if (trace) trace_step(*trace, "reduce-scatter", step, n - 1, rank, send_chunk, right, recv_chunk, left, flat, n);
    p2p.send_recv_reduce(chunk_of(flat, send_chunk, n), right, chunk_of(flat, recv_chunk, n), left, op);
  }
  if (op == ReduceOp::avg) divide_by(chunk_of(flat, wrap(rank + 1), n), n);
  // All-gather: the complete chunks travel once more around the ring, overwriting.
  for (int step = 0; step < n - 1; ++step) {
    int send_chunk = wrap(rank + 1 - step), recv_chunk = wrap(rank - step);
    if (trace) trace_step(*trace, "all-gather", step, n - 1, rank, send_chunk, right, recv_chunk, left, flat, n);
    p2p.send_recv(chunk_of(flat, send_chunk, n), right, chunk_of(flat, recv_chunk, n), left);
  }
  // END SOLUTION
}

void naive_ring_all_reduce(PointToPoint& p2p, const Tensor& flat, ReduceOp op) {
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

void star_all_reduce(PointToPoint& p2p, const Tensor& flat, ReduceOp op) {
  const int n = p2p.size();
  if (n == 1) return;
  if (p2p.rank() != 0) {
    p2p.send(flat, 0);
    p2p.recv(flat, 0);
    return;
  }
  // The server: one worker after another, in rank order, then the result to everyone.
  Tensor incoming = empty_like(flat);
  std::vector<int> workers;
  for (int worker = 1; worker < n; ++worker) {
    p2p.recv(incoming, worker);
    reduce_into(flat, incoming, op);
    workers.push_back(worker);
  }
  if (op == ReduceOp::avg) divide_by(flat, n);
  p2p.send_to_all(flat, workers);
}

}  // namespace rg::parallel
