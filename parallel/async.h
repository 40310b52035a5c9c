// The asynchronous family (DESIGN.md section 6): parameter-server SGD, where workers push
// gradients and pull parameters without waiting for one another (staleness recorded, an
// optional bound: stale-synchronous parallel), and Hogwild!, threads updating one shared
// model without locks.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nn/module.h"
#include "nn/optim.h"
#include "parallel/process_group.h"

namespace rg::parallel {

// ---- Parameter server (Dean et al. 2012, "Downpour SGD"; Ho et al. 2013, "SSP") ----
//
// Rank 0 is the server: its model holds the parameters and its optimizer updates them.
// Ranks 1..W are the W workers: each pulls the parameters, computes a gradient on its own
// batch, pushes it and gets fresh parameters back, at its own pace. The parameters have a
// version, 0 at the start and +1 at every optimizer step.
//
// Updates. The server adds every arriving gradient, scaled by 1/k, into its parameters'
// .grad and steps the optimizer after every k gradients (k = gradients_per_update, W by
// default), so the learning rate means what it means in synchronous training with the
// global batch W·b; k = 1 is Downpour's one step per push. A gradient's staleness is the
// server's version when it arrives minus the version it was computed on; the server
// keeps a histogram of them.
//
// Staleness bound (SSP). A worker's clock is the number of gradients it has pushed. With
// max_staleness = s >= 0 the server delays its reply to worker w (the fresh parameters)
// until clock(w) - min clock <= s, the minimum over the workers that have not finished.
// The slowest worker is always answered, so the bound never deadlocks. What it guarantees:
//   - s = 0 is synchronous SGD, exactly: every worker computes its c-th gradient on
//     version c, and (with k = W) each step averages one gradient from every worker, so
//     W workers with batch b train like one process with batch W·b, momentum included.
//   - Every staleness is at most ceil((W-1)(2s+1)/k): while w computes on the parameters
//     it got at clock c, every other unfinished worker's clock stays within [c-s, c+s+1],
//     so at most (W-1)(2s+1) gradients arrive in between. With k = W and workers that all
//     push the same number of gradients, at most 2s: w got version >= c-s, and its
//     gradient arrives at version <= c+s.
// s < 0 (the default) is unbounded: no worker ever waits for another, and staleness grows
// with the spread of the workers' speeds.
//
// Messages (on the group's user channel, tags 31000-31003: do not use them alongside).
// Worker to server: a header {request (pull, push, done), version, structure}, which the
// server takes with recv_any in arrival order; a push is followed by its gradient, one
// flat message per parameter dtype. Server to worker: {version}, then the parameters, one
// flat message per dtype. `structure` fingerprints the parameters' dtypes and shapes, so
// a worker whose model differs from the server's is named at its first message.
//
// Termination. A worker calls finish(); the server returns when every worker has. The
// gradients of an incomplete last group (fewer than k) are discarded, and counted. Every
// wait is bounded by the group's timeout: a worker that sends nothing for that long fails
// the server with an error naming it, as a dead rank fails any op, and a worker that the
// staleness bound holds back for that long fails waiting for its reply.
//
// Observing (parallel/observer.h; e.g. a TraceObserver, for a per-rank timeline). The server
// reports a span for each gradient it takes in ("gradient from rank 2", category "push"),
// each optimizer step ("update to version 7", "optimizer") and each reply ("parameters to
// rank 2", "pull"); a worker, for sending its gradient ("push gradient", "push") and for
// waiting for and loading the parameters ("pull parameters", "pull": the staleness bound's
// hold shows here). The server's wait for the next request is no span: its idle time.
struct AsyncPSOptions {
  int64_t max_staleness = -1;        // s; < 0: unbounded
  int64_t gradients_per_update = 0;  // k; 0: the number of workers
  Observer* observer = nullptr;      // told of the server's spans; must outlive the run
};

struct AsyncPSStats {
  int64_t updates = 0;          // optimizer steps: the final version
  int64_t gradients = 0;        // gradients received
  int64_t discarded = 0;        // received at the end, too few for a step
  int64_t delayed_replies = 0;  // replies the staleness bound held back
  std::vector<int64_t> staleness_histogram;  // [t]: gradients that arrived t versions late
  std::vector<int64_t> gradients_from;       // by rank (rank 0, the server, sends none)

  int64_t max_staleness() const;  // the largest staleness recorded; 0 when none
  // "async-ps: staleness 0: 812, 1: 590, 2: 4; 1406 updates from 2812 gradients (0 discarded,
  // 3 replies held back by the staleness bound)".
  std::string summary() const;
};

// Serves the workers of `pg` from rank 0 until all have finished; the optimizer must
// update model's parameters. Returns what happened.
AsyncPSStats run_parameter_server(const std::shared_ptr<nn::Module>& model, optim::Optimizer& optimizer,
                                  const std::shared_ptr<ProcessGroup>& pg, const AsyncPSOptions& options = {});

class FlatParameters;  // parallel/flat_parameters.h: a model's parameters as one flat tensor per dtype

// A worker's end of the protocol (ranks 1..W). Construction pulls the parameters, so
// every worker starts from the server's model whatever its own initialisation:
//
//   parallel::AsyncWorker worker(model, pg);
//   for (auto& [x, y] : loader) {
//     loss_fn((*model)(x), y).backward();
//     worker.push();  // gradients out, fresh parameters in; waits only under a staleness bound
//   }
//   worker.finish();
class AsyncWorker {
 public:
  // `observer` (may be null; must outlive the worker) is told of its push and pull spans.
  AsyncWorker(std::shared_ptr<nn::Module> model, std::shared_ptr<ProcessGroup> pg, Observer* observer = nullptr);
  ~AsyncWorker();
  AsyncWorker(const AsyncWorker&) = delete;
  AsyncWorker& operator=(const AsyncWorker&) = delete;

  // Sends the model's gradients (computed on version(); undefined ones count as zeros),
  // zeroes them, and loads the server's current parameters into the model.
  void push();
  // Loads the server's current parameters into the model without pushing.
  void pull();
  // Tells the server this worker is done; push and pull are errors afterwards.
  void finish();

  int64_t version() const { return version_; }  // of the parameters the model holds
  int64_t pushes() const { return pushes_; }      // this worker's clock

 private:
  void request(int64_t kind);
  void receive_parameters();
  void check_active(const char* what) const;

  std::shared_ptr<nn::Module> model_;
  std::shared_ptr<ProcessGroup> pg_;
  Observer* observer_;
  std::unique_ptr<FlatParameters> flat_;
  std::vector<Tensor> buffers_;  // one per dtype: the gradients out, then the parameters in
  int64_t version_ = 0;
  int64_t pushes_ = 0;
  bool finished_ = false;
};

// ---- Hogwild! (Niu et al. 2011) ----
//
// A copy of `model` whose parameters share their data with model's but have their own
// gradients (buffers are copied, not shared). An optimizer over the replica's parameters
// updates the shared model in place.
std::shared_ptr<nn::Module> shared_replica(const nn::Module& model);

// Runs fn(replica, thread) for thread = 0..threads-1 on as many threads, each with its
// own shared_replica(*model) and a 1/threads share of the CPU pool, and returns when all
// are done; the first error is rethrown naming its thread. The threads read and write
// the shared parameters with no lock and no barrier: the data race is the algorithm
// (sparse, small updates rarely collide, and a lost or torn update costs little), so
// these runs are deliberately outside ThreadSanitizer's checks.
void run_hogwild(const std::shared_ptr<nn::Module>& model, int threads,
                 const std::function<void(nn::Module& replica, int thread)>& fn);

}  // namespace rg::parallel
