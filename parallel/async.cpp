// The parameter server (server loop, worker, flat parameter messages) and Hogwild!'s
// threads. The protocol, the staleness bound and what it guarantees are in async.h.
#include "parallel/async.h"

#include <algorithm>
#include <exception>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "parallel/flat_parameters.h"
#include "parallel/threads.h"
#include "tensor/ops.h"
#include "tensor/thread_pool.h"

namespace rg::parallel {

namespace {

constexpr int kHeaderTag = 31000;     // worker -> server: {request, version, structure}
constexpr int kGradientTag = 31001;   // worker -> server: a push's gradient, one message per dtype
constexpr int kReplyTag = 31002;      // server -> worker: {version}
constexpr int kParameterTag = 31003;  // server -> worker: the parameters, one message per dtype
constexpr int kServer = 0;

enum Request : int64_t { kPull = 0, kPush = 1, kDone = 2 };

const char* request_name(int64_t request) {
  switch (request) {
    case kPull: return "pull";
    case kPush: return "push";
    case kDone: return "done";
  }
  return "unknown";
}

// What travels: the model's trainable parameters (or their gradients), one flat message per dtype.
FlatParameters flat_parameters_of(const nn::Module& model) {
  std::vector<Variable> trainable;
  for (const Variable& p : model.parameters())
    if (p.requires_grad()) trainable.push_back(p);
  return FlatParameters(std::move(trainable));
}

}  // namespace

std::string AsyncPSStats::summary() const {
  std::ostringstream out;
  out << "async-ps: staleness";
  for (size_t t = 0; t < staleness_histogram.size(); ++t) out << (t ? ", " : " ") << t << ": " << staleness_histogram[t];
  out << "; " << updates << " updates from " << gradients << " gradients (" << discarded << " discarded, "
      << delayed_replies << " replies held back by the staleness bound)";
  return out.str();
}

int64_t AsyncPSStats::max_staleness() const {
  for (size_t t = staleness_histogram.size(); t > 0; --t)
    if (staleness_histogram[t - 1] > 0) return static_cast<int64_t>(t - 1);
  return 0;
}

namespace {

// The server's state and its loop: take the next request in arrival order, serve it, then
// answer every waiting worker the staleness bound now lets through.
class ParameterServer {
 public:
  ParameterServer(const std::shared_ptr<nn::Module>& model, optim::Optimizer& optimizer, ProcessGroup& pg,
                  const AsyncPSOptions& options)
      : model_(*model),
        optimizer_(optimizer),
        pg_(pg),
        max_staleness_(options.max_staleness),
        observer_(options.observer),
        per_update_(options.gradients_per_update > 0 ? options.gradients_per_update : pg.size() - 1),
        flat_(flat_parameters_of(*model)),
        gradient_(flat_.make_buffers()),
        parameters_(flat_.make_buffers()),
        clock_(pg.size(), 0),
        finished_(pg.size(), false),
        waiting_(pg.size(), false),
        running_(pg.size() - 1) {
    RG_CHECK(pg.rank() == kServer, "run_parameter_server: the server is rank 0, not rank ", pg.rank());
    RG_CHECK(pg.size() >= 2, "run_parameter_server: needs at least one worker (rank 1..), but the group has ",
             pg.size(), " rank");
    finished_[kServer] = true;
    const auto now = Clock::now();
    for (int r = 1; r < pg.size(); ++r) {
      running_clocks_.insert(0);
      heard_from_.insert({now, r});
      last_heard_.push_back(now);  // index r - 1
    }
    stats_.gradients_from.assign(pg.size(), 0);
    header_ = Tensor::zeros({3}, DType::int64);
    model_.zero_grad();
  }

  AsyncPSStats run() {
    while (running_ > 0) {
      int worker = next_request();
      std::vector<int64_t> header = header_.to_vector<int64_t>();
      check_request(worker, header);
      heard_from_.erase({last_heard_[worker - 1], worker});
      if (header[0] == kDone) {
        finished_[worker] = true;
        --running_;
        running_clocks_.erase(running_clocks_.find(clock_[worker]));
      } else {
        if (header[0] == kPush) apply_gradient(worker, header[1]);
        waiting_[worker] = true;
        by_clock_.insert({clock_[worker], worker});
      }
      answer_waiting_workers();
      check_no_worker_went_silent();
      if (waiting_[worker]) ++stats_.delayed_replies;
    }
    stats_.discarded = stats_.gradients % per_update_;
    model_.zero_grad();
    return stats_;
  }

 private:
  int next_request() {
    try {
      return pg_.recv_any(header_, kHeaderTag);
    } catch (const Error& e) {
      throw Error(detail::concat("async parameter server (rank 0): waiting for a request from ", silent_workers(),
                                 ": ", e.what()));
    }
  }

