// The mpi backend. Every op is non-blocking plus a polling wait with a deadline, because
// OpenMPI advances requests only inside MPI calls and MPI_Wait cannot time out. Errors
// are returned (MPI_ERRORS_RETURN), not fatal, and become rg::Error with MPI's message.
// MPI is initialised once per process and finalised at exit unless a group broke (then
// requests may still be pending and finalising would hang: the program calls abort()).
#include "parallel/mpi_communicator.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "tensor/error.h"

namespace rg::parallel {

namespace {
// A wait polls MPI in three stages. First a pure spin, as MPI's own blocking calls do: a
// small message arrives within microseconds, and a yield is a system call that costs
// about as much (more in a VM). Then polling with yields, letting another thread on the
// core run. After that, short sleeps keep a rank that waits for a late or dead peer from
// starving the others on a small machine.
// How long the pure spin lasts depends on who waits. The communication thread shares the
// cores with its caller's compute (backward, while a bucket is reduced), so it soon
// yields. A caller waiting for its own op has nothing else to do: it spins through an op
// of a few MiB, since each yield costs more than it saves (bench_allreduce, 2 ranks on 2
// cores: a 1 MiB all-reduce 10-15 us slower, 0.90x MPI_Allreduce with yields from 20 us).
constexpr auto kThreadSpinFor = std::chrono::microseconds(20);
constexpr auto kCallerSpinFor = std::chrono::microseconds(1000);
constexpr auto kSpinFor = std::chrono::milliseconds(5);
constexpr auto kSleepFor = std::chrono::microseconds(20);

// The pure spin needs a core per rank: with more local ranks than cores (mpirun
// --oversubscribe) the peer a rank waits for may need the very core it spins on, so the
// wait yields from the start (as OpenMPI does when it sees oversubscription).
std::chrono::microseconds busy_spin_for() {
  static const bool core_per_rank = [] {
    const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    const unsigned ranks = local ? static_cast<unsigned>(std::max(1, std::atoi(local))) : 1;
    return ranks <= std::max(1u, std::thread::hardware_concurrency());
  }();
  if (!core_per_rank) return std::chrono::microseconds(0);
  return on_communication_thread() ? kThreadSpinFor : kCallerSpinFor;
}

// Every library all-reduce here is MPI_Iallreduce (a wait must be able to give up at its
// deadline). OpenMPI runs it through libnbc, which for small groups picks recursive
// doubling: each rank sends and reduces the whole buffer log2(N) times, where the ring sends
// 2(N-1)/N of it. On 2 ranks that ran at 0.42-0.53x the bus bandwidth of the blocking
// MPI_Allreduce at every size from 4 KiB to 16 MiB, and libnbc's ring at 0.9-1.0x
// (bench_allreduce: mpi_iallreduce against mpi_raw). A user's own choice stands; OpenMPI
// reads the variable at MPI_Init, before any other thread of ours exists.
void prefer_ring_for_nonblocking_all_reduce() {
  constexpr int kLibnbcRing = 1;  // coll_libnbc_iallreduce_algorithm: 1 ring (0 lets libnbc pick)
  ::setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", std::to_string(kLibnbcRing).c_str(), /*overwrite=*/0);
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

// Buffers MPI may still write into after a failed wait (and the replies to status
// queries, in flight when their sender moves on), kept until the process ends.
std::vector<std::shared_ptr<void>>& parked() {
  static std::vector<std::shared_ptr<void>> buffers;
  return buffers;
}
std::mutex& parked_mutex() {
  static std::mutex mutex;
  return mutex;
}
void park(std::shared_ptr<void> buffer) {
  std::lock_guard lock(parked_mutex());
  parked().push_back(std::move(buffer));
}

// A batch of sends and receives; the receives check their size as they arrive (PendingMpi).
class MpiRequest : public P2PRequest {
 public:
  MpiRequest(MpiCommunicator& comm, PendingMpi pending) : comm_(comm), pending_(std::move(pending)) {}
  ~MpiRequest() override { park_if_pending(pending_); }
  void wait(const OpContext& ctx) override { comm_.wait(pending_, ctx, "point-to-point"); }

 private:
  MpiCommunicator& comm_;
  PendingMpi pending_;
};

// Where a rank is, as it answers another's status query: the op it is waiting in.
struct StatusReply {
  int64_t seq = -1;
  int64_t collective = 0;  // 1: a collective (numbered with the others), 0: point-to-point
  char op[112] = {};
};

// Tags of the status queries on the control communicator (MPI guarantees up to 32767).
constexpr int kQueryTag = 32000, kReplyTag = 32001;

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

void park_if_pending(PendingMpi& pending) {
  const bool active = std::any_of(pending.requests.begin(), pending.requests.end(),
                                  [](MPI_Request r) { return r != MPI_REQUEST_NULL; });
  if (!active) return;
  runtime().broken = true;  // finalising with requests pending would hang
  for (const Tensor& buffer : pending.buffers)
    if (buffer.defined()) park(buffer.storage());
  pending.buffers.clear();
}

std::vector<MPI_Status> MpiCommunicator::wait(PendingMpi& pending, const OpContext& ctx, const char* call) {
  auto& requests = pending.requests;
  const auto start = Clock::now();
  const auto busy_until = start + busy_spin_for(), spin_until = start + kSpinFor;
  std::vector<MPI_Status> statuses(requests.size());
  try {
    while (true) {
      const bool posted = receive_arrived(pending, ctx);
      int done = 0;
      int rc = MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, statuses.data());
      if (rc != MPI_SUCCESS) ctx.fail(std::string(call) + " failed: " + mpi_error_string(error_in(statuses, rc)));
      if (done && posted) return statuses;
      const auto now = Clock::now();
      if (now < busy_until) continue;  // a small message: nothing else costs as little as asking again
      if (ctx.agreement) ctx.agreement->poll(ctx);
      answer_status_queries(ctx);
      if (now >= ctx.deadline) {
        std::vector<bool> outstanding(requests.size());
        for (size_t i = 0; i < requests.size(); ++i) outstanding[i] = requests[i] != MPI_REQUEST_NULL;
        for (const auto& arrival : pending.arrivals) outstanding[arrival.request] = !arrival.matched;
        std::string waiting;
        for (size_t i = 0; i < requests.size(); ++i) {
          if (!outstanding[i]) continue;
          waiting += waiting.empty() ? "" : ", ";
          waiting += pending.peers[i] == kWholeGroup ? std::string("the group")
                     : pending.peers[i] == kAnyRank  ? std::string("any rank (none arrived)")
                                                     : "rank " + std::to_string(pending.peers[i]);
        }
        ctx.timeout(std::string(call) + " with " + waiting + "; " + where_the_others_are(ctx));
      }
      if (now > spin_until)
        std::this_thread::sleep_for(kSleepFor);
      else
        std::this_thread::yield();
    }
  } catch (...) {
    park_if_pending(pending);
    throw;
  }
}

bool MpiCommunicator::receive_arrived(PendingMpi& pending, const OpContext& ctx) {
  bool all = true;
  for (auto& a : pending.arrivals) {
    if (a.matched) continue;
    const int source = pending.peers[a.request] == kAnyRank ? MPI_ANY_SOURCE : pending.peers[a.request];
    int arrived = 0;
    MPI_Message message;
    MPI_Status status;
    check_mpi(MPI_Improbe(source, a.tag, a.comm, &arrived, &message, &status), "MPI_Improbe", rank_);
    if (!arrived) {
      all = false;
      continue;
    }
    int bytes = 0;
    MPI_Get_count(&status, MPI_BYTE, &bytes);
    if (bytes != a.bytes)
      ctx.fail(detail::concat("rank ", status.MPI_SOURCE, " sent ", bytes, " bytes but the receive buffer holds ",
                              a.bytes, " (the ranks disagree on the message)"));
    check_mpi(MPI_Imrecv(a.data, a.bytes, MPI_BYTE, &message, &pending.requests[a.request]), "MPI_Imrecv", rank_);
    pending.peers[a.request] = status.MPI_SOURCE;
    a.matched = true;
  }
  return all;
}

// Every query that has arrived gets this rank's whereabouts: the op it waits in.
void MpiCommunicator::answer_status_queries(const OpContext& ctx) {
  while (true) {
    int arrived = 0;
    MPI_Status status;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kQueryTag, control_, &arrived, &status) != MPI_SUCCESS || !arrived) return;
    int64_t query = 0;
    MPI_Recv(&query, 1, MPI_INT64_T, status.MPI_SOURCE, kQueryTag, control_, MPI_STATUS_IGNORE);
    auto reply = std::make_shared<StatusReply>();
    reply->seq = ctx.seq;
    reply->collective = ctx.signature ? 1 : 0;
    ctx.op.copy(reply->op, sizeof reply->op - 1);
    MPI_Request request;
    MPI_Isend(reply.get(), sizeof(StatusReply), MPI_BYTE, status.MPI_SOURCE, kReplyTag, control_, &request);
    MPI_Request_free(&request);  // completes on its own; the reply stays parked until exit
    park(std::move(reply));
  }
}

