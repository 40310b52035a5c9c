// ProcessGroup: argument checks on the caller's thread, then each op handed to the
// CommThread (queued, or run at once for an idle blocking call) with its sequence number,
// deadline and optional debug signature check; when it ends, its traffic goes to the
// observers. Which backend moves the bytes is the Communicator's business.
#include "parallel/process_group.h"

#include <algorithm>
#include <cstdlib>
#include <cctype>
#include <cmath>
#include <cstring>
#include <utility>

#include "parallel/algorithms.h"
#include "parallel/comm_thread.h"
#include "parallel/communicator.h"
#include "parallel/local_world.h"
#include "tensor/ops.h"

namespace rg::parallel {

namespace {
constexpr double kDefaultTimeoutS = 300;

// A huge timeout (inf, 1e10) means "wait long", never "time out at once".
double resolve_timeout(double requested) {
  RG_CHECK(!(requested < 0) && !std::isnan(requested), "ProcessGroupOptions::timeout_s must be >= 0, got ", requested);
  if (requested > 0) return requested;
  if (const char* env = std::getenv("RINGGRAD_COLLECTIVE_TIMEOUT_S")) {
    char* end = nullptr;
    double value = std::strtod(env, &end);
    RG_CHECK(end != env && *end == '\0' && value > 0, "RINGGRAD_COLLECTIVE_TIMEOUT_S='", env,
             "' must be a positive number of seconds (inf: no limit in practice)");
    return value;
  }
  return kDefaultTimeoutS;
}

// PyTorch's TORCH_DISTRIBUTED_DEBUG values, in any case: OFF, INFO (nothing more here) or
// DETAIL (check every collective); anything else is a mistake worth stopping for.
bool resolve_debug(bool requested) {
  const char* env = std::getenv("RINGGRAD_DISTRIBUTED_DEBUG");
  if (!env) return requested;
  std::string value(env);
  std::transform(value.begin(), value.end(), value.begin(), [](unsigned char c) { return std::tolower(c); });
  RG_CHECK(value == "off" || value == "info" || value == "detail", "RINGGRAD_DISTRIBUTED_DEBUG='", env,
           "' is not OFF, INFO or DETAIL");
  return requested || value == "detail";
}

// Runs fn on a contiguous 1-d view of t, copying back if t had to be made contiguous.
template <class Fn>
void on_flat(const Tensor& t, Fn&& fn) {
  Tensor dense = t.contiguous();
  fn(dense.view({dense.numel()}));
  if (!dense.same_data(t)) t.copy_(dense);
}

// The op's Work and the sender its body records there; the Work's completion publishes it.
class RecvAnyItem : public RecvAnyWork {
 public:
  RecvAnyItem(std::shared_ptr<Work> work, std::shared_ptr<int> source)
      : work_(std::move(work)), source_(std::move(source)) {}
  void wait() override { work_->wait(); }
  bool is_completed() const override { return work_->is_completed(); }
  int source() override {
    wait();
    return *source_;
  }

 private:
  std::shared_ptr<Work> work_;
  std::shared_ptr<int> source_;
};

// For a backend with no non-blocking start: the whole all-reduce runs when waited for.
class DeferredAllReduce : public PendingCollective {
 public:
  DeferredAllReduce(Communicator& comm, Tensor t, ReduceOp op) : comm_(comm), t_(std::move(t)), op_(op) {}
  void wait(const OpContext& ctx) override { comm_.all_reduce(t_, op_, ctx); }

 private:
  Communicator& comm_;
  Tensor t_;
  ReduceOp op_;
};
}  // namespace

std::unique_ptr<PendingCollective> Communicator::post_all_reduce(const Tensor& t, ReduceOp op, const OpContext&) {
  return std::make_unique<DeferredAllReduce>(*this, t, op);
}

class TrafficCounter : public Observer {
 public:
  void op_finished(const OpRecord& op) override {
    std::lock_guard lock(mutex_);
    totals_.bytes_sent += op.bytes_sent;
    totals_.bytes_received += op.bytes_received;
    totals_.seconds += std::chrono::duration<double>(op.end - op.start).count();
    totals_.operations += 1;
  }
  CommStats totals() const {
    std::lock_guard lock(mutex_);
    return totals_;
  }
  void reset() {
    std::lock_guard lock(mutex_);
    totals_ = {};
  }

