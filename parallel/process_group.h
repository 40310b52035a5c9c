// Process groups: one interface over three backends (`local` threads, `mpi` processes,
// `nccl` GPUs) for the collectives data-parallel training needs. Every op has a blocking
// and an async form (a Work handle), counts its traffic per rank, and gives up with an
// rg::Error after the group's timeout instead of hanging (DESIGN.md section 6).
#pragma once
#include <atomic>
#include <functional>
#include <iosfwd>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "parallel/observer.h"
#include "tensor/tensor.h"

namespace rg::parallel {

enum class ReduceOp { sum, avg, max, min };  // avg needs a floating dtype
// How a collective moves data: the backend's own (MPI's or NCCL's), or one of the
// hand-written algorithms of parallel/algorithms.h built on point-to-point messages.
// library_blocking is the backend's plain blocking call (MPI_Allreduce), the reference a
// hand-written all-reduce is measured against (claim C09): it cannot give up after the
// group's timeout, which is why `library` (MPI_Iallreduce, polled) is the default.
enum class Algorithm { library, ring, pipelined_ring, relay, star, library_blocking };

const char* reduce_op_name(ReduceOp op);
const char* algorithm_name(Algorithm algorithm);
// library or library_blocking: the backend's own collective, not messages of ours.
bool is_library(Algorithm algorithm);
// "library", "ring", "pipelined_ring", "relay", "star", "library_blocking"; the older spelling "naive_ring"
// still means relay.
Algorithm parse_algorithm(const std::string& name);
const std::vector<Algorithm>& all_algorithms();

struct ProcessGroupOptions {
  std::string backend = "local";             // "local", "mpi" or "nccl"
  Algorithm algorithm = Algorithm::library;  // all_reduce's default in this group
  double timeout_s = 0;  // every blocking wait; 0: $RINGGRAD_COLLECTIVE_TIMEOUT_S, else 300
  bool debug = false;    // check ranks agree before each collective; also RINGGRAD_DISTRIBUTED_DEBUG=detail
};

struct AllReduceOptions {
  ReduceOp op = ReduceOp::sum;
  std::optional<Algorithm> algorithm = std::nullopt;  // unset: the group's
  std::ostream* trace = nullptr;  // ring: print which chunk each rank passes at each step
  // Every rank is known to make this same call (DDP's buckets, after its per-step agree()):
  // skip the check each collective otherwise makes that all ranks call the same one. With
  // nothing to check first, a library all-reduce is then started from the caller's thread
  // when the communication thread is idle (Communicator::post_all_reduce).
  bool agreed = false;
  // With agreed, for a library all-reduce: the caller waits for it as soon as this returns
  // (DDP's last bucket of a step). With the communication thread idle it then runs start to
  // end on the caller's thread, as a blocking call does, sparing the thread's wake-up (a
  // context switch on a core the caller is using).
  bool waited_at_once = false;
};

// reduce_scatter and all_gather run the library's collective unless `algorithm` is ring
// (ring_reduce_scatter / ring_all_gather); the group's all_reduce default does not apply.
struct ReduceScatterOptions {
  ReduceOp op = ReduceOp::sum;
  Algorithm algorithm = Algorithm::library;  // library or ring
  std::ostream* trace = nullptr;
};
struct AllGatherOptions {
  Algorithm algorithm = Algorithm::library;  // library or ring
  std::ostream* trace = nullptr;
};

// Traffic of one rank since the last reset_stats(). Hand-written algorithms count every
// message they send and receive; `library` ops count their payload (all_reduce of S
// bytes: S sent and S received), since the library's internal traffic is invisible.
struct CommStats {
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
  double seconds = 0;  // summed duration of the ops, measured where they run
  int64_t operations = 0;
};

// An op in flight. wait() returns when the op is done, rethrows its error, or throws when
// the op has run longer than the group's timeout.
class Work {
 public:
  virtual ~Work() = default;
  virtual void wait() = 0;
  virtual bool is_completed() const = 0;
};

// A receive from any rank in flight: source() waits like wait(), then names the sender.
class RecvAnyWork : public Work {
 public:
  virtual int source() = 0;
};

class Communicator;
class CommThread;
class TrafficCounter;
struct OpContext;
struct CollectiveSignature;

// All ops of a group run in the order they were issued: async ones on the group's
// communication thread, blocking ones on the caller's thread when nothing is queued
// (otherwise they queue behind the async ones and wait); an agreed all-reduce posted by
// the caller and waited for before that thread picks it up ends on the caller's thread
// too. Collectives must be issued in the same order on every rank, from one thread per
// group. Tensors are updated in place and must live on the backend's devices (CPU for
// local and mpi, CUDA for nccl); non-contiguous tensors work through a contiguous copy.
// An op that fails or times out marks the group broken: every later op throws at once.
// The library never exits; a program ends a broken job with abort() (MPI_Abort under
// MPI, because finalising with requests pending would hang).
class ProcessGroup {
 public:
  ProcessGroup(std::unique_ptr<Communicator> comm, const ProcessGroupOptions& options);
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const;
  int size() const;
  int local_rank() const;  // rank among the processes of this node (the GPU to use)
  std::string backend() const;
  Algorithm algorithm() const { return algorithm_; }
  double timeout_s() const { return timeout_s_; }
  bool debug() const { return debug_; }