// Asks every other rank where it is and waits a little for the answers. A rank inside
// one of ringgrad's waits answers at once; one that does not answer has died, or is
// busy outside a collective (computing, or stuck elsewhere).
std::string MpiCommunicator::where_the_others_are(const OpContext& ctx) {
  const double grace_s = std::min(2.0, std::max(0.5, 0.25 * ctx.timeout_s));
  auto query = std::make_shared<int64_t>(ctx.seq);
  auto replies = std::make_shared<std::vector<StatusReply>>(size_);
  park(query);
  park(replies);  // a late reply still lands in them
  std::vector<MPI_Request> asks, answers(size_, MPI_REQUEST_NULL);
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    MPI_Request ask;
    MPI_Isend(query.get(), 1, MPI_INT64_T, r, kQueryTag, control_, &ask);
    MPI_Request_free(&ask);
    MPI_Irecv(&(*replies)[r], sizeof(StatusReply), MPI_BYTE, r, kReplyTag, control_, &answers[r]);
  }
  const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(grace_s));
  auto waiting = [&] {
    bool any = false;
    for (MPI_Request& answer : answers) {
      int done = 0;  // MPI_Test, not Testall, which leaves every request alone until all are done
      if (answer != MPI_REQUEST_NULL) MPI_Test(&answer, &done, MPI_STATUS_IGNORE);
      any = any || answer != MPI_REQUEST_NULL;
    }
    return any;
  };
  while (Clock::now() < until && waiting()) {
    answer_status_queries(ctx);  // the others may be asking too
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  std::string text = "as far as the other ranks can tell:";
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    text += r == (rank_ == 0 ? 1 : 0) ? " " : "; ";
    if (answers[r] != MPI_REQUEST_NULL) {
      text += detail::concat("rank ", r, " did not answer within ", grace_s,
                             " s (it died, or is busy outside a collective)");
      continue;
    }
    const StatusReply& reply = (*replies)[r];
    text += detail::concat("rank ", r, " is waiting in ", reply.op, " #", reply.seq);
    if (reply.collective && ctx.signature && reply.seq != ctx.seq)
      text += reply.seq < ctx.seq ? " (behind)" : " (ahead)";
  }
  return text;
}

