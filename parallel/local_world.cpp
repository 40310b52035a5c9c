// The local backend. One mutex guards the whole world, and each rank waits on its own
// condition variable: a message wakes its receiver (and, once taken, its sender) only, so
// the cost of a message does not grow with the number of ranks; a collective's round
// wakes its participants. Collectives rendezvous by sequence number; since every rank's
// description is at hand, they always check that ranks agree (free here, unlike across
// processes).
#include "parallel/local_world.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "parallel/threads.h"
#include "tensor/thread_pool.h"

namespace rg::parallel {

namespace {

constexpr int kAnySource = -1;  // the peer of a receive that takes a message from any rank

struct Message {
  int src;
  Channel channel;
  int64_t tag;
  const void* data;
  size_t nbytes;
  bool taken = false;  // a receiver is copying it
  bool done = false;   // copied: the sender may go on
};

// One rank's contribution to a collective.
struct Entry {
  CollectiveSignature signature;
  Tensor a, b;  // the in-place buffer (or output), and the input where there is one
};

struct Round {
  Round(int size, std::pair<int64_t, int> id) : entries(size), key(id) {}
  std::vector<std::optional<Entry>> entries;
  std::pair<int64_t, int> key;  // (seq, phase)
  int arrived = 0;
  int departed = 0;
};

struct World {
  explicit World(int n) : size(n), wake(std::make_unique<std::condition_variable[]>(n)), inbox(n) {}
  const int size;
  std::mutex mutex;
  std::unique_ptr<std::condition_variable[]> wake;  // by rank: what that rank waits on
  std::vector<std::deque<std::shared_ptr<Message>>> inbox;  // by receiving rank
  std::map<std::pair<int64_t, int>, std::shared_ptr<Round>> rounds;  // by (seq, phase)
  std::string aborted;  // why, once a rank has failed

  // Rank ctx.rank waits until pred() holds; throws at the deadline or when the world is aborted.
  template <class Pred, class Missing>
  void wait(std::unique_lock<std::mutex>& lock, const OpContext& ctx, Pred pred, Missing missing) {
    while (!pred()) {
      if (!aborted.empty()) ctx.fail("the local world was aborted: " + aborted);
      if (wake[ctx.rank].wait_until(lock, ctx.deadline) == std::cv_status::timeout && !pred()) ctx.timeout(missing());
    }
  }
  void notify(int rank) { wake[rank].notify_all(); }
  void notify_everyone() {
    for (int r = 0; r < size; ++r) wake[r].notify_all();
  }
};

std::string list_ranks(const std::vector<int>& ranks) {
  std::string text;
  for (int r : ranks) text += (text.empty() ? "" : ", ") + std::to_string(r);
  return text;
}

class LocalRequest : public P2PRequest {
 public:
  LocalRequest(World& world, int rank, Channel channel, int64_t tag) : world_(world), rank_(rank), channel_(channel), tag_(tag) {}

  void post(const P2POp& op) {
    if (op.kind == P2POp::recv) {
      recvs_.push_back({op.buffer, op.peer, kAnySource, false});
      return;
    }
    auto message = std::make_shared<Message>(Message{rank_, channel_, tag_, op.buffer.raw_data(), op.buffer.nbytes()});
    sends_.push_back({message, op.peer});
    world_.inbox[op.peer].push_back(message);
  }

  void wait(const OpContext& ctx) override {
    std::unique_lock lock(world_.mutex);
    while (true) {
      copy_arrived(lock, ctx);
      if (all_done()) return;
      world_.wait(lock, ctx, [&] { return all_done() || any_arrived(); }, [&] { return pending_peers(); });
    }
  }

  int source() const { return recvs_.front().source; }  // the sender of the first receive, once done

 private:
  struct Recv {
    Tensor buffer;
    int peer;    // or kAnySource
    int source;  // who sent the message taken
    bool done;
  };
  struct Send {
    std::shared_ptr<Message> message;
    int peer;
  };

  // The inbox is in arrival order, so a receive from any rank takes the earliest message.
  std::shared_ptr<Message> find(const Recv& r) const {
    for (const auto& m : world_.inbox[rank_])
      if (!m->taken && (r.peer == kAnySource || m->src == r.peer) && m->channel == channel_ && m->tag == tag_)
        return m;
    return nullptr;
  }
  bool any_arrived() const {
    return std::any_of(recvs_.begin(), recvs_.end(), [&](const Recv& r) { return !r.done && find(r); });
  }
  bool all_done() const {
    return std::all_of(recvs_.begin(), recvs_.end(), [](const Recv& r) { return r.done; }) &&
           std::all_of(sends_.begin(), sends_.end(), [](const Send& s) { return s.message->done; });
  }

