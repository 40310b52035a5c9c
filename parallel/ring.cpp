// The ring all-reduce as the lecture draws it: in every step each rank sends one chunk to
// its right neighbour and receives one from its left, then adds what arrived. Chunks are
// views (narrow) of the caller's buffer; only the incoming chunk needs a landing buffer.
#include <mutex>
#include <ostream>
#include <sstream>

#include "parallel/algorithms.h"

namespace rg::parallel {

namespace {

// One line of the trace, e.g. "reduce-scatter step 1/3  rank 0: sends chunk 3 [9,12) { 4 4 4 }
// to rank 1, receives chunk 2 from rank 3"; whole lines under a lock, so that ranks on
// threads do not interleave.
void trace_step(std::ostream* out, const char* phase, int step, const Tensor& flat, int rank, int n, int send_chunk,
                int recv_chunk) {
  if (!out) return;
  static std::mutex mutex;
  std::ostringstream line;
  const Tensor sent = chunk_of(flat, send_chunk, n);
  line << phase << " step " << step + 1 << "/" << n - 1 << "  rank " << rank << ": sends chunk " << send_chunk << " ["
       << chunk_begin(flat.numel(), send_chunk, n) << "," << chunk_begin(flat.numel(), send_chunk + 1, n) << ")";
  if (sent.device().is_cpu() && sent.numel() <= 8) {
    line << " {";
    for (double v : sent.to_vector<double>()) line << " " << v;
    line << " }";
  }
  line << " to rank " << (rank + 1) % n << ", receives chunk " << recv_chunk << " from rank " << (rank + n - 1) % n
       << "\n";
  std::lock_guard lock(mutex);
  *out << line.str() << std::flush;
}

int wrap(int chunk, int n) { return ((chunk % n) + n) % n; }

}  // namespace

int64_t chunk_begin(int64_t length, int chunk, int n) { return length * chunk / n; }

Tensor chunk_of(const Tensor& flat, int chunk, int n) {
  const int64_t begin = chunk_begin(flat.numel(), chunk, n);
  return flat.narrow(0, begin, chunk_begin(flat.numel(), chunk + 1, n) - begin);
}

// BEGIN SOLUTION lab3.ring_reduce_scatter
void ring_reduce_scatter(PointToPoint& p2p, const Tensor& flat, ReduceOp op, std::ostream* trace) {
  const int n = p2p.size(), rank = p2p.rank();
  const int right = (rank + 1) % n, left = (rank + n - 1) % n;
  // Chunk c starts at rank c+1 and travels once around the ring, each rank adding its own
  // copy, until it arrives complete at rank c. So at step s rank r passes on chunk r-s-1
  // (its own copy at s = 0, else the partial sum it received at step s-1) and receives
  // chunk r-s-2, which it adds to its own copy.
  const int64_t largest_chunk = (flat.numel() + n - 1) / n;
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

// BEGIN SOLUTION lab3.ring_all_gather
void ring_all_gather(PointToPoint& p2p, const Tensor& flat, std::ostream* trace) {
  const int n = p2p.size(), rank = p2p.rank();
  const int right = (rank + 1) % n, left = (rank + n - 1) % n;
  // The complete chunks travel once more around the ring: at step s rank r passes on
  // chunk r-s (its own at s = 0) and receives chunk r-s-1 straight into place.
  for (int step = 0; step < n - 1; ++step) {
    const int send_chunk = wrap(rank - step, n), recv_chunk = wrap(rank - step - 1, n);
    trace_step(trace, "all-gather", step, flat, rank, n, send_chunk, recv_chunk);
    p2p.send_recv(chunk_of(flat, send_chunk, n), right, chunk_of(flat, recv_chunk, n), left);
  }
}
// END SOLUTION

void ring_all_reduce(PointToPoint& p2p, const Tensor& flat, ReduceOp op, std::ostream* trace) {
  ring_reduce_scatter(p2p, flat, op, trace);
  if (op == ReduceOp::avg) divide_by(chunk_of(flat, p2p.rank(), p2p.size()), p2p.size());
  ring_all_gather(p2p, flat, trace);
}

}  // namespace rg::parallel