MpiCommunicator::MpiCommunicator(int argc, char** argv) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) {
    prefer_ring_for_nonblocking_all_reduce();
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

void MpiCommunicator::wait_collective(MPI_Request request, std::vector<Tensor> buffers, const OpContext& ctx,
                                      const char* call) {
  PendingMpi pending{{request}, {kWholeGroup}, std::move(buffers), {}};
  wait(pending, ctx, call);
}

namespace {
// A posted MPI_Iallreduce: wait() polls it to the end, then divides for avg.
class MpiPendingAllReduce : public PendingCollective {
 public:
  MpiPendingAllReduce(MpiCommunicator& comm, PendingMpi pending, ReduceOp op)
      : comm_(comm), pending_(std::move(pending)), op_(op) {}
  ~MpiPendingAllReduce() override { park_if_pending(pending_); }  // never waited for: MPI may still write

  void wait(const OpContext& ctx) override {
    comm_.wait(pending_, ctx, "MPI_Iallreduce");
    if (op_ == ReduceOp::avg) divide_by(pending_.buffers[0], comm_.size());
  }

 private:
  MpiCommunicator& comm_;
  PendingMpi pending_;
  ReduceOp op_;
};
}  // namespace

std::unique_ptr<PendingCollective> MpiCommunicator::post_all_reduce(const Tensor& t, ReduceOp op,
                                                                    const OpContext& ctx) {
  PendingMpi pending{{MPI_REQUEST_NULL}, {kWholeGroup}, {t}, {}};
  check_mpi(MPI_Iallreduce(MPI_IN_PLACE, t.raw_data(), mpi_count(t.numel(), ctx), mpi_type(t.dtype()), mpi_op(op),
                           collective_, &pending.requests[0]),
            "MPI_Iallreduce", rank_);
  return std::make_unique<MpiPendingAllReduce>(*this, std::move(pending), op);
}

void MpiCommunicator::all_reduce(const Tensor& t, ReduceOp op, const OpContext& ctx) {
  post_all_reduce(t, op, ctx)->wait(ctx);
}

// MPI_Allreduce itself: no polling, so no timeout (the group's timeout cannot apply).
void MpiCommunicator::all_reduce_blocking(const Tensor& t, ReduceOp op, const OpContext& ctx) {
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, t.raw_data(), mpi_count(t.numel(), ctx), mpi_type(t.dtype()), mpi_op(op),
                          collective_),
            "MPI_Allreduce", rank_);
  if (op == ReduceOp::avg) divide_by(t, size_);
}

