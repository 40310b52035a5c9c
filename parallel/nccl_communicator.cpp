// The nccl backend: CUDA tensors, one process per GPU (device = local rank), the
// ncclUniqueId broadcast over MPI, every op on the communicator's own stream. Waits poll
// the stream with a deadline and abort the communicator when it passes, since a
// collective that never completes would otherwise keep the GPU busy forever. CPU tensors
// (a program's bookkeeping: evaluation sums, traces, replica fingerprints) go over the MPI
// communicator it bootstraps from, as PyTorch programs pair NCCL with a gloo group for them.
#include <cuda_runtime.h>
#include <nccl.h>

#include <thread>

#include "parallel/mpi_communicator.h"
#include "tensor/backend.h"
#include "tensor/error.h"

namespace rg::parallel {

namespace {
constexpr auto kPollFor = std::chrono::microseconds(20);

void check_cuda(cudaError_t rc, const char* call, int rank) {
  if (rc != cudaSuccess) throw Error(detail::concat("rank ", rank, ": ", call, " failed: ", cudaGetErrorString(rc)));
}

void check_nccl(ncclResult_t rc, const char* call, int rank) {
  if (rc != ncclSuccess && rc != ncclInProgress)
    throw Error(detail::concat("rank ", rank, ": ", call, " failed: ", ncclGetErrorString(rc)));
}

ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::float32: return ncclFloat32;
    case DType::float64: return ncclFloat64;
    case DType::int64: return ncclInt64;
    case DType::int32: return ncclInt32;
    case DType::uint8: return ncclUint8;
  }
  return ncclUint8;
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return ncclSum;
    case ReduceOp::avg: return ncclAvg;
    case ReduceOp::max: return ncclMax;
    case ReduceOp::min: return ncclMin;
  }
  return ncclSum;
}

class NcclCommunicator;

// A batch of sends and receives launched as one NCCL group; done when the stream is.
class NcclRequest : public P2PRequest {
 public:
  explicit NcclRequest(NcclCommunicator& comm) : comm_(comm) {}
  void wait(const OpContext& ctx) override;

 private:
  NcclCommunicator& comm_;
};

class NcclCommunicator : public Communicator {
 public:
  NcclCommunicator(int argc, char** argv) : mpi_(argc, argv) {
    rank_ = mpi_.rank();
    int devices = 0;
    check_cuda(cudaGetDeviceCount(&devices), "cudaGetDeviceCount", rank_);
    RG_CHECK(mpi_.local_rank() < devices, "rank ", rank_, ": the nccl backend needs one GPU per process, but local rank ",
             mpi_.local_rank(), " has only ", devices, " GPU(s) on its node (NCCL refuses two ranks on one GPU)");
    device_ = mpi_.local_rank();
    check_cuda(cudaSetDevice(device_), "cudaSetDevice", rank_);
    ncclUniqueId id;
    if (rank_ == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId", rank_);
    check_mpi(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, mpi_.control_comm()), "MPI_Bcast of the ncclUniqueId", rank_);
    check_nccl(ncclCommInitRank(&comm_, mpi_.size(), id, rank_), "ncclCommInitRank", rank_);
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate", rank_);
  }

  ~NcclCommunicator() override {
    if (broken_) return;  // the communicator was aborted
    cudaStreamDestroy(stream_);
    ncclCommDestroy(comm_);
  }

  std::string name() const override { return "nccl"; }
  int rank() const override { return rank_; }
  int size() const override { return mpi_.size(); }
  int local_rank() const override { return mpi_.local_rank(); }
  bool accepts(const Tensor& t) const override { return t.device() == Device::cuda(device_) || t.device().is_cpu(); }
  std::string device_rule() const override {
    return detail::concat("nccl moves tensors on this rank's GPU, cuda:", device_, ", and CPU tensors over MPI");
  }