  void all_reduce(const Tensor& t, const AllReduceOptions& options = {});
  void broadcast(const Tensor& t, int root = 0);
  void reduce(const Tensor& t, int root = 0, ReduceOp op = ReduceOp::sum);  // result on root only
  // output: size() * input.numel() elements, rank r's input at [r * input.numel(), ...).
  void all_gather(const Tensor& output, const Tensor& input, const AllGatherOptions& options = {});
  // input: size() * output.numel() elements; rank r's output is the reduction of every
  // rank's block r.
  void reduce_scatter(const Tensor& output, const Tensor& input, const ReduceScatterOptions& options = {});
  void barrier();
  // A collective without data: every rank says where it is (a step number and a layout,
  // e.g. a hash of the buckets it will all-reduce) and every rank throws, naming what each
  // said, unless all say the same. DDP calls it once per step so that the step's bucket
  // all-reduces need no check of their own.
  void agree(int64_t step, int64_t layout);
  // Point to point. A send completes when the receiver has the data (on mpi, small
  // messages may complete earlier), and ops run in issue order, so two ranks that both
  // send first deadlock until the timeout: order sends and receives, or use a collective.
  void send(const Tensor& t, int dst, int tag = 0);
  void recv(const Tensor& t, int src, int tag = 0);
  // Receives the first message with `tag` to arrive, whichever rank sent it, and returns
  // the sender's rank: how a parameter server serves workers in arrival order. The
  // message must fill `t` exactly. Not on nccl (NCCL matches receives to named senders).
  int recv_any(const Tensor& t, int tag = 0);

  std::shared_ptr<Work> all_reduce_async(const Tensor& t, const AllReduceOptions& options = {});
  std::shared_ptr<Work> broadcast_async(const Tensor& t, int root = 0);
  std::shared_ptr<Work> reduce_async(const Tensor& t, int root = 0, ReduceOp op = ReduceOp::sum);
  std::shared_ptr<Work> all_gather_async(const Tensor& output, const Tensor& input, const AllGatherOptions& options = {});
  std::shared_ptr<Work> reduce_scatter_async(const Tensor& output, const Tensor& input,
                                             const ReduceScatterOptions& options = {});
  std::shared_ptr<Work> barrier_async();
  std::shared_ptr<Work> send_async(const Tensor& t, int dst, int tag = 0);
  std::shared_ptr<Work> recv_async(const Tensor& t, int src, int tag = 0);
  std::shared_ptr<RecvAnyWork> recv_any_async(const Tensor& t, int tag = 0);

  // This rank's traffic (counted by the group's own observer): every op but agree(), whose
  // exchange, like the check beside each collective, is the group's own.
  CommStats stats() const;
  void reset_stats();
  // Also reports every op to `observer` (e.g. a TraceObserver), from the thread that ran
  // it: the communication thread for async ops (the caller's, for an agreed all-reduce it
  // posted and waited for before that thread picked it up, or ran itself as
  // waited_at_once). Null stops it. Set it between ops; the observer must outlive them.
  void set_observer(Observer* observer) { observers_.set_second(observer); }
  bool is_broken() const;
  // Ends the whole job now (MPI_Abort on mpi and nccl; the process in a local world).
  [[noreturn]] void abort(int exit_code = 1);