  // Copies every matched message with the lock released: the sender keeps its buffer
  // alive and unchanged until `done`.
  void copy_arrived(std::unique_lock<std::mutex>& lock, const OpContext& ctx) {
    for (auto& r : recvs_) {
      if (r.done) continue;
      auto m = find(r);
      if (!m) continue;
      m->taken = true;
      auto& box = world_.inbox[rank_];
      box.erase(std::find(box.begin(), box.end(), m));
      bool fits = m->nbytes == r.buffer.nbytes();
      lock.unlock();
      if (fits && m->nbytes > 0) std::memcpy(r.buffer.raw_data(), m->data, m->nbytes);
      lock.lock();
      m->done = true;
      r.done = true;
      r.source = m->src;
      world_.notify(m->src);  // the sender waits for its message to be taken
      if (!fits)
        ctx.fail(detail::concat("rank ", m->src, " sent ", m->nbytes, " bytes but the receive buffer holds ",
                                r.buffer.nbytes()));
    }
  }

  std::string pending_peers() const {
    std::vector<int> recv_from, send_to;
    for (const auto& r : recvs_) {
      if (r.done) continue;
      if (r.peer == kAnySource) return "a message from any rank (none arrived)";
      recv_from.push_back(r.peer);
    }
    for (const auto& s : sends_)
      if (!s.message->done) send_to.push_back(s.peer);
    std::string text;
    if (!recv_from.empty()) text += "a message from rank " + list_ranks(recv_from);
    if (!send_to.empty()) text += (text.empty() ? "" : " and ") + ("rank " + list_ranks(send_to) + " to receive");
    return text + " (the ranks that did not arrive)";
  }

  World& world_;
  int rank_;
  Channel channel_;
  int64_t tag_;
  std::vector<Recv> recvs_;
  std::vector<Send> sends_;
};

class LocalCommunicator : public Communicator {
 public:
  LocalCommunicator(std::shared_ptr<World> world, int rank) : world_(std::move(world)), rank_(rank) {}

  std::string name() const override { return "local"; }
  int rank() const override { return rank_; }
  int size() const override { return world_->size; }
  int local_rank() const override { return rank_; }
  bool accepts(const Tensor& t) const override { return t.device().is_cpu(); }
  std::string device_rule() const override { return "local ranks share CPU memory: any cpu:i device"; }

  void all_reduce(const Tensor& t, ReduceOp op, const OpContext& ctx) override {
    collective(ctx, {signature(ctx, OpKind::all_reduce, t), t, Tensor()}, [&](const Round& round) {
      reduce_slice(buffers(round), op, all_ranks());
    });
  }

  void reduce(const Tensor& t, int root, ReduceOp op, const OpContext& ctx) override {
    collective(ctx, {signature(ctx, OpKind::reduce, t, root), t, Tensor()}, [&](const Round& round) {
      reduce_slice(buffers(round), op, {root});
    });
  }

  void reduce_scatter(const Tensor& output, const Tensor& input, ReduceOp op, const OpContext& ctx) override {
    collective(ctx, {signature(ctx, OpKind::reduce_scatter, input), output, input}, [&](const Round& round) {
      // Rank r reduces slice r of every input into its own output.
      int64_t n = output.numel();
      std::vector<Tensor> inputs;
      for (const auto& e : round.entries) inputs.push_back(e->b.narrow(0, rank_ * n, n));
      reduce_into_targets(inputs, op, {output});
    });
  }

  void broadcast(const Tensor& t, int root, const OpContext& ctx) override {
    collective(ctx, {signature(ctx, OpKind::broadcast, t, root), t, Tensor()}, [&](const Round& round) {
      if (rank_ != root) copy_bytes(t, round.entries[root]->a);
    });
  }

  void all_gather(const Tensor& output, const Tensor& input, const OpContext& ctx) override {
    collective(ctx, {signature(ctx, OpKind::all_gather, input), output, input}, [&](const Round& round) {
      int64_t n = input.numel();
      for (int r = 0; r < size(); ++r) copy_bytes(output.narrow(0, r * n, n), round.entries[r]->b);
    });
  }

  void barrier(const OpContext& ctx) override {
    collective(ctx, {signature(ctx, OpKind::barrier, Tensor()), Tensor(), Tensor()}, [](const Round&) {});
  }

