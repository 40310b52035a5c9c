// What a backend provides to ProcessGroup: identity, the library's own collectives, batches
// of point-to-point messages (all the hand-written algorithms need), a receive from any
// rank (the parameter server's) and a gather of collective signatures for debug mode. Every method
// runs on the group's communication thread and must give up at ctx.deadline with
// ctx.timeout(...), so nothing waits forever.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "parallel/process_group.h"

namespace rg::parallel {

// What ranks must agree on for a collective: debug mode compares it across ranks before
// each one (the local backend always does), and names the first difference.
enum class OpKind : int64_t { all_reduce, broadcast, reduce, all_gather, reduce_scatter, barrier, agree };
const char* op_kind_name(OpKind kind);
struct CollectiveSignature {
  int64_t seq = 0;
  OpKind kind = OpKind::barrier;
  int64_t dtype = 0;  // rg::DType
  int64_t numel = 0;
  int64_t root = 0;                      // broadcast and reduce; agree: the step

  int64_t reduce_op = 0;                 // parallel::ReduceOp, where the op reduces
  int64_t algorithm = 0;                 // parallel::Algorithm
  bool operator==(const CollectiveSignature&) const = default;
};
// "all_reduce (avg, ring) of 10 float32 (#3)", "broadcast of 4 int64 from root 0 (#0)", "barrier (#5)".
std::string describe(const CollectiveSignature& s);
// "" when every rank's signature (in rank order) is the same; else "rank 0 <what>, rank 2 <what>".
std::string disagreement(const std::vector<CollectiveSignature>& all);

class Agreement;

// `seconds` after `start`, at most about three years: a huge timeout (inf, 1e10) waits long
// instead of overflowing the clock into the past.
Clock::time_point deadline_after(Clock::time_point start, double seconds);

// Whether this thread is a process group's communication thread (comm_thread.cpp): a
// backend's wait there shares the cores with the caller's compute, and yields sooner than
// a wait on the caller's thread (mpi_communicator.cpp).
bool on_communication_thread();

// Identifies one op in error messages and carries its deadline.
struct OpContext {
  int rank = 0;
  int64_t seq = 0;
  std::string op;  // e.g. "all_reduce (ring)"
  Clock::time_point deadline;
  double timeout_s = 0;
  const CollectiveSignature* signature = nullptr;  // a collective's; null for point-to-point ops
  Agreement* agreement = nullptr;  // the check running beside this collective, if any
  bool agreed = false;             // the ranks agreed on this call already (AllReduceOptions::agreed)

  // "rank 0: all_reduce (ring) #3 timed out after 2 s waiting for <what>"
  [[noreturn]] void timeout(const std::string& what) const;
  [[noreturn]] void fail(const std::string& what) const;  // "rank 0: all_reduce (ring) #3: <what>"
};

struct P2POp {
  enum Kind { send, recv } kind;
  Tensor buffer;  // contiguous
  int peer;
};

// Messages of collectives (tag = sequence number) never match user send/recv.
enum class Channel { collective, user };

// The check, running beside a collective, that every rank is running the same one (kind,
// size, dtype, reduce op, algorithm, sequence number): it costs no round trip of its own,
// so it is always on. poll() is called from the op's waits and throws, naming every rank's
// call, as soon as the signatures are in and differ; finish() waits for them at the op's end.
class Agreement {
 public:
  virtual ~Agreement() = default;
  virtual void poll(const OpContext& ctx) = 0;
  virtual void finish(const OpContext& ctx) = 0;
};

// A collective started without blocking (Communicator::post_all_reduce); wait() ends it.
class PendingCollective {
 public:
  virtual ~PendingCollective() = default;
  virtual void wait(const OpContext& ctx) = 0;
};

class P2PRequest {
 public:
  virtual ~P2PRequest() = default;
  virtual void wait(const OpContext& ctx) = 0;  // all the batch's messages are done
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual std::string name() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual int local_rank() const = 0;
  virtual bool accepts(const Tensor& t) const = 0;  // on a device this backend handles
  virtual std::string device_rule() const = 0;      // for the error when it does not

  // The library's collectives; tensors are contiguous, lengths already checked.
  virtual void all_reduce(const Tensor& t, ReduceOp op, const OpContext& ctx) = 0;
  // The backend's plain blocking all-reduce (Algorithm::library_blocking), where it has one
  // apart from the call above (MPI_Allreduce); the others run all_reduce.
  virtual void all_reduce_blocking(const Tensor& t, ReduceOp op, const OpContext& ctx) { all_reduce(t, op, ctx); }
  // all_reduce in two halves: this call starts it without blocking, so that it may run on
  // the caller's thread (the transfer starts before the communication thread wakes up),
  // and the returned wait() ends it. A backend with no non-blocking start (the default)
  // does the whole all_reduce in wait().
  virtual std::unique_ptr<PendingCollective> post_all_reduce(const Tensor& t, ReduceOp op, const OpContext& ctx);
  virtual void broadcast(const Tensor& t, int root, const OpContext& ctx) = 0;
  virtual void reduce(const Tensor& t, int root, ReduceOp op, const OpContext& ctx) = 0;
  virtual void all_gather(const Tensor& output, const Tensor& input, const OpContext& ctx) = 0;
  virtual void reduce_scatter(const Tensor& output, const Tensor& input, ReduceOp op, const OpContext& ctx) = 0;
  virtual void barrier(const OpContext& ctx) = 0;

  // Starts every message of `ops` at once (a ring step sends and receives together).
  virtual std::unique_ptr<P2PRequest> start_p2p(const std::vector<P2POp>& ops, Channel channel, int64_t tag) = 0;
  // Receives the first user message with `tag` to arrive, from whichever rank sent it, into
  // `buffer` (contiguous; the message must fill it exactly) and returns the sender's rank.
  virtual int recv_any(const Tensor& buffer, int64_t tag, const OpContext& ctx) = 0;
  // Every rank's signature, in rank order (debug mode: before the collective, blocking).
  virtual std::vector<CollectiveSignature> gather_signatures(const CollectiveSignature& mine, const OpContext& ctx) = 0;
  // Makes sure every rank runs the same collective as this one, as cheaply as the backend
  // allows without ever letting mismatched calls meet where they could corrupt memory:
  // returns an Agreement to finish beside the collective, or null when the check is done
  // (or, for a collective of the backend's own, not needed).
  virtual std::unique_ptr<Agreement> start_agreement(const CollectiveSignature& mine, const OpContext& ctx) = 0;
  // The body of ProcessGroup::agree: every rank's ctx.signature compared, nothing else.
  virtual void agree(const OpContext& ctx) = 0;
  [[noreturn]] virtual void abort(int exit_code) = 0;
};

// Sum, max or min of `incoming` into `acc` (same shape, any device); avg folds as sum.
void reduce_into(const Tensor& acc, const Tensor& incoming, ReduceOp op);
// t /= n in place, exactly as a serial sum / n would round.
void divide_by(const Tensor& t, int n);

// Backend factories (each in its own file; mpi and nccl only when built).
std::unique_ptr<Communicator> make_mpi_communicator(int argc, char** argv);
std::unique_ptr<Communicator> make_nccl_communicator(int argc, char** argv);

}  // namespace rg::parallel
