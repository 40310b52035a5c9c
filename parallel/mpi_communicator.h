// The `mpi` backend's communicator, shared with the nccl backend (which bootstraps and
// exchanges debug signatures over MPI). MPI runs at MPI_THREAD_MULTIPLE: the group's
// communication thread makes the calls, while the program may call MPI itself.
#pragma once
#include <mpi.h>

#include <memory>
#include <vector>

#include "parallel/communicator.h"

namespace rg::parallel {

// Throws rg::Error with MPI's own error string unless rc is MPI_SUCCESS.
void check_mpi(int rc, const char* call, int rank);

// Polls requests until all complete (OpenMPI progresses only while called) or the
// deadline passes, and returns their statuses; `peers[i]` names request i's partner
// (kWholeGroup, or kAnyRank for a receive from any rank).
constexpr int kWholeGroup = -1, kAnyRank = -2;
std::vector<MPI_Status> wait_mpi(std::vector<MPI_Request>& requests, const std::vector<int>& peers,
                                 const OpContext& ctx, const char* call);

class MpiCommunicator : public Communicator {
 public:
  MpiCommunicator(int argc, char** argv);
  ~MpiCommunicator() override;

  std::string name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  bool accepts(const Tensor& t) const override { return t.device().is_cpu(); }
  std::string device_rule() const override { return "mpi moves CPU tensors; use nccl for CUDA"; }
  MPI_Comm control_comm() const { return control_; }

  void all_reduce(const Tensor& t, ReduceOp op, const OpContext& ctx) override;
  void broadcast(const Tensor& t, int root, const OpContext& ctx) override;
  void reduce(const Tensor& t, int root, ReduceOp op, const OpContext& ctx) override;
  void all_gather(const Tensor& output, const Tensor& input, const OpContext& ctx) override;
  void reduce_scatter(const Tensor& output, const Tensor& input, ReduceOp op, const OpContext& ctx) override;
  void barrier(const OpContext& ctx) override;
  std::unique_ptr<P2PRequest> start_p2p(const std::vector<P2POp>& ops, Channel channel, int64_t tag) override;
  int recv_any(const Tensor& buffer, int64_t tag, const OpContext& ctx) override;
  std::vector<CollectiveSignature> gather_signatures(const CollectiveSignature& mine, const OpContext& ctx) override;
  [[noreturn]] void abort(int exit_code) override;

 private:
  void wait_one(MPI_Request request, const OpContext& ctx, const char* call);

  int rank_ = 0, size_ = 1, local_rank_ = 0;
  // Separate communicators keep library collectives and the hand-written algorithms'
  // messages (collective_), user send/recv (user_) and debug signatures (control_)
  // from ever matching one another.
  MPI_Comm collective_ = MPI_COMM_NULL, user_ = MPI_COMM_NULL, control_ = MPI_COMM_NULL;
};

}  // namespace rg::parallel
