// DistributedDataParallel, top to bottom: construction (same structure on every rank, then
// rank 0's values everywhere), one gradient-ready hook per parameter feeding the reducer,
// no_sync, and forward with its checks. The reducers are in reducer_*.cpp, the checks'
// bodies in replica_checks.cpp.
#include "parallel/ddp.h"

#include <sstream>
#include <unordered_set>

#include "autograd/node.h"
#include "parallel/flat_parameters.h"
#include "parallel/replica_checks.h"

namespace rg::parallel {

namespace {
// What a step all-reduces: the parameters' sizes and dtypes, how they are bucketed and reduced.
int64_t layout_hash(const std::vector<NamedParameter>& parameters, const DDPOptions& o) {
  uint64_t hash = kFnvOffsetBasis;
  auto mix = [&](auto value) { hash = fnv1a(&value, sizeof value, hash); };
  for (const auto& [name, p] : parameters) {
    mix(p.numel());
    mix(static_cast<int64_t>(p.dtype()));
  }
  mix(static_cast<int64_t>(o.reducer));
  mix(static_cast<int64_t>(o.algorithm));
  mix(o.bucket_cap_mb);
  mix(o.first_bucket_mb);
  return static_cast<int64_t>(hash);
}
}  // namespace

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<nn::Module> model, std::shared_ptr<ProcessGroup> pg,
                                                 const DDPOptions& options)
    : model_(std::move(model)), pg_(std::move(pg)), options_(options) {
  RG_CHECK(model_ && pg_, "DistributedDataParallel: needs a model and a process group");
  check_same_structure(*pg_, *model_);
  if (options_.init_sync) {  // every replica starts from rank 0's model
    for (auto& [name, p] : model_->named_parameters()) pg_->broadcast(p.data(), 0);
    for (auto& [name, b] : model_->named_buffers()) pg_->broadcast(b, 0);
    last_identical_step_ = 0;
  }
  parameters_ = trainable_parameters(*model_);
  for (const auto& [name, p] : parameters_) wrapped_data_.push_back(p.data());
  layout_ = layout_hash(parameters_, options_);
  reducer_ = make_reducer(parameters_, pg_,
                          {.kind = options_.reducer, .algorithm = options_.algorithm,
                           .bucket_cap_mb = options_.bucket_cap_mb, .first_bucket_mb = options_.first_bucket_mb});
  reducer_->set_observer(options_.observer);
  install_hooks();
  reset_readiness();
}

DistributedDataParallel::~DistributedDataParallel() {
  for (size_t i = 0; i < parameters_.size(); ++i) parameters_[i].param.remove_grad_ready_hook(hook_ids_[i]);
}

void DistributedDataParallel::install_hooks() {
  for (size_t i = 0; i < parameters_.size(); ++i)
    hook_ids_.push_back(parameters_[i].param.add_grad_ready_hook([this, i](const Variable&) {
      if (sync_this_backward_) gradient_ready(i);
    }));
}

// Called by the engine when parameter `index`'s gradient is final in this backward.
void DistributedDataParallel::gradient_ready(size_t index) {
  RG_CHECK(!ready_[index], "DistributedDataParallel: parameter '", parameters_[index].name,
           "' got a second gradient in one synchronising backward (a second backward through the same forward? "
           "Each backward needs its own forward)");
  if (!backward_started_) {
    backward_started_ = true;
    {
      // A collective: a rank that gets here first waits for the slowest, so a straggler's
      // delay shows on the others as this span.
      ObservedSpan waiting(reducer_->observer(), "wait for every rank (step agreement)", "agree");
      pg_->agree(++synchronised_steps_, layout_);
    }
    for (size_t unused : std::exchange(unused_, {})) gradient_ready(unused);  // found at forward
  }
  ready_[index] = true;
  reducer_->gradient_ready(index);
  if (++ready_count_ == parameters_.size()) finish_backward();
}

void DistributedDataParallel::finish_backward() {
  reducer_->finish_backward();  // every gradient is now the average over the ranks
  reset_readiness();
  // Until the next forward, any gradient that arrives comes from a second backward.
  ready_.assign(parameters_.size(), true);
}

void DistributedDataParallel::reset_readiness() {
  ready_.assign(parameters_.size(), false);
  ready_count_ = 0;
  backward_started_ = false;
}

// A backward that started but did not complete means some parameters got no gradient:
// the reducer never averaged them, and the replicas' gradients are not in step.
void DistributedDataParallel::check_previous_backward() {
  if (!backward_started_) {
    reset_readiness();  // forgets parameters marked unused by a forward that had no backward
    unused_.clear();
    return;
  }
  reducer_->reset();
  std::ostringstream names;
  for (size_t i = 0; i < parameters_.size(); ++i)
    if (!ready_[i]) names << (names.tellp() > 0 ? ", '" : "'") << parameters_[i].name << "'";
  reset_readiness();
  RG_THROW("DistributedDataParallel: the last backward produced no gradient for ", names.str(),
           ", so they were never all-reduced and the replicas' gradients are not averaged; if the "
           "model does not use every parameter in every forward, pass .find_unused_parameters = true");
}

// The parameters whose gradient accumulator the output's graph does not reach: they get
// no gradient in this backward, so they count as ready (their grads keep their values).
std::vector<size_t> DistributedDataParallel::unused_parameters(const Variable& output) const {
  std::unordered_set<const Node*> reached;
  std::vector<const Node*> stack;
  if (output.grad_fn()) stack.push_back(output.grad_fn().get());
  while (!stack.empty()) {
    const Node* node = stack.back();
    stack.pop_back();
    for (const auto& next : node->next)
      if (next && reached.insert(next.get()).second) stack.push_back(next.get());
  }
  std::vector<size_t> unused;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    auto accumulator = parameters_[i].param.impl()->grad_accumulator.lock();
    if (!accumulator || !reached.count(accumulator.get())) unused.push_back(i);
  }
  return unused;
}

Variable DistributedDataParallel::forward(const Variable& x) {
  check_previous_backward();
  ++forwards_;
  // The collective check first, when due: then every rank, not only the one whose model
  // changed, throws naming the parameter and the rank (claim C14).
  if (pg_->debug() || (options_.check_every > 0 && forwards_ % options_.check_every == 0)) check_consistency();
  const std::string change = structure_change(*model_, parameters_, wrapped_data_);
  RG_CHECK(change.empty(), "DistributedDataParallel: rank ", pg_->rank(), ": ", change);
  reducer_->prepare_for_forward();
  if (options_.broadcast_buffers)
    for (auto& [name, b] : model_->named_buffers()) pg_->broadcast(b, 0);
  sync_this_backward_ = sync_enabled_;
  Variable output = model_->forward(x);
  if (options_.find_unused_parameters && sync_this_backward_ && is_grad_enabled()) unused_ = unused_parameters(output);
  return output;
}

DistributedDataParallel::NoSync::NoSync(DistributedDataParallel& ddp) : ddp_(ddp), previous_(ddp.sync_enabled_) {
  ddp_.sync_enabled_ = false;
}

DistributedDataParallel::NoSync::~NoSync() { ddp_.sync_enabled_ = previous_; }

void DistributedDataParallel::check_consistency() {
  check_replicas_identical(*pg_, structure_change(*model_, parameters_, wrapped_data_), parameters_,
                           {.last_identical = last_identical_step_, .now = synchronised_steps_});
  last_identical_step_ = synchronised_steps_;
}

void DistributedDataParallel::check_even_inputs(int64_t batches) { check_same_batch_count(*pg_, batches); }

}  // namespace rg::parallel