void MpiCommunicator::broadcast(const Tensor& t, int root, const OpContext& ctx) {
  MPI_Request request;
  check_mpi(MPI_Ibcast(t.raw_data(), mpi_count(t.numel(), ctx), mpi_type(t.dtype()), root, collective_, &request),
            "MPI_Ibcast", rank_);
  wait_collective(request, {t}, ctx, "MPI_Ibcast");
}

void MpiCommunicator::reduce(const Tensor& t, int root, ReduceOp op, const OpContext& ctx) {
  MPI_Request request;
  const void* send = rank_ == root ? MPI_IN_PLACE : t.raw_data();
  check_mpi(MPI_Ireduce(send, t.raw_data(), mpi_count(t.numel(), ctx), mpi_type(t.dtype()), mpi_op(op), root,
                        collective_, &request),
            "MPI_Ireduce", rank_);
  wait_collective(request, {t}, ctx, "MPI_Ireduce");
  if (op == ReduceOp::avg && rank_ == root) divide_by(t, size_);
}

void MpiCommunicator::all_gather(const Tensor& output, const Tensor& input, const OpContext& ctx) {
  MPI_Request request;
  int count = mpi_count(input.numel(), ctx);
  check_mpi(MPI_Iallgather(input.raw_data(), count, mpi_type(input.dtype()), output.raw_data(), count,
                           mpi_type(output.dtype()), collective_, &request),
            "MPI_Iallgather", rank_);
  wait_collective(request, {input, output}, ctx, "MPI_Iallgather");
}

void MpiCommunicator::reduce_scatter(const Tensor& output, const Tensor& input, ReduceOp op, const OpContext& ctx) {
  MPI_Request request;
  check_mpi(MPI_Ireduce_scatter_block(input.raw_data(), output.raw_data(), mpi_count(output.numel(), ctx),
                                      mpi_type(input.dtype()), mpi_op(op), collective_, &request),
            "MPI_Ireduce_scatter_block", rank_);
  wait_collective(request, {input, output}, ctx, "MPI_Ireduce_scatter_block");
  if (op == ReduceOp::avg) divide_by(output, size_);
}

void MpiCommunicator::barrier(const OpContext& ctx) {
  MPI_Request request;
  check_mpi(MPI_Ibarrier(collective_, &request), "MPI_Ibarrier", rank_);
  wait_collective(request, {}, ctx, "MPI_Ibarrier");
}

std::unique_ptr<P2PRequest> MpiCommunicator::start_p2p(const std::vector<P2POp>& ops, Channel channel, int64_t tag) {
  MPI_Comm comm = channel == Channel::user ? user_ : collective_;
  OpContext ctx{rank_, tag, "point-to-point", {}, 0};
  PendingMpi pending;
  for (const P2POp& op : ops) {
    const int bytes = mpi_count(static_cast<int64_t>(op.buffer.nbytes()), ctx);
    void* data = bytes ? op.buffer.raw_data() : nullptr;
    pending.requests.push_back(MPI_REQUEST_NULL);
    pending.peers.push_back(op.peer);
    pending.buffers.push_back(op.buffer);
    if (op.kind == P2POp::recv) {
      pending.arrivals.push_back({pending.requests.size() - 1, data, bytes, mpi_tag(tag), comm});
      continue;
    }
    const int rc = MPI_Isend(data, bytes, MPI_BYTE, op.peer, mpi_tag(tag), comm, &pending.requests.back());
    if (rc != MPI_SUCCESS) park_if_pending(pending);  // the sends already started keep their buffers
    check_mpi(rc, "MPI_Isend", rank_);
  }
  return std::make_unique<MpiRequest>(*this, std::move(pending));
}

int MpiCommunicator::recv_any(const Tensor& buffer, int64_t tag, const OpContext& ctx) {
  const int bytes = mpi_count(static_cast<int64_t>(buffer.nbytes()), ctx);
  PendingMpi pending{{MPI_REQUEST_NULL}, {kAnyRank}, {buffer}, {}};
  pending.arrivals.push_back({0, bytes ? buffer.raw_data() : nullptr, bytes, mpi_tag(tag), user_});
  wait(pending, ctx, "point-to-point");
  return pending.peers[0];
}