  // A worker the server owes nothing and has not heard from for the group's timeout is dead
  // or stuck, even while the others keep the server busy: name it now, not when they finish.
  void check_no_worker_went_silent() const {
    if (heard_from_.empty()) return;
    const auto [since, worker] = *heard_from_.begin();
    const double silent_s = std::chrono::duration<double>(Clock::now() - since).count();
    if (silent_s <= pg_.timeout_s()) return;
    RG_THROW("async parameter server (rank 0): worker rank ", worker, " (", clock_[worker],
             " gradients pushed) has sent nothing for ", silent_s, " s, more than the timeout of ", pg_.timeout_s(),
             " s, while the others kept going: it died or is stuck");
  }

  // "worker rank 2 (0 gradients pushed)": the workers the server is waiting to hear from.
  std::string silent_workers() const {
    std::string text;
    int count = 0;
    for (int r = 1; r < pg_.size(); ++r) {
      if (finished_[r] || waiting_[r]) continue;
      text += detail::concat(count++ ? ", " : "", r, " (", clock_[r], " gradients pushed)");
    }
    return (count > 1 ? "worker ranks " : "worker rank ") + text;
  }

  void check_request(int worker, const std::vector<int64_t>& header) const {
    const char* where = "async parameter server (rank 0)";
    RG_CHECK(header[0] == kPull || header[0] == kPush || header[0] == kDone, where, ": rank ", worker,
             " sent an unknown request ", header[0]);
    RG_CHECK(!finished_[worker], where, ": rank ", worker, " sent a '", request_name(header[0]),
             "' request but is not a running worker");
    RG_CHECK(header[2] == flat_.structure_hash(), where, ": worker rank ", worker,
             "'s model has different parameters (dtypes or shapes) than the server's");
    RG_CHECK(header[1] >= 0 && header[1] <= stats_.updates, where, ": worker rank ", worker, " claims version ",
             header[1], ", but the server is at version ", stats_.updates);
  }

  void apply_gradient(int worker, int64_t version) {
    {
      ObservedSpan span(observer_, detail::concat("gradient from rank ", worker), "push");
      for (const Tensor& buffer : gradient_) pg_.recv(buffer, worker, kGradientTag);
      record_staleness(stats_.updates - version);
      flat_.add_to_grads(gradient_, 1.0 / static_cast<double>(per_update_));
    }
    running_clocks_.erase(running_clocks_.find(clock_[worker]));
    running_clocks_.insert(++clock_[worker]);
    ++stats_.gradients_from[worker];
    if (++stats_.gradients % per_update_ == 0) {
      ObservedSpan span(observer_, detail::concat("update to version ", stats_.updates + 1), "optimizer");
      optimizer_.step();
      optimizer_.zero_grad();
      ++stats_.updates;
    }
  }

  void record_staleness(int64_t staleness) {
    auto& histogram = stats_.staleness_histogram;
    if (histogram.size() <= static_cast<size_t>(staleness)) histogram.resize(static_cast<size_t>(staleness) + 1, 0);
    ++histogram[static_cast<size_t>(staleness)];
  }

  // The staleness bound (SSP, async.h): answers (answer(worker)) the waiting workers whose
  // clock is at most max_staleness_ ahead of the slowest running worker's clock
  // (*running_clocks_.begin(); 0 when none runs: a worker that finished holds nobody back),
  // all of them when max_staleness_ < 0. by_clock_ holds the waiting workers as (clock,
  // rank), lowest clock first: answer them in that order, removing each one answered, and
  // stop at the first one the bound holds back. Ordered sets keep each request at O(log W).
  // BEGIN SOLUTION lab6.answer_waiting_workers
  void answer_waiting_workers() {
    const int64_t slowest = running_clocks_.empty() ? 0 : *running_clocks_.begin();
    while (!by_clock_.empty()) {
      const auto [clock, worker] = *by_clock_.begin();
      if (max_staleness_ >= 0 && clock - slowest > max_staleness_) return;
      by_clock_.erase(by_clock_.begin());
      answer(worker);
    }
  }
  // END SOLUTION

  // Sends `worker` the current parameters; from now on the server waits to hear from it.
  void answer(int worker) {
    reply(worker);
    waiting_[worker] = false;
    last_heard_[worker - 1] = Clock::now();
    heard_from_.insert({last_heard_[worker - 1], worker});
  }

  void reply(int worker) {
    ObservedSpan span(observer_, detail::concat("parameters to rank ", worker), "pull");
    if (packed_version_ != stats_.updates) {
      flat_.pack_data(parameters_);
      packed_version_ = stats_.updates;
    }
    pg_.send(Tensor::from_vector<int64_t>({stats_.updates}, {1}), worker, kReplyTag);
    for (const Tensor& buffer : parameters_) pg_.send(buffer, worker, kParameterTag);
  }

