// The mpi backend. Every op is non-blocking plus a polling wait with a deadline, because
// OpenMPI advances requests only inside MPI calls and MPI_Wait cannot time out. Errors
// are returned (MPI_ERRORS_RETURN), not fatal, and become rg::Error with MPI's message.
// MPI is initialised once per process and finalised at exit unless a group broke (then
// requests may still be pending and finalising would hang: the program calls abort()).
#include "parallel/mpi_communicator.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <thread>

#include "tensor/error.h"

namespace rg::parallel {

namespace {
// A wait polls MPI in three stages. First a pure spin, as MPI's own blocking calls do: a
// small message arrives within microseconds, and a yield is a system call that costs
// about as much (more in a VM). Then polling with yields, for waits as long as a large
// message takes, letting another thread on the core run. After that, short sleeps keep a
// rank that waits for a late or dead peer from starving the others on a small machine.
constexpr auto kBusySpinFor = std::chrono::microseconds(20);
constexpr auto kSpinFor = std::chrono::milliseconds(5);
constexpr auto kSleepFor = std::chrono::microseconds(20);

// The pure spin needs a core per rank: with more local ranks than cores (mpirun
// --oversubscribe) the peer a rank waits for may need the very core it spins on, so the
// wait yields from the start (as OpenMPI does when it sees oversubscription).
std::chrono::microseconds busy_spin_for() {
  static const std::chrono::microseconds spin = [] {
    const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    const unsigned ranks = local ? static_cast<unsigned>(std::max(1, std::atoi(local))) : 1;
    return ranks <= std::max(1u, std::thread::hardware_concurrency()) ? kBusySpinFor : std::chrono::microseconds(0);
  }();
  return spin;
}

MPI_Datatype mpi_type(DType dtype) {
  switch (dtype) {
    case DType::float32: return MPI_FLOAT;
    case DType::float64: return MPI_DOUBLE;
    case DType::int64: return MPI_INT64_T;
    case DType::int32: return MPI_INT32_T;
    case DType::uint8: return MPI_UINT8_T;
  }
  return MPI_BYTE;
}

// avg is a sum followed by a division on every rank.
MPI_Op mpi_op(ReduceOp op) {
  return op == ReduceOp::max ? MPI_MAX : op == ReduceOp::min ? MPI_MIN : MPI_SUM;
}

int mpi_count(int64_t count, const OpContext& ctx) {
  if (count > INT_MAX) ctx.fail(detail::concat("MPI counts are int: ", count, " elements is too many for one call"));
  return static_cast<int>(count);
}

// MPI guarantees tags up to 32767; messages of one pair and tag arrive in order, so
// reusing a tag every 32768 collectives cannot mix two ops that are both in flight.
int mpi_tag(int64_t tag) { return static_cast<int>(tag % 32768); }

// Finalises MPI at exit if this library initialised it and no group broke.
struct MpiRuntime {
  bool initialised_here = false;
  bool broken = false;
  ~MpiRuntime() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (initialised_here && !broken && !finalized) MPI_Finalize();
  }
};
MpiRuntime& runtime() {
  static MpiRuntime instance;
  return instance;
}

class MpiRequest : public P2PRequest {
 public:
  MpiRequest(std::vector<MPI_Request> requests, std::vector<int> peers)
      : requests_(std::move(requests)), peers_(std::move(peers)) {}
  void wait(const OpContext& ctx) override { wait_mpi(requests_, peers_, ctx, "point-to-point"); }

 private:
  std::vector<MPI_Request> requests_;
  std::vector<int> peers_;
};
}  // namespace

namespace {
std::string mpi_error_string(int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  return std::string(text, length);
}

// The first real error among the statuses of a failed MPI_Testall (MPI_ERR_IN_STATUS).
int error_in(const std::vector<MPI_Status>& statuses, int rc) {
  if (rc != MPI_ERR_IN_STATUS) return rc;
  for (const auto& status : statuses)
    if (status.MPI_ERROR != MPI_SUCCESS && status.MPI_ERROR != MPI_ERR_PENDING) return status.MPI_ERROR;
  return rc;
}
}  // namespace

void check_mpi(int rc, const char* call, int rank) {
  if (rc != MPI_SUCCESS) throw Error(detail::concat("rank ", rank, ": ", call, " failed: ", mpi_error_string(rc)));
}

