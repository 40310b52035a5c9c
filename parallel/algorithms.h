// The hand-written all-reduce algorithms (ring, naive ring, star), written once over a
// backend's point-to-point messages, so they run unchanged on local threads, MPI
// processes and NCCL GPUs. This is the code labs and claims C07-C09 read.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <vector>

#include "parallel/communicator.h"

namespace rg::parallel {

// A backend's point-to-point messages as the algorithms use them: every byte is counted
// in `traffic`, and every wait ends at the op's deadline.
class PointToPoint {
 public:
  PointToPoint(Communicator& comm, const OpContext& ctx, CommStats& traffic)
      : comm_(comm), ctx_(ctx), traffic_(traffic) {}
  int rank() const { return comm_.rank(); }
  int size() const { return comm_.size(); }

  void send(const Tensor& out, int to) { send_recv(out, to, Tensor(), 0); }
  void recv(const Tensor& in, int from) { send_recv(Tensor(), 0, in, from); }
  // Sends `out` to `to` while receiving `in` from `from`; an undefined tensor skips that side.
  void send_recv(const Tensor& out, int to, const Tensor& in, int from);
  // Sends `out` to `to` while receiving a message from `from` and folding it into `acc`
  // with `op`, in pieces: piece p+1 travels while piece p is being reduced.
  void send_recv_reduce(const Tensor& out, int to, const Tensor& acc, int from, ReduceOp op);
  // Sends `out` to every rank in `to` at once.
  void send_to_all(const Tensor& out, const std::vector<int>& to);

 private:
  std::unique_ptr<P2PRequest> start(const std::vector<P2POp>& ops);

  Communicator& comm_;
  const OpContext& ctx_;
  CommStats& traffic_;
};

// Pieces of a pipelined message (send_recv_reduce): large enough that per-message
// overhead is small, small enough that reducing one piece overlaps with the next one's
// transfer. Measured with 2 MPI ranks (bench/allreduce.cpp): splitting a 2 MiB chunk in
// two costs 5-10%, while 8 MiB chunks gain as much from 4 MiB pieces.
constexpr int64_t kRingPieceBytes = int64_t{4} << 20;

// All reduce `flat` (1-d, contiguous) in place across the group. All give every rank the
// same bits; star and naive_ring add in rank order, as a serial loop does.
//
// ring: reduce-scatter then all-gather around the ring; each rank sends and receives
// 2(N-1)/N of the buffer, whatever N is. `trace` prints each step's chunks (claim C08).
void ring_all_reduce(PointToPoint& p2p, const Tensor& flat, ReduceOp op, std::ostream* trace);
// naive_ring: the whole buffer is relayed 0 -> 1 -> ... -> N-1, each rank adding its own,
// and the total relayed back around: 2(N-1) hops of the full message, one after another.
void naive_ring_all_reduce(PointToPoint& p2p, const Tensor& flat, ReduceOp op);
// star (parameter server): everyone sends to rank 0, which reduces and sends the result
// back; rank 0 moves (N-1)·S each way, every other rank S (claim C07).
void star_all_reduce(PointToPoint& p2p, const Tensor& flat, ReduceOp op);

// The balanced split the ring uses: chunk c of a length-`length` buffer over n ranks is
// [c*length/n, (c+1)*length/n), so chunk sizes differ by at most one element.
int64_t chunk_begin(int64_t length, int chunk, int n);

}  // namespace rg::parallel