  std::unique_ptr<P2PRequest> start_p2p(const std::vector<P2POp>& ops, Channel channel, int64_t tag) override {
    auto request = std::make_unique<LocalRequest>(*world_, rank_, channel, tag);
    std::lock_guard lock(world_->mutex);
    for (const auto& op : ops) {
      request->post(op);
      if (op.kind == P2POp::send) world_->notify(op.peer);
    }
    return request;
  }

  int recv_any(const Tensor& buffer, int64_t tag, const OpContext& ctx) override {
    LocalRequest request(*world_, rank_, Channel::user, tag);
    request.post({P2POp::recv, buffer, kAnySource});
    request.wait(ctx);
    return request.source();
  }

  std::vector<CollectiveSignature> gather_signatures(const CollectiveSignature& mine, const OpContext& ctx) override {
    std::vector<CollectiveSignature> all;
    auto round = arrive(ctx, kSignaturePhase, {mine, Tensor(), Tensor()});
    for (const auto& e : round->entries) all.push_back(e->signature);
    depart(ctx, round);
    return all;
  }

  void agree(const OpContext& ctx) override { collective(ctx, {*ctx.signature, Tensor(), Tensor()}, [](const Round&) {}); }

  // The library collectives compare every rank's call as they meet (collective() below);
  // the hand-written algorithms run on messages, so their callers meet once first, in the
  // same round a library collective of that sequence number would use, so that a rank
  // calling the library and one calling a hand-written algorithm also meet and are named.
  std::unique_ptr<Agreement> start_agreement(const CollectiveSignature& mine, const OpContext& ctx) override {
    if (!is_library(static_cast<Algorithm>(mine.algorithm)))
      collective(ctx, {mine, Tensor(), Tensor()}, [](const Round&) {});
    return nullptr;
  }

  [[noreturn]] void abort(int exit_code) override { std::_Exit(exit_code); }

 private:
  static constexpr int kSignaturePhase = 0, kOpPhase = 1;

  std::vector<int> all_ranks() const {
    std::vector<int> ranks(size());
    for (int r = 0; r < size(); ++r) ranks[r] = r;
    return ranks;
  }

  // What this rank says it runs: the group's signature of the op (with its reduce op and
  // algorithm), or one made here when the backend is called without a group.
  static CollectiveSignature signature(const OpContext& ctx, OpKind kind, const Tensor& t, int root = 0) {
    if (ctx.signature) return *ctx.signature;
    return {ctx.seq, kind, t.defined() ? static_cast<int64_t>(t.dtype()) : 0, t.defined() ? t.numel() : 0, root};
  }

  // Arrive, check that every rank runs the same collective, do this rank's part with
  // everyone's buffers in reach, and leave only when all are done with ours.
  template <class Fn>
  void collective(const OpContext& ctx, Entry mine, Fn&& part) {
    auto round = arrive(ctx, kOpPhase, std::move(mine));
    std::vector<CollectiveSignature> all;
    for (const auto& entry : round->entries) all.push_back(entry->signature);
    if (const std::string mismatch = disagreement(all); !mismatch.empty())
      ctx.fail("ranks disagree on the collective: " + mismatch);
    part(*round);
    depart(ctx, round);
  }

  std::shared_ptr<Round> arrive(const OpContext& ctx, int phase, Entry mine) {
    std::unique_lock lock(world_->mutex);
    auto& slot = world_->rounds[{ctx.seq, phase}];
    if (!slot) slot = std::make_shared<Round>(size(), std::make_pair(ctx.seq, phase));
    auto round = slot;
    round->entries[rank_] = std::move(mine);
    if (++round->arrived == size()) world_->notify_everyone();
    world_->wait(lock, ctx, [&] { return round->arrived == size(); }, [&] {
      std::vector<int> missing;
      for (int r = 0; r < size(); ++r)
        if (!round->entries[r]) missing.push_back(r);
      return "ranks " + list_ranks(missing) + " to arrive (the ranks that did not arrive)";
    });
    return round;
  }

  void depart(const OpContext& ctx, const std::shared_ptr<Round>& round) {
    std::unique_lock lock(world_->mutex);
    if (++round->departed == size()) {
      world_->notify_everyone();
      world_->rounds.erase(round->key);
    }
    world_->wait(lock, ctx, [&] { return round->departed == size(); }, [] { return std::string("ranks to finish"); });
  }

  static std::vector<Tensor> buffers(const Round& round) {
    std::vector<Tensor> all;
    for (const auto& e : round.entries) all.push_back(e->a);
    return all;
  }