  nn::Module& model_;
  optim::Optimizer& optimizer_;
  ProcessGroup& pg_;
  const int64_t max_staleness_;
  Observer* observer_;
  const int64_t per_update_;
  FlatParameters flat_;
  std::vector<Tensor> gradient_;    // the push being received
  std::vector<Tensor> parameters_;  // packed once per version for every reply
  std::vector<int64_t> clock_;  // by rank: gradients pushed
  std::vector<bool> finished_;  // by rank; the server counts as finished
  std::vector<bool> waiting_;   // by rank: owed a reply
  int running_;                  // workers that have not finished
  std::multiset<int64_t> running_clocks_;    // of the workers still running
  std::set<std::pair<int64_t, int>> by_clock_;  // the waiting workers, as (clock, rank)
  // The running workers the server owes no reply, as (when last heard from, rank).
  std::set<std::pair<Clock::time_point, int>> heard_from_;
  std::vector<Clock::time_point> last_heard_;  // by worker (rank - 1)
  Tensor header_;
  int64_t packed_version_ = -1;  // the version parameters_ holds
  AsyncPSStats stats_;
};

}  // namespace

AsyncPSStats run_parameter_server(const std::shared_ptr<nn::Module>& model, optim::Optimizer& optimizer,
                                  const std::shared_ptr<ProcessGroup>& pg, const AsyncPSOptions& options) {
  return ParameterServer(model, optimizer, *pg, options).run();
}

AsyncWorker::AsyncWorker(std::shared_ptr<nn::Module> model, std::shared_ptr<ProcessGroup> pg, Observer* observer)
    : model_(std::move(model)),
      pg_(std::move(pg)),
      observer_(observer),
      flat_(std::make_unique<FlatParameters>(flat_parameters_of(*model_))),
      buffers_(flat_->make_buffers()) {
  RG_CHECK(pg_->rank() != kServer, "AsyncWorker: rank 0 is the parameter server; workers are ranks 1..",
           pg_->size() - 1);
  pull();
}

AsyncWorker::~AsyncWorker() = default;

void AsyncWorker::push() {
  check_active("push");
  {
    ObservedSpan span(observer_, "push gradient", "push");
    flat_->pack_grads(buffers_);
    request(kPush);
    for (const Tensor& buffer : buffers_) pg_->send(buffer, kServer, kGradientTag);
    ++pushes_;
    model_->zero_grad();
  }
  receive_parameters();
}

void AsyncWorker::pull() {
  check_active("pull");
  request(kPull);
  receive_parameters();
}

void AsyncWorker::finish() {
  check_active("finish");
  request(kDone);
  finished_ = true;
}

void AsyncWorker::request(int64_t kind) {
  pg_->send(Tensor::from_vector<int64_t>({kind, version_, flat_->structure_hash()}, {3}), kServer, kHeaderTag);
}

void AsyncWorker::receive_parameters() {
  ObservedSpan span(observer_, "pull parameters", "pull");  // under a staleness bound, mostly waiting
  Tensor version = Tensor::zeros({1}, DType::int64);
  pg_->recv(version, kServer, kReplyTag);
  for (const Tensor& buffer : buffers_) pg_->recv(buffer, kServer, kParameterTag);
  flat_->unpack_data(buffers_);
  version_ = static_cast<int64_t>(version.item());
}

void AsyncWorker::check_active(const char* what) const {
  RG_CHECK(!finished_, "AsyncWorker (rank ", pg_->rank(), "): ", what, " after finish()");
}

std::shared_ptr<nn::Module> shared_replica(const nn::Module& model) {
  std::shared_ptr<nn::Module> replica = model.clone();
  std::vector<Variable> shared = model.parameters();
  std::vector<Variable> own = replica->parameters();
  // The same Tensor (storage and view), so an optimizer step on the replica updates model.
  for (size_t i = 0; i < own.size(); ++i) own[i].impl()->data = shared[i].data();
  return replica;
}

void run_hogwild(const std::shared_ptr<nn::Module>& model, int threads,
                 const std::function<void(nn::Module& replica, int thread)>& fn) {
  RG_CHECK(threads >= 1, "run_hogwild: needs at least one thread, not ", threads);
  std::vector<std::shared_ptr<nn::Module>> replicas;
  for (int t = 0; t < threads; ++t) replicas.push_back(shared_replica(*model));
  run_threads(
      threads, std::max(1, default_num_threads() / threads), [&](int t) { fn(*replicas[t], t); }, "run_hogwild: thread");
}

}  // namespace rg::parallel
