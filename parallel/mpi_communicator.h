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

// The requests one wait polls: each one's partner for messages (kWholeGroup, kAnyRank, or
// a rank), and the buffers MPI reads or writes for them. A wait that fails while requests
// are still pending parks the buffers for the life of the process, since MPI may write
// into them later: freeing them would let it corrupt whatever the memory holds next.
//
// Receives are not posted ahead: each waits as an Arrival until its message is there
// (MPI_Improbe), is refused with a named error unless it has the expected size, and only
// then is received into place (MPI_Imrecv). So a message that does not fit never touches
// the buffer: ranks that disagree get an error, not an overrun.
constexpr int kWholeGroup = -1, kAnyRank = -2;
struct PendingMpi {
  struct Arrival {
    size_t request;  // the index it takes in `requests` once received
    void* data;
    int bytes;
    int tag;
    MPI_Comm comm;
    bool matched = false;
  };
  std::vector<MPI_Request> requests;
  std::vector<int> peers;  // a receive from kAnyRank learns its sender here
  std::vector<Tensor> buffers;
  std::vector<Arrival> arrivals;
};
// Keeps `pending`'s buffers alive forever when any of its requests is still active: they
// move to the parked list, so a second call (a failed wait's, then its owner's destructor)
// parks nothing more.
void park_if_pending(PendingMpi& pending);

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
  std::unique_ptr<PendingCollective> post_all_reduce(const Tensor& t, ReduceOp op, const OpContext& ctx) override;
  void all_reduce_blocking(const Tensor& t, ReduceOp op, const OpContext& ctx) override;
  void broadcast(const Tensor& t, int root, const OpContext& ctx) override;
  void reduce(const Tensor& t, int root, ReduceOp op, const OpContext& ctx) override;
  void all_gather(const Tensor& output, const Tensor& input, const OpContext& ctx) override;
  void reduce_scatter(const Tensor& output, const Tensor& input, ReduceOp op, const OpContext& ctx) override;
  void barrier(const OpContext& ctx) override;
  std::unique_ptr<P2PRequest> start_p2p(const std::vector<P2POp>& ops, Channel channel, int64_t tag) override;
  int recv_any(const Tensor& buffer, int64_t tag, const OpContext& ctx) override;
  std::vector<CollectiveSignature> gather_signatures(const CollectiveSignature& mine, const OpContext& ctx) override;
  std::unique_ptr<Agreement> start_agreement(const CollectiveSignature& mine, const OpContext& ctx) override;
  void agree(const OpContext& ctx) override;
  [[noreturn]] void abort(int exit_code) override;

  // Polls `pending` until every request completes (OpenMPI progresses only while called),
  // ctx's agreement fails, or ctx's deadline passes; returns the statuses. While it waits
  // it tells ranks that time out where this one is, and when it times out itself it asks
  // them, so its error names the ranks that are behind or missing.
  std::vector<MPI_Status> wait(PendingMpi& pending, const OpContext& ctx, const char* call);

 private:
  void wait_collective(MPI_Request request, std::vector<Tensor> buffers, const OpContext& ctx, const char* call);
  bool receive_arrived(PendingMpi& pending, const OpContext& ctx);  // true when every receive is posted
  void answer_status_queries(const OpContext& ctx);
  std::string where_the_others_are(const OpContext& ctx);

  int rank_ = 0, size_ = 1, local_rank_ = 0;
  // Separate communicators keep library collectives and the hand-written algorithms'
  // messages (collective_), user send/recv (user_) and debug signatures (control_)
  // from ever matching one another.
  MPI_Comm collective_ = MPI_COMM_NULL, user_ = MPI_COMM_NULL, control_ = MPI_COMM_NULL;
};

}  // namespace rg::parallel
