// PointToPoint: a backend's messages as the hand-written collectives (parallel/algorithms.h)
// use them. Every byte is counted in the op's traffic, and every wait ends at the op's
// deadline, so an algorithm written on these four calls is counted and bounded for free.
#pragma once
#include <memory>
#include <vector>

#include "parallel/communicator.h"

namespace rg::parallel {

class PointToPoint {
 public:
  PointToPoint(Communicator& comm, const OpContext& ctx, CommStats& traffic)
      : comm_(comm), ctx_(ctx), traffic_(traffic) {}
  int rank() const { return comm_.rank(); }
  int size() const { return comm_.size(); }

  void send(const Tensor& out, int to) { send_recv(out, to, Tensor(), 0); }
  void recv(const Tensor& in, int from) { send_recv(Tensor(), 0, in, from); }
  // Sends `out` to `to` while receiving `in` from `from`, both at once (a ring step: every
  // rank sends and receives together, so none waits for its neighbour to finish first); an
  // undefined tensor skips that side.
  void send_recv(const Tensor& out, int to, const Tensor& in, int from);
  // Sends `out` to every rank in `to` at once.
  void send_to_all(const Tensor& out, const std::vector<int>& to);

  // The same messages, started but not waited for: for algorithms that overlap a transfer
  // with computation (parallel/ring_pipelined.cpp). The request must be waited on with
  // wait() before the buffers are touched or released.
  std::unique_ptr<P2PRequest> start(const std::vector<P2POp>& ops);
  void wait(P2PRequest& request) { request.wait(ctx_); }

 private:
  Communicator& comm_;
  const OpContext& ctx_;
  CommStats& traffic_;
};

}  // namespace rg::parallel