 private:
  using Body = std::function<void(const OpContext& ctx, CommStats& traffic)>;
  // Queues `body`: a collective when `signature` is set (sequence-numbered and, in debug
  // mode, checked across ranks first), else a point-to-point op.
  std::shared_ptr<Work> submit(std::optional<CollectiveSignature> signature, const std::string& label, Body body,
                               bool agreed = false);
  // A collective the ranks agreed on, in two halves: `post` starts it without blocking
  // (on the caller's thread when the communication thread is idle) and returns the body
  // that ends it.
  using Post = std::function<Body(const OpContext& ctx)>;
  std::shared_ptr<Work> submit_posted(CollectiveSignature signature, const std::string& label, Post post,
                                      bool waited_at_once);
  std::string describe_op(const std::string& label, int64_t seq) const;  // "rank 0: barrier #5"
  OpContext context_from(Clock::time_point start, const std::string& label, int64_t seq,
                         const CollectiveSignature* signature, bool agreed) const;
  // Runs start() (an *_async call) so that the op may run on this thread, then waits.
  template <class Start>
  void blocking(Start start);
  void check_signatures(const CollectiveSignature& mine, const OpContext& ctx);
  void check_tensor(const Tensor& t, const char* what) const;
  void check_rank(int peer, const char* what) const;

  std::unique_ptr<Communicator> comm_;
  Algorithm algorithm_;
  double timeout_s_;
  bool debug_;
  int64_t next_seq_ = 0;      // collectives issued so far (user thread only)
  int64_t next_p2p_seq_ = 0;  // sends and receives issued so far
  bool blocking_call_ = false;  // the op being submitted comes from a blocking call
  std::shared_ptr<TrafficCounter> counter_;
  ObserverTee observers_;  // the counter, then the user's
  std::unique_ptr<CommThread> thread_;  // declared last: stopped before the communicator goes
};

// Starts this process's group. "local" gives a world of one rank. "mpi" and "nccl" run
// under mpirun (rank, size and local rank come from MPI) and initialise MPI at
// MPI_THREAD_MULTIPLE unless the program already has (then that level is required), since
// the communication thread calls MPI while the program's threads may too. OpenMPI makes
// no asynchronous progress: a non-blocking op advances only while some thread is inside
// MPI, so the communication thread polls every op it runs until done, and that is what
// lets an async all-reduce overlap the caller's computation. MPI is finalised at exit
// unless a group broke; a broken MPI job must end with abort().
std::shared_ptr<ProcessGroup> init_process_group(const ProcessGroupOptions& options, int argc = 0,
                                                 char** argv = nullptr);

// The backends this build has: "local", and "mpi" and "nccl" where they were found.
std::vector<std::string> built_backends();

// "rank 2: <message>", with the prefix once: the process group's own errors start so already.
std::string from_rank(int rank, const std::string& message);

// A collective: every rank's `text`, in rank order (for messages and traces; any length).
std::vector<std::string> all_gather_strings(ProcessGroup& pg, const std::string& text);

// A collective: the ranks' `values` summed element by element, in float64 (so counts up to
// 2^53 stay exact), on every rank: sums and counts of a measurement made in shares.
std::vector<double> sum_over_ranks(ProcessGroup& pg, const std::vector<double>& values);

// A collective: every rank's stats() as they were when it was called, in rank order (the
// traffic of a run or a measurement, rank by rank, on every rank).
std::vector<CommStats> all_gather_stats(ProcessGroup& pg);

// Runs fn(group) for ranks 0..world_size-1 on world_size threads of this process sharing
// memory, each with its own 1/world_size share of the CPU thread pool. Returns when all
// are done; if a rank throws, the others' waits end at once and the first error is
// rethrown here, naming its rank.
void run_local_world(int world_size, const std::function<void(std::shared_ptr<ProcessGroup>)>& fn,
                     ProcessGroupOptions options = {});

}  // namespace rg::parallel