namespace {

constexpr int kSignatureWords = sizeof(CollectiveSignature) / sizeof(int64_t);
static_assert(sizeof(CollectiveSignature) == kSignatureWords * sizeof(int64_t));

Tensor words_of(const CollectiveSignature& s) {
  Tensor t = Tensor::empty({kSignatureWords}, DType::int64);
  std::memcpy(t.raw_data(), &s, sizeof s);
  return t;
}

std::vector<CollectiveSignature> signatures_in(const Tensor& all) {
  std::vector<CollectiveSignature> out(static_cast<size_t>(all.numel() / kSignatureWords));
  std::memcpy(out.data(), all.raw_data(), all.nbytes());
  return out;
}

// The signatures of every rank, gathered on the control communicator (where nothing else
// is sized by the user, so this exchange always matches) while the collective runs.
class MpiAgreement : public Agreement {
 public:
  MpiAgreement(MpiCommunicator& comm, const CollectiveSignature& mine, MPI_Comm control, int size)
      : comm_(comm), mine_(words_of(mine)), all_(Tensor::empty({size * kSignatureWords}, DType::int64)) {
    pending_ = {{MPI_REQUEST_NULL}, {kWholeGroup}, {mine_, all_}, {}};
    check_mpi(MPI_Iallgather(mine_.raw_data(), kSignatureWords, MPI_INT64_T, all_.raw_data(), kSignatureWords,
                             MPI_INT64_T, control, &pending_.requests[0]),
              "MPI_Iallgather", comm.rank());
  }
  ~MpiAgreement() override { park_if_pending(pending_); }

  void poll(const OpContext& ctx) override {
    if (checked_) return;
    int done = 0;
    check_mpi(MPI_Test(&pending_.requests[0], &done, MPI_STATUS_IGNORE), "MPI_Test", comm_.rank());
    if (done) verify(ctx);
  }

  void finish(const OpContext& ctx) override {
    if (checked_) return;
    OpContext alone = ctx;
    alone.agreement = nullptr;  // the wait below is this agreement's own
    comm_.wait(pending_, alone, "the check that every rank runs this collective");
    verify(ctx);
  }

 private:
  void verify(const OpContext& ctx) {
    checked_ = true;
    const std::string mismatch = disagreement(signatures_in(all_));
    if (!mismatch.empty()) ctx.fail("ranks disagree on the collective: " + mismatch);
  }

  MpiCommunicator& comm_;
  Tensor mine_, all_;
  PendingMpi pending_;
  bool checked_ = false;
};

}  // namespace

std::vector<CollectiveSignature> MpiCommunicator::gather_signatures(const CollectiveSignature& mine,
                                                                    const OpContext& ctx) {
  Tensor words = words_of(mine), all = Tensor::empty({size_ * kSignatureWords}, DType::int64);
  MPI_Request request;
  check_mpi(MPI_Iallgather(words.raw_data(), kSignatureWords, MPI_INT64_T, all.raw_data(), kSignatureWords,
                           MPI_INT64_T, control_, &request),
            "MPI_Iallgather", rank_);
  wait_collective(request, {words, all}, ctx, "the debug signature exchange");
  return signatures_in(all);
}

// MPI's own collectives must never meet a mismatched call: OpenMPI's non-blocking ones
// abort the process when a message does not fit (NBC_Start_round). So their signatures are
// compared first, a small exchange on the control communicator; DDP's buckets skip it
// (ProcessGroup::agree covers a whole step). The hand-written algorithms are safe to start
// at once, since every receive checks the size of what arrives before taking it, so their
// check runs beside them.
std::unique_ptr<Agreement> MpiCommunicator::start_agreement(const CollectiveSignature& mine, const OpContext& ctx) {
  auto agreement = std::make_unique<MpiAgreement>(*this, mine, control_, size_);
  if (!is_library(static_cast<Algorithm>(mine.algorithm))) return agreement;
  agreement->finish(ctx);
  return nullptr;
}

void MpiCommunicator::agree(const OpContext& ctx) { MpiAgreement(*this, *ctx.signature, control_, size_).finish(ctx); }

void MpiCommunicator::abort(int exit_code) {
  runtime().broken = true;
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);  // MPI_Abort does not return; this satisfies [[noreturn]]
}

std::unique_ptr<Communicator> make_mpi_communicator(int argc, char** argv) {
  return std::make_unique<MpiCommunicator>(argc, argv);
}

}  // namespace rg::parallel