  // This rank reduces its slice [rank*L/N, (rank+1)*L/N) of every rank's buffer, in rank
  // order (so all ranks get the serial sum's bits), and writes it to the target ranks'
  // buffers. Slices are disjoint, so the ranks work in parallel without locks.
  void reduce_slice(const std::vector<Tensor>& all, ReduceOp op, const std::vector<int>& targets) {
    int64_t length = all[0].numel();
    int64_t begin = length * rank_ / size(), end = length * (rank_ + 1) / size();
    std::vector<Tensor> inputs, outputs;
    for (const auto& t : all) inputs.push_back(t.narrow(0, begin, end - begin));
    for (int r : targets) outputs.push_back(all[r].narrow(0, begin, end - begin));
    reduce_into_targets(inputs, op, outputs);
  }

  // outputs[*][i] = inputs[0][i] op inputs[1][i] op ... (avg divides by the count), a
  // cache-sized block at a time so each input is read once and the loops vectorise.
  static void reduce_into_targets(const std::vector<Tensor>& inputs, ReduceOp op, const std::vector<Tensor>& outputs) {
    dispatch(inputs[0].dtype(), [&](auto tag) {
      using T = decltype(tag);
      constexpr int64_t kBlock = 4096;
      std::vector<T> acc(kBlock);
      const int64_t length = inputs[0].numel();
      for (int64_t begin = 0; begin < length; begin += kBlock) {
        const int64_t n = std::min(kBlock, length - begin);
        std::copy_n(inputs[0].template data<T>() + begin, n, acc.data());
        for (size_t r = 1; r < inputs.size(); ++r) fold(op, acc.data(), inputs[r].template data<T>() + begin, n);
        if (op == ReduceOp::avg)
          for (int64_t i = 0; i < n; ++i) acc[i] = acc[i] / static_cast<T>(inputs.size());
        for (const auto& out : outputs) std::copy_n(acc.data(), n, out.template data<T>() + begin);
      }
    });
  }

  template <class T>
  static void fold(ReduceOp op, T* acc, const T* in, int64_t n) {
    if (op == ReduceOp::max) {
      for (int64_t i = 0; i < n; ++i) acc[i] = std::max(acc[i], in[i]);
    } else if (op == ReduceOp::min) {
      for (int64_t i = 0; i < n; ++i) acc[i] = std::min(acc[i], in[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) acc[i] += in[i];
    }
  }

  static void copy_bytes(const Tensor& dst, const Tensor& src) {
    if (dst.nbytes() > 0) std::memcpy(dst.raw_data(), src.raw_data(), dst.nbytes());
  }

  std::shared_ptr<World> world_;
  int rank_;
};

std::vector<std::unique_ptr<Communicator>> communicators_of(const std::shared_ptr<World>& world) {
  std::vector<std::unique_ptr<Communicator>> comms;
  for (int r = 0; r < world->size; ++r) comms.push_back(std::make_unique<LocalCommunicator>(world, r));
  return comms;
}

}  // namespace

std::vector<std::unique_ptr<Communicator>> make_local_world(int size) {
  RG_CHECK(size >= 1, "a local world needs at least one rank, not ", size);
  return communicators_of(std::make_shared<World>(size));
}

void run_local_world(int world_size, const std::function<void(std::shared_ptr<ProcessGroup>)>& fn,
                     ProcessGroupOptions options) {
  RG_CHECK(world_size >= 1, "run_local_world: a world needs at least one rank, not ", world_size);
  options.backend = "local";
  auto world = std::make_shared<World>(world_size);
  auto comms = communicators_of(world);
  // A failed rank ends every other rank's waits at once, as MPI_Abort ends a job.
  auto abort_world = [&](int rank, const std::string& what) {
    std::lock_guard lock(world->mutex);
    if (!world->aborted.empty()) return;
    world->aborted = detail::concat("rank ", rank, " failed: ", what);
    world->notify_everyone();
  };
  // The groups outlive their threads: a failed rank's group is stopped only after the
  // world is aborted, since its communication thread may be waiting on the others.
  std::vector<std::shared_ptr<ProcessGroup>> groups(world_size);
  run_threads(
      world_size, std::max(1, default_num_threads() / world_size),
      [&](int rank) {
        groups[rank] = std::make_shared<ProcessGroup>(std::move(comms[rank]), options);
        fn(groups[rank]);
      },
      "local world: rank", abort_world);
}

}  // namespace rg::parallel