std::vector<MPI_Status> wait_mpi(std::vector<MPI_Request>& requests, const std::vector<int>& peers,
                                 const OpContext& ctx, const char* call) {
  const auto start = Clock::now();
  const auto busy_until = start + busy_spin_for(), spin_until = start + kSpinFor;
  std::vector<MPI_Status> statuses(requests.size());
  while (true) {
    int done = 0;
    int rc = MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, statuses.data());
    if (rc != MPI_SUCCESS) {
      runtime().broken = true;
      ctx.fail(std::string(call) + " failed: " + mpi_error_string(error_in(statuses, rc)));
    }
    if (done) return statuses;
    auto now = Clock::now();
    if (now >= ctx.deadline) {
      runtime().broken = true;
      std::string waiting;
      for (size_t i = 0; i < requests.size(); ++i) {
        if (requests[i] == MPI_REQUEST_NULL) continue;
        waiting += waiting.empty() ? "" : ", ";
        waiting += peers[i] == kWholeGroup ? std::string("the group (MPI cannot tell which ranks did not arrive)")
                   : peers[i] == kAnyRank  ? std::string("any rank (none arrived)")
                                           : "rank " + std::to_string(peers[i]);
      }
      ctx.timeout(std::string(call) + " with " + waiting);
    }
    if (now > spin_until)
      std::this_thread::sleep_for(kSleepFor);
    else if (now > busy_until)
      std::this_thread::yield();
  }
}

MpiCommunicator::MpiCommunicator(int argc, char** argv) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) {
    int provided = 0;
    check_mpi(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread", -1);
    runtime().initialised_here = true;
    RG_CHECK(provided >= MPI_THREAD_MULTIPLE, "MPI_Init_thread: this MPI provides thread level ", provided,
             ", but the mpi backend needs MPI_THREAD_MULTIPLE (", MPI_THREAD_MULTIPLE, ")");
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank", -1);
  check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size", rank_);
  for (MPI_Comm* comm : {&collective_, &user_, &control_}) {
    check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, comm), "MPI_Comm_dup", rank_);
    MPI_Comm_set_errhandler(*comm, MPI_ERRORS_RETURN);
  }
  MPI_Comm node = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node),
            "MPI_Comm_split_type", rank_);
  check_mpi(MPI_Comm_rank(node, &local_rank_), "MPI_Comm_rank", rank_);
  MPI_Comm_free(&node);
}

MpiCommunicator::~MpiCommunicator() {
  if (runtime().broken) return;  // requests may be pending: freeing could hang
  for (MPI_Comm* comm : {&collective_, &user_, &control_}) MPI_Comm_free(comm);
}

void MpiCommunicator::wait_one(MPI_Request request, const OpContext& ctx, const char* call) {
  std::vector<MPI_Request> requests{request};
  wait_mpi(requests, {kWholeGroup}, ctx, call);
}

void MpiCommunicator::all_reduce(const Tensor& t, ReduceOp op, const OpContext& ctx) {
  MPI_Request request;
  check_mpi(MPI_Iallreduce(MPI_IN_PLACE, t.raw_data(), mpi_count(t.numel(), ctx), mpi_type(t.dtype()), mpi_op(op),
                           collective_, &request),
            "MPI_Iallreduce", rank_);
  wait_one(request, ctx, "MPI_Iallreduce");
  if (op == ReduceOp::avg) divide_by(t, size_);
}

void MpiCommunicator::broadcast(const Tensor& t, int root, const OpContext& ctx) {
  MPI_Request request;
  check_mpi(MPI_Ibcast(t.raw_data(), mpi_count(t.numel(), ctx), mpi_type(t.dtype()), root, collective_, &request),
            "MPI_Ibcast", rank_);
  wait_one(request, ctx, "MPI_Ibcast");
}

void MpiCommunicator::reduce(const Tensor& t, int root, ReduceOp op, const OpContext& ctx) {
  MPI_Request request;
  const void* send = rank_ == root ? MPI_IN_PLACE : t.raw_data();
  check_mpi(MPI_Ireduce(send, t.raw_data(), mpi_count(t.numel(), ctx), mpi_type(t.dtype()), mpi_op(op), root,
                        collective_, &request),
            "MPI_Ireduce", rank_);
  wait_one(request, ctx, "MPI_Ireduce");
  if (op == ReduceOp::avg && rank_ == root) divide_by(t, size_);
}