  void all_reduce(const Tensor& t, ReduceOp op, const OpContext& ctx) override {
    if (t.device().is_cpu()) return mpi_.all_reduce(t, op, ctx);
    launch(ctx, "ncclAllReduce", [&] {
      return ncclAllReduce(t.raw_data(), t.raw_data(), t.numel(), nccl_type(t.dtype()), nccl_op(op), comm_, stream_);
    });
  }
  void broadcast(const Tensor& t, int root, const OpContext& ctx) override {
    if (t.device().is_cpu()) return mpi_.broadcast(t, root, ctx);
    launch(ctx, "ncclBroadcast", [&] {
      return ncclBroadcast(t.raw_data(), t.raw_data(), t.numel(), nccl_type(t.dtype()), root, comm_, stream_);
    });
  }
  void reduce(const Tensor& t, int root, ReduceOp op, const OpContext& ctx) override {
    if (t.device().is_cpu()) return mpi_.reduce(t, root, op, ctx);
    launch(ctx, "ncclReduce", [&] {
      return ncclReduce(t.raw_data(), t.raw_data(), t.numel(), nccl_type(t.dtype()), nccl_op(op), root, comm_, stream_);
    });
  }
  void all_gather(const Tensor& output, const Tensor& input, const OpContext& ctx) override {
    if (input.device().is_cpu()) return mpi_.all_gather(output, input, ctx);
    launch(ctx, "ncclAllGather", [&] {
      return ncclAllGather(input.raw_data(), output.raw_data(), input.numel(), nccl_type(input.dtype()), comm_, stream_);
    });
  }
  void reduce_scatter(const Tensor& output, const Tensor& input, ReduceOp op, const OpContext& ctx) override {
    if (input.device().is_cpu()) return mpi_.reduce_scatter(output, input, op, ctx);
    launch(ctx, "ncclReduceScatter", [&] {
      return ncclReduceScatter(input.raw_data(), output.raw_data(), output.numel(), nccl_type(input.dtype()),
                               nccl_op(op), comm_, stream_);
    });
  }
  void barrier(const OpContext& ctx) override {
    // NCCL has no barrier: a one-element all-reduce is one.
    if (!barrier_token_.defined()) barrier_token_ = Tensor::zeros({1}, DType::float32, Device::cuda(device_));
    all_reduce(barrier_token_, ReduceOp::sum, ctx);
  }

  std::unique_ptr<P2PRequest> start_p2p(const std::vector<P2POp>& ops, Channel channel, int64_t tag) override {
    if (!ops.empty() && ops.front().buffer.device().is_cpu()) return mpi_.start_p2p(ops, channel, tag);
    // NCCL matches messages by order per peer, and every op of a group runs in issue
    // order on one stream, so channels and tags need no encoding here.
    sync_tensor_stream();
    check_nccl(ncclGroupStart(), "ncclGroupStart", rank_);
    for (const auto& op : ops) {
      if (op.kind == P2POp::send)
        check_nccl(ncclSend(op.buffer.raw_data(), op.buffer.nbytes(), ncclUint8, op.peer, comm_, stream_), "ncclSend",
                   rank_);
      else
        check_nccl(ncclRecv(op.buffer.raw_data(), op.buffer.nbytes(), ncclUint8, op.peer, comm_, stream_), "ncclRecv",
                   rank_);
    }
    check_nccl(ncclGroupEnd(), "ncclGroupEnd", rank_);
    return std::make_unique<NcclRequest>(*this);
  }

  int recv_any(const Tensor& buffer, int64_t tag, const OpContext& ctx) override {
    if (buffer.device().is_cpu()) return mpi_.recv_any(buffer, tag, ctx);
    ctx.fail("the nccl backend cannot receive from any rank (NCCL matches every receive to a named sender); "
             "run the parameter server over the mpi backend");
  }

  std::vector<CollectiveSignature> gather_signatures(const CollectiveSignature& mine, const OpContext& ctx) override {
    return mpi_.gather_signatures(mine, ctx);
  }
  // The signatures travel over MPI while NCCL moves the data.
  std::unique_ptr<Agreement> start_agreement(const CollectiveSignature& mine, const OpContext& ctx) override {
    return mpi_.start_agreement(mine, ctx);
  }
  void agree(const OpContext& ctx) override { mpi_.agree(ctx); }
  [[noreturn]] void abort(int exit_code) override { mpi_.abort(exit_code); }

  // Polls the stream until it drains; at the deadline aborts the NCCL communicator.
  void wait_stream(const OpContext& ctx, const char* call) {
    while (true) {
      cudaError_t state = cudaStreamQuery(stream_);
      if (state == cudaSuccess) return;
      if (ctx.agreement) ctx.agreement->poll(ctx);
      if (state != cudaErrorNotReady) check_cuda(state, call, rank_);
      ncclResult_t async_error = ncclSuccess;
      check_nccl(ncclCommGetAsyncError(comm_, &async_error), "ncclCommGetAsyncError", rank_);
      check_nccl(async_error, call, rank_);
      if (Clock::now() >= ctx.deadline) {
        broken_ = true;
        ncclCommAbort(comm_);
        ctx.timeout(std::string(call) + " to complete on the GPU (NCCL cannot tell which ranks did not arrive)");
      }
      std::this_thread::sleep_for(kPollFor);
    }
  }

 private:
  // The tensor backend's kernels that wrote our inputs run on its own stream: wait for them.
  void sync_tensor_stream() { backend_for(DeviceType::cuda).synchronize(device_); }

  template <class Call>
  void launch(const OpContext& ctx, const char* name, Call call) {
    sync_tensor_stream();
    check_nccl(call(), name, rank_);
    wait_stream(ctx, name);
  }

  MpiCommunicator mpi_;
  int rank_ = 0;
  int device_ = 0;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  Tensor barrier_token_;
  bool broken_ = false;
};

void NcclRequest::wait(const OpContext& ctx) { comm_.wait_stream(ctx, "ncclSend/ncclRecv"); }
}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(int argc, char** argv) {
  return std::make_unique<NcclCommunicator>(argc, argv);
}

}  // namespace rg::parallel
