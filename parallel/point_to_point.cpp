// PointToPoint: counts what each batch of messages moves, then hands it to the backend.
#include "parallel/point_to_point.h"

namespace rg::parallel {

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

}  // namespace rg::parallel