void MpiCommunicator::all_gather(const Tensor& output, const Tensor& input, const OpContext& ctx) {
  MPI_Request request;
  int count = mpi_count(input.numel(), ctx);
  check_mpi(MPI_Iallgather(input.raw_data(), count, mpi_type(input.dtype()), output.raw_data(), count,
                           mpi_type(output.dtype()), collective_, &request),
            "MPI_Iallgather", rank_);
  wait_one(request, ctx, "MPI_Iallgather");
}

void MpiCommunicator::reduce_scatter(const Tensor& output, const Tensor& input, ReduceOp op, const OpContext& ctx) {
  MPI_Request request;
  check_mpi(MPI_Ireduce_scatter_block(input.raw_data(), output.raw_data(), mpi_count(output.numel(), ctx),
                                      mpi_type(input.dtype()), mpi_op(op), collective_, &request),
            "MPI_Ireduce_scatter_block", rank_);
  wait_one(request, ctx, "MPI_Ireduce_scatter_block");
  if (op == ReduceOp::avg) divide_by(output, size_);
}

void MpiCommunicator::barrier(const OpContext& ctx) {
  MPI_Request request;
  check_mpi(MPI_Ibarrier(collective_, &request), "MPI_Ibarrier", rank_);
  wait_one(request, ctx, "MPI_Ibarrier");
}

std::unique_ptr<P2PRequest> MpiCommunicator::start_p2p(const std::vector<P2POp>& ops, Channel channel, int64_t tag) {
  MPI_Comm comm = channel == Channel::user ? user_ : collective_;
  std::vector<MPI_Request> requests(ops.size(), MPI_REQUEST_NULL);
  std::vector<int> peers;
  OpContext ctx{rank_, tag, "point-to-point", {}, 0};
  for (size_t i = 0; i < ops.size(); ++i) {
    const P2POp& op = ops[i];
    int count = mpi_count(static_cast<int64_t>(op.buffer.nbytes()), ctx);
    void* data = op.buffer.nbytes() ? op.buffer.raw_data() : nullptr;
    if (op.kind == P2POp::recv)
      check_mpi(MPI_Irecv(data, count, MPI_BYTE, op.peer, mpi_tag(tag), comm, &requests[i]), "MPI_Irecv", rank_);
    else
      check_mpi(MPI_Isend(data, count, MPI_BYTE, op.peer, mpi_tag(tag), comm, &requests[i]), "MPI_Isend", rank_);
    peers.push_back(op.peer);
  }
  return std::make_unique<MpiRequest>(std::move(requests), std::move(peers));
}

int MpiCommunicator::recv_any(const Tensor& buffer, int64_t tag, const OpContext& ctx) {
  int count = mpi_count(static_cast<int64_t>(buffer.nbytes()), ctx);
  std::vector<MPI_Request> requests{MPI_REQUEST_NULL};
  check_mpi(MPI_Irecv(count ? buffer.raw_data() : nullptr, count, MPI_BYTE, MPI_ANY_SOURCE, mpi_tag(tag), user_,
                      &requests[0]),
            "MPI_Irecv", rank_);
  MPI_Status status = wait_mpi(requests, {kAnyRank}, ctx, "point-to-point").front();
  // A longer message fails the receive (MPI_ERR_TRUNCATE); a shorter one would pass unseen.
  int received = 0;
  check_mpi(MPI_Get_count(&status, MPI_BYTE, &received), "MPI_Get_count", rank_);
  if (received != count)
    ctx.fail(detail::concat("rank ", status.MPI_SOURCE, " sent ", received, " bytes but the receive buffer holds ",
                            count));
  return status.MPI_SOURCE;
}

std::vector<CollectiveSignature> MpiCommunicator::gather_signatures(const CollectiveSignature& mine, const OpContext& ctx) {
  constexpr int kWords = sizeof(CollectiveSignature) / sizeof(int64_t);
  static_assert(sizeof(CollectiveSignature) == kWords * sizeof(int64_t));
  std::vector<CollectiveSignature> all(size_);
  MPI_Request request;
  check_mpi(MPI_Iallgather(&mine, kWords, MPI_INT64_T, all.data(), kWords, MPI_INT64_T, control_, &request),
            "MPI_Iallgather", rank_);
  wait_one(request, ctx, "the debug signature exchange");
  return all;
}

void MpiCommunicator::abort(int exit_code) {
  runtime().broken = true;
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);  // MPI_Abort does not return; this satisfies [[noreturn]]
}

std::unique_ptr<Communicator> make_mpi_communicator(int argc, char** argv) {
  return std::make_unique<MpiCommunicator>(argc, argv);
}

}  // namespace rg::parallel
