// The hand-written collectives, written once over PointToPoint messages, so they run
// unchanged on local threads, MPI processes and NCCL GPUs. This is the code the lecture's
// claims C07-C09 and labs 3 and 4 read; ProcessGroup::all_reduce picks one by Algorithm:
//
//   relay           relay.cpp           the first version a student writes: the whole buffer
//                                       relayed rank to rank and back, 2(N-1) full hops
//   star            star.cpp            central reduction (the synchronous parameter-server
//                                       pattern): everyone to rank 0 and back (claim C07)
//   ring            ring.cpp            reduce-scatter + all-gather around the ring, one
//                                       chunk per step (Patarasuk & Yuan 2009; claim C08)
//   pipelined_ring  ring_pipelined.cpp  the same ring, each chunk sent in pieces so the
//                                       next piece travels while this one is added
//
// (the asynchronous parameter server, where workers do not wait for each other, is a
// different algorithm: parallel/async.h.)
//
// All take a flat (1-d, contiguous) buffer reduced in place, and give every rank the same
// bits. N is the number of ranks and S the buffer's size in bytes.
#pragma once
#include <cstdint>
#include <iosfwd>

#include "parallel/point_to_point.h"

namespace rg::parallel {

// Chunk c of a length-`length` buffer split over n ranks is [c*length/n, (c+1)*length/n):
// chunk sizes differ by at most one element, and a chunk may be empty (length < n).
int64_t chunk_begin(int64_t length, int chunk, int n);
Tensor chunk_of(const Tensor& flat, int chunk, int n);

// ---- The ring (Patarasuk & Yuan, "Bandwidth optimal all-reduce algorithms for clusters
// of workstations", JPDC 2009). Each rank talks only to its neighbours: it sends to rank+1
// and receives from rank-1. `trace` (may be null) gets one line per step naming the chunks
// each rank passes on (claim C08).

// Reduce-scatter: after it, rank r's chunk r of `flat` holds the reduction (sum, max or
// min; avg sums) of every rank's chunk r; its other chunks hold partial sums. N-1 steps,
// each rank sends and receives (N-1)/N·S.
void ring_reduce_scatter(PointToPoint& p2p, const Tensor& flat, ReduceOp op, std::ostream* trace);
// All-gather: given rank r's complete chunk r, every rank ends with every rank's chunk.
// N-1 steps, (N-1)/N·S each way.
void ring_all_gather(PointToPoint& p2p, const Tensor& flat, std::ostream* trace);
// The two together, with avg dividing each complete chunk once: 2(N-1)/N·S each way per
// rank, whatever N is, which is why the ring scales.
void ring_all_reduce(PointToPoint& p2p, const Tensor& flat, ReduceOp op, std::ostream* trace);

// The ring with each step's chunk cut into kRingPieceBytes pieces and two landing buffers:
// piece p+1 is on the wire while piece p is being added. Same messages' total, same bits
// as ring_all_reduce; faster once a chunk spans several pieces.
void pipelined_ring_all_reduce(PointToPoint& p2p, const Tensor& flat, ReduceOp op);
// Large enough that per-message overhead is small, small enough that adding one piece
// overlaps the next one's transfer. Measured with 2 MPI ranks (bench/allreduce.cpp):
// splitting a 2 MiB chunk in two costs 5-10%, while 8 MiB chunks gain as much from 4 MiB pieces.
constexpr int64_t kRingPieceBytes = int64_t{4} << 20;

// ---- The naive versions.

// Relay: rank 0 sends its buffer to rank 1, which adds its own and passes the sum on, ...,
// to rank N-1, which holds the total and sends it back around the ring: 2(N-1) hops of the
// whole message, one after another, so the time grows with N (claim C09's "naive").
void relay_all_reduce(PointToPoint& p2p, const Tensor& flat, ReduceOp op);
// Star, the central reduction: every rank sends its buffer to rank 0, which reduces them
// in rank order and sends the result back. Rank 0 moves (N-1)·S each way, every other rank
// S: rank 0 is the bottleneck (claim C07).
void star_all_reduce(PointToPoint& p2p, const Tensor& flat, ReduceOp op);

}  // namespace rg::parallel