 private:
  mutable std::mutex mutex_;
  CommStats totals_;
};

ProcessGroup::ProcessGroup(std::unique_ptr<Communicator> comm, const ProcessGroupOptions& options)
    : comm_(std::move(comm)),
      algorithm_(options.algorithm),
      timeout_s_(resolve_timeout(options.timeout_s)),
      debug_(resolve_debug(options.debug)),
      counter_(std::make_shared<TrafficCounter>()),
      observers_(counter_),
      thread_(std::make_unique<CommThread>(timeout_s_)) {}

ProcessGroup::~ProcessGroup() = default;

int ProcessGroup::rank() const { return comm_->rank(); }
int ProcessGroup::size() const { return comm_->size(); }
int ProcessGroup::local_rank() const { return comm_->local_rank(); }
std::string ProcessGroup::backend() const { return comm_->name(); }
bool ProcessGroup::is_broken() const { return thread_->is_broken(); }
void ProcessGroup::abort(int exit_code) {
  comm_->abort(exit_code);
  std::_Exit(exit_code);  // not reached: every backend's abort ends the process
}

CommStats ProcessGroup::stats() const { return counter_->totals(); }
void ProcessGroup::reset_stats() { counter_->reset(); }

void ProcessGroup::check_tensor(const Tensor& t, const char* what) const {
  RG_CHECK(t.defined(), what, ": the tensor is undefined");
  RG_CHECK(comm_->accepts(t), what, ": a tensor on ", t.device().str(), " cannot go through the ", comm_->name(),
           " backend (", comm_->device_rule(), ")");
}

void ProcessGroup::check_rank(int peer, const char* what) const {
  RG_CHECK(peer >= 0 && peer < size(), what, ": rank ", peer, " is not in a group of ", size());
}

std::shared_ptr<Work> ProcessGroup::submit(std::optional<CollectiveSignature> signature, const std::string& label,
                                           Body body, bool agreed) {
  thread_->check_not_broken();
  int64_t seq = signature ? next_seq_++ : next_p2p_seq_++;
  if (signature) signature->seq = seq;
  bool caller_waits = std::exchange(blocking_call_, false);
  return thread_->submit(describe_op(label, seq), [this, signature, label, seq, agreed, body = std::move(body)] {
    const auto start = Clock::now();
    OpContext ctx = context_from(start, label, seq, signature ? &*signature : nullptr, agreed);
    // Debug mode checks every collective before it runs; otherwise the backend checks as
    // cheaply as it safely can, unless the ranks agreed already (agree() is its own check).
    if (signature && debug_) check_signatures(*signature, ctx);
    const bool check = signature && !debug_ && !agreed && signature->kind != OpKind::agree;
    std::unique_ptr<Agreement> agreement = check ? comm_->start_agreement(*signature, ctx) : nullptr;
    ctx.agreement = agreement.get();
    CommStats traffic;
    body(ctx, traffic);
    if (agreement) agreement->finish(ctx);
    // agree() is the group's own check, like the one beside every collective: not traffic.
    if (!signature || signature->kind != OpKind::agree)
      observers_.op_finished({label, seq, traffic.bytes_sent, traffic.bytes_received, start, Clock::now()});
  }, caller_waits);
}

std::shared_ptr<Work> ProcessGroup::submit_posted(CollectiveSignature signature, const std::string& label, Post post,
                                                  bool waited_at_once) {
  thread_->check_not_broken();
  signature.seq = next_seq_++;
  // What the two halves share: the op's context from its start, and the body that ends it.
  struct Posted {
    CollectiveSignature signature;
    Clock::time_point start;
    OpContext ctx;
    Body complete;
  };
  auto op = std::make_shared<Posted>(Posted{signature, {}, {}, {}});
  auto post_half = [this, op, label, post = std::move(post)] {
    op->start = Clock::now();
    op->ctx = context_from(op->start, label, op->signature.seq, &op->signature, /*agreed=*/true);
    op->complete = post(op->ctx);
  };
  auto complete_half = [this, op, label] {
    CommStats traffic;
    op->complete(op->ctx, traffic);
    observers_.op_finished({label, op->signature.seq, traffic.bytes_sent, traffic.bytes_received, op->start,
                            Clock::now()});
  };
  // A blocking call runs both halves as one op (on this thread, when the group is idle).
  if (std::exchange(blocking_call_, false) || waited_at_once)
    return thread_->submit(describe_op(label, signature.seq), [post_half, complete_half] {
      post_half();
      complete_half();
    }, /*caller_waits=*/true);
  return thread_->submit_posted(describe_op(label, signature.seq), post_half, complete_half);
}

std::string ProcessGroup::describe_op(const std::string& label, int64_t seq) const {
  return detail::concat("rank ", rank(), ": ", label, " #", seq);
}

OpContext ProcessGroup::context_from(Clock::time_point start, const std::string& label, int64_t seq,
                                     const CollectiveSignature* signature, bool agreed) const {
  return {rank(), seq, label, deadline_after(start, timeout_s_), timeout_s_, signature, nullptr, agreed};
}

void ProcessGroup::check_signatures(const CollectiveSignature& mine, const OpContext& ctx) {
  const std::string mismatch = disagreement(comm_->gather_signatures(mine, ctx));
  if (!mismatch.empty()) ctx.fail("ranks disagree on the collective (RINGGRAD_DISTRIBUTED_DEBUG=detail): " + mismatch);
}

namespace {
CollectiveSignature signature_of(OpKind kind, const Tensor& t, int64_t root = 0, ReduceOp op = ReduceOp::sum,
                                 Algorithm algorithm = Algorithm::library) {
  return {0, kind, static_cast<int64_t>(t.dtype()), t.numel(), root, static_cast<int64_t>(op),
          static_cast<int64_t>(algorithm)};
}

void check_floating_for_avg(ReduceOp op, const Tensor& t, const char* what) {
  RG_CHECK(op != ReduceOp::avg || is_floating(t.dtype()), what, ": avg needs a floating dtype, not ",
           dtype_name(t.dtype()));
}

void check_library_or_ring(Algorithm algorithm, const char* what) {
  RG_CHECK(algorithm == Algorithm::library || algorithm == Algorithm::ring, what, ": the ", algorithm_name(algorithm),
           " algorithm does not implement it (library or ring)");
}
}  // namespace

std::shared_ptr<Work> ProcessGroup::all_reduce_async(const Tensor& t, const AllReduceOptions& options) {
  check_tensor(t, "all_reduce");
  check_floating_for_avg(options.op, t, "all_reduce");
  const Algorithm algorithm = options.algorithm.value_or(algorithm_);
  RG_CHECK(is_library(algorithm) || is_floating(t.dtype()), "all_reduce: the ", algorithm_name(algorithm),
           " algorithm handles float32 and float64, not ", dtype_name(t.dtype()));
  const std::string label = detail::concat("all_reduce (", algorithm_name(algorithm), ")");
  const CollectiveSignature signature = signature_of(OpKind::all_reduce, t, 0, options.op, algorithm);
  // DDP's buckets: nothing to check first, so the caller may post it (Communicator::post_all_reduce).
  if (algorithm == Algorithm::library && options.agreed && !debug_)
    return submit_posted(signature, label, [this, t, op = options.op](const OpContext& ctx) -> Body {
      const Tensor dense = t.contiguous(), flat = dense.view({dense.numel()});
      std::shared_ptr<PendingCollective> pending = comm_->post_all_reduce(flat, op, ctx);
      return [t, dense, pending](const OpContext& ctx, CommStats& traffic) {
        pending->wait(ctx);
        if (!dense.same_data(t)) t.copy_(dense);
        traffic.bytes_sent += dense.nbytes();
        traffic.bytes_received += dense.nbytes();
      };
    }, options.waited_at_once);
  auto body = [this, t, options, algorithm](const OpContext& ctx, CommStats& traffic) {
    on_flat(t, [&](const Tensor& flat) {
      PointToPoint p2p(*comm_, ctx, traffic);
      switch (algorithm) {
        case Algorithm::library:
        case Algorithm::library_blocking:
          if (algorithm == Algorithm::library) comm_->all_reduce(flat, options.op, ctx);
          else comm_->all_reduce_blocking(flat, options.op, ctx);
          traffic.bytes_sent += flat.nbytes();
          traffic.bytes_received += flat.nbytes();
          break;
        case Algorithm::ring: ring_all_reduce(p2p, flat, options.op, options.trace); break;
        case Algorithm::pipelined_ring: pipelined_ring_all_reduce(p2p, flat, options.op); break;
        case Algorithm::relay: relay_all_reduce(p2p, flat, options.op); break;
        case Algorithm::star: star_all_reduce(p2p, flat, options.op); break;
      }
    });
  };
  return submit(signature, label, body, options.agreed);
}

std::shared_ptr<Work> ProcessGroup::broadcast_async(const Tensor& t, int root) {
  check_tensor(t, "broadcast");
  check_rank(root, "broadcast");
  return submit(signature_of(OpKind::broadcast, t, root), "broadcast",
                [this, t, root](const OpContext& ctx, CommStats& traffic) {
    on_flat(t, [&](const Tensor& flat) { comm_->broadcast(flat, root, ctx); });
    (rank() == root ? traffic.bytes_sent : traffic.bytes_received) += t.nbytes();
  });
}

std::shared_ptr<Work> ProcessGroup::reduce_async(const Tensor& t, int root, ReduceOp op) {
  check_tensor(t, "reduce");
  check_rank(root, "reduce");
  check_floating_for_avg(op, t, "reduce");
  return submit(signature_of(OpKind::reduce, t, root, op), "reduce",
                [this, t, root, op](const OpContext& ctx, CommStats& traffic) {
    on_flat(t, [&](const Tensor& flat) { comm_->reduce(flat, root, op, ctx); });
    (rank() == root ? traffic.bytes_received : traffic.bytes_sent) += t.nbytes();
  });
}

std::shared_ptr<Work> ProcessGroup::all_gather_async(const Tensor& output, const Tensor& input,
                                                     const AllGatherOptions& options) {
  check_tensor(output, "all_gather");
  check_tensor(input, "all_gather");
  check_library_or_ring(options.algorithm, "all_gather");
  RG_CHECK(output.dtype() == input.dtype() && output.numel() == input.numel() * size(), "all_gather: the output (",
           output.numel(), " ", dtype_name(output.dtype()), ") must hold ", size(), " x the input (", input.numel(),
           " ", dtype_name(input.dtype()), ")");
  const std::string label = detail::concat("all_gather (", algorithm_name(options.algorithm), ")");
  return submit(signature_of(OpKind::all_gather, input, 0, ReduceOp::sum, options.algorithm), label,
                [this, output, input, options](const OpContext& ctx, CommStats& traffic) {
    Tensor in = input.contiguous().view({input.numel()});
    on_flat(output, [&](const Tensor& out) {
      if (options.algorithm == Algorithm::ring) {
        // The ring passes chunks of one buffer: this rank's input goes in as its chunk.
        chunk_of(out, rank(), size()).copy_(in);
        PointToPoint p2p(*comm_, ctx, traffic);
        ring_all_gather(p2p, out, options.trace);
        return;
      }
      comm_->all_gather(out, in, ctx);
      traffic.bytes_sent += input.nbytes();
      traffic.bytes_received += output.nbytes();
    });
  });
}

std::shared_ptr<Work> ProcessGroup::reduce_scatter_async(const Tensor& output, const Tensor& input,
                                                         const ReduceScatterOptions& options) {
  check_tensor(output, "reduce_scatter");
  check_tensor(input, "reduce_scatter");
  check_library_or_ring(options.algorithm, "reduce_scatter");
  RG_CHECK(output.dtype() == input.dtype() && input.numel() == output.numel() * size(), "reduce_scatter: the input (",
           input.numel(), " ", dtype_name(input.dtype()), ") must hold ", size(), " x the output (", output.numel(),
           " ", dtype_name(output.dtype()), ")");
  check_floating_for_avg(options.op, input, "reduce_scatter");
  RG_CHECK(options.algorithm == Algorithm::library || is_floating(input.dtype()),
           "reduce_scatter: the ring algorithm handles float32 and float64, not ", dtype_name(input.dtype()));
  const std::string label = detail::concat("reduce_scatter (", algorithm_name(options.algorithm), ")");
  return submit(signature_of(OpKind::reduce_scatter, input, 0, options.op, options.algorithm), label,
                [this, output, input, options](const OpContext& ctx, CommStats& traffic) {
    on_flat(output, [&](const Tensor& out) {
      if (options.algorithm == Algorithm::ring) {
        // The ring reduces in place: work on a copy, so the caller's input stays as it was.
        Tensor scratch = input.contiguous().view({input.numel()}).clone();
        PointToPoint p2p(*comm_, ctx, traffic);
        ring_reduce_scatter(p2p, scratch, options.op, options.trace);
        out.copy_(chunk_of(scratch, rank(), size()));
        if (options.op == ReduceOp::avg) divide_by(out, size());
        return;
      }
      comm_->reduce_scatter(out, input.contiguous().view({input.numel()}), options.op, ctx);
      traffic.bytes_sent += input.nbytes();
      traffic.bytes_received += output.nbytes();
    });
  });
}

void ProcessGroup::agree(int64_t step, int64_t layout) {
  CollectiveSignature mine{0, OpKind::agree, 0, layout, step, 0, 0};
  blocking([&] { return submit(mine, "agree", [this](const OpContext& ctx, CommStats&) { comm_->agree(ctx); }); });
}

std::shared_ptr<Work> ProcessGroup::barrier_async() {
  return submit(CollectiveSignature{}, "barrier", [this](const OpContext& ctx, CommStats&) { comm_->barrier(ctx); });
}

std::shared_ptr<Work> ProcessGroup::send_async(const Tensor& t, int dst, int tag) {
  check_tensor(t, "send");
  check_rank(dst, "send");
  return submit(std::nullopt, detail::concat("send to rank ", dst), [this, t, dst, tag](const OpContext& ctx, CommStats& traffic) {
    Tensor dense = t.contiguous();
    comm_->start_p2p({{P2POp::send, dense, dst}}, Channel::user, tag)->wait(ctx);
    traffic.bytes_sent += t.nbytes();
  });
}

std::shared_ptr<Work> ProcessGroup::recv_async(const Tensor& t, int src, int tag) {
  check_tensor(t, "recv");
  check_rank(src, "recv");
  return submit(std::nullopt, detail::concat("recv from rank ", src), [this, t, src, tag](const OpContext& ctx, CommStats& traffic) {
    on_flat(t, [&](const Tensor& flat) { comm_->start_p2p({{P2POp::recv, flat, src}}, Channel::user, tag)->wait(ctx); });
    traffic.bytes_received += t.nbytes();
  });
}

std::shared_ptr<RecvAnyWork> ProcessGroup::recv_any_async(const Tensor& t, int tag) {
  check_tensor(t, "recv_any");
  auto source = std::make_shared<int>(-1);
  auto work = submit(std::nullopt, "recv from any rank", [this, t, tag, source](const OpContext& ctx, CommStats& traffic) {
    on_flat(t, [&](const Tensor& flat) { *source = comm_->recv_any(flat, tag, ctx); });
    traffic.bytes_received += t.nbytes();
  });
  return std::make_shared<RecvAnyItem>(std::move(work), std::move(source));
}

template <class Start>
void ProcessGroup::blocking(Start start) {
  blocking_call_ = true;
  std::shared_ptr<Work> work;
  try {
    work = start();
  } catch (...) {
    blocking_call_ = false;  // an argument error before submit
    throw;
  }
  work->wait();
}

void ProcessGroup::all_reduce(const Tensor& t, const AllReduceOptions& options) {
  blocking([&] { return all_reduce_async(t, options); });
}
void ProcessGroup::broadcast(const Tensor& t, int root) {
  blocking([&] { return broadcast_async(t, root); });
}
void ProcessGroup::reduce(const Tensor& t, int root, ReduceOp op) {
  blocking([&] { return reduce_async(t, root, op); });
}
void ProcessGroup::all_gather(const Tensor& output, const Tensor& input, const AllGatherOptions& options) {
  blocking([&] { return all_gather_async(output, input, options); });
}
void ProcessGroup::reduce_scatter(const Tensor& output, const Tensor& input, const ReduceScatterOptions& options) {
  blocking([&] { return reduce_scatter_async(output, input, options); });
}
void ProcessGroup::barrier() {
  blocking([&] { return barrier_async(); });
}
void ProcessGroup::send(const Tensor& t, int dst, int tag) {
  blocking([&] { return send_async(t, dst, tag); });
}
void ProcessGroup::recv(const Tensor& t, int src, int tag) {
  blocking([&] { return recv_async(t, src, tag); });
}
int ProcessGroup::recv_any(const Tensor& t, int tag) {
  std::shared_ptr<RecvAnyWork> work;
  blocking([&] { return work = recv_any_async(t, tag); });
  return work->source();
}

std::shared_ptr<ProcessGroup> init_process_group(const ProcessGroupOptions& options, int argc, char** argv) {
  if (options.backend == "local") return std::make_shared<ProcessGroup>(std::move(make_local_world(1).front()), options);
#ifdef RINGGRAD_HAVE_MPI
  if (options.backend == "mpi") return std::make_shared<ProcessGroup>(make_mpi_communicator(argc, argv), options);
#endif
#ifdef RINGGRAD_HAVE_NCCL
  if (options.backend == "nccl") return std::make_shared<ProcessGroup>(make_nccl_communicator(argc, argv), options);
#endif
  (void)argc;
  (void)argv;
  std::string built;
  for (const auto& name : built_backends()) {
    if (!built.empty()) built += ", ";
    built += name;
  }
  RG_THROW("init_process_group: backend '", options.backend, "' is unknown or was not built (this build has: ", built,
           ")");
}

std::vector<std::string> built_backends() {
  return {"local",
#ifdef RINGGRAD_HAVE_MPI
          "mpi",
#endif
#ifdef RINGGRAD_HAVE_NCCL
          "nccl",
#endif
  };
}

// An all-gather of the lengths, then of the texts padded to the longest.
std::vector<std::string> all_gather_strings(ProcessGroup& pg, const std::string& text) {
  Tensor lengths = Tensor::zeros({pg.size()}, DType::int64);
  pg.all_gather(lengths, Tensor::from_vector(std::vector<int64_t>{static_cast<int64_t>(text.size())}, {1}));
  const std::vector<int64_t> sizes = lengths.to_vector<int64_t>();
  const int64_t longest = std::max<int64_t>(1, *std::max_element(sizes.begin(), sizes.end()));
  std::vector<uint8_t> mine(longest, 0);
  std::copy(text.begin(), text.end(), mine.begin());
  Tensor all = Tensor::zeros({pg.size() * longest}, DType::uint8);
  pg.all_gather(all, Tensor::from_vector(mine, {longest}));
  const std::vector<uint8_t> bytes = all.to_vector<uint8_t>();
  std::vector<std::string> out;
  for (int r = 0; r < pg.size(); ++r) out.emplace_back(bytes.begin() + r * longest, bytes.begin() + r * longest + sizes[r]);
  return out;
}

// One all-reduce of a float64 tensor holding the values.
std::vector<double> sum_over_ranks(ProcessGroup& pg, const std::vector<double>& values) {
  Tensor sums = Tensor::from_vector(values, {static_cast<int64_t>(values.size())});
  pg.all_reduce(sums);
  return sums.to_vector<double>();
}

// One all-gather of four float64 numbers per rank (byte counts stay exact below 2^53).
std::vector<CommStats> all_gather_stats(ProcessGroup& pg) {
  const CommStats mine = pg.stats();
  constexpr int64_t kFields = 4;
  Tensor all = Tensor::zeros({pg.size() * kFields}, DType::float64);
  pg.all_gather(all, Tensor::from_vector(std::vector<double>{static_cast<double>(mine.bytes_sent),
                                                             static_cast<double>(mine.bytes_received), mine.seconds,
                                                             static_cast<double>(mine.operations)},
                                         {kFields}));
  const std::vector<double> values = all.to_vector<double>();
  std::vector<CommStats> out(pg.size());
  for (int r = 0; r < pg.size(); ++r) {
    const double* v = values.data() + r * kFields;
    out[r] = {static_cast<uint64_t>(v[0]), static_cast<uint64_t>(v[1]), v[2], static_cast<int64_t>(v[3])};
  }
  return out;
}

}  // namespace rg::parallel
