// DistributedDataParallel: structure check and broadcast at construction, gradient
// buckets filled in place by the engine and all-reduced from gradient-ready hooks,
// unused-parameter handling, and the cross-rank consistency check.
#include "parallel/ddp.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <sstream>
#include <unordered_set>

#include "autograd/node.h"
#include "tensor/ops.h"

namespace rg::parallel {

using report::TraceRecorder;

namespace {

constexpr double kBytesPerMb = 1024.0 * 1024.0;

int64_t fnv1a(const void* bytes, size_t n, uint64_t hash = 1469598103934665603ULL) {
  const auto* p = static_cast<const unsigned char*>(bytes);
  for (size_t i = 0; i < n; ++i) hash = (hash ^ p[i]) * 1099511628211ULL;
  return static_cast<int64_t>(hash);
}

// Every rank's `mine` (all ranks pass the same length), as one row per rank.
template <class T>
std::vector<std::vector<T>> gather_values(ProcessGroup& pg, const std::vector<T>& mine) {
  const auto n = static_cast<int64_t>(mine.size());
  Tensor input = Tensor::from_vector(mine, {n});
  Tensor all = Tensor::zeros({pg.size() * n}, input.dtype());
  pg.all_gather(all, input);
  std::vector<T> values = all.to_vector<T>();
  std::vector<std::vector<T>> rows(pg.size());
  for (int r = 0; r < pg.size(); ++r) rows[r].assign(values.begin() + r * n, values.begin() + (r + 1) * n);
  return rows;
}

// The parameters DDP synchronises: those that need a gradient, each shared one once.
std::vector<std::pair<std::string, Variable>> trainable_parameters(const nn::Module& model) {
  std::vector<std::pair<std::string, Variable>> out;
  std::unordered_set<const VariableImpl*> seen;
  for (auto& [name, p] : model.named_parameters())
    if (p.requires_grad() && seen.insert(p.impl().get()).second) out.emplace_back(name, p);
  return out;
}

// What must agree across ranks for one parameter or buffer.
struct Described {
  std::string kind, name, dtype, shape;
  std::string joined() const { return kind + "\n" + name + "\n" + dtype + "\n" + shape; }
};

Described split_description(const std::string& joined) {
  std::istringstream in(joined);
  Described d;
  std::getline(in, d.kind);
  std::getline(in, d.name);
  std::getline(in, d.dtype);
  std::getline(in, d.shape);
  return d;
}

// `a` is rank_a's entry and `b` rank_b's; an empty kind means the rank has no such entry.
std::string mismatch_message(const Described& a, int rank_a, const Described& b, int rank_b) {
  if (a.kind.empty()) return mismatch_message(b, rank_b, a, rank_a);
  std::ostringstream out;
  out << "DistributedDataParallel: ";
  if (b.kind.empty()) {
    out << a.kind << " '" << a.name << "' exists on rank " << rank_a << " but not on rank " << rank_b;
  } else if (a.kind != b.kind || a.name != b.name) {
    out << "rank " << rank_a << " has " << a.kind << " '" << a.name << "' where rank " << rank_b << " has "
        << b.kind << " '" << b.name << "' (the models differ)";
  } else if (a.dtype == b.dtype) {
    out << a.kind << " '" << a.name << "' has shape " << a.shape << " on rank " << rank_a << " but " << b.shape
        << " on rank " << rank_b;
  } else {
    out << a.kind << " '" << a.name << "' has " << a.dtype << " " << a.shape << " on rank " << rank_a << " but "
        << b.dtype << " " << b.shape << " on rank " << rank_b;
  }
  return out.str();
}

}  // namespace

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<nn::Module> model, std::shared_ptr<ProcessGroup> pg,
                                                 const DDPOptions& options)
    : model_(std::move(model)), pg_(std::move(pg)), options_(options) {
  RG_CHECK(model_ && pg_, "DistributedDataParallel: needs a model and a process group");
  RG_CHECK(options_.bucket_cap_mb > 0 && options_.first_bucket_mb > 0,
           "DistributedDataParallel: bucket sizes must be positive, got bucket_cap_mb = ", options_.bucket_cap_mb,
           " and first_bucket_mb = ", options_.first_bucket_mb);
  verify_same_structure();
  broadcast_state();
  build_buckets();
  attach_grad_views();
  install_hooks();
  reset_readiness();
}

DistributedDataParallel::~DistributedDataParallel() {
  // A destructor must not throw; a failed all-reduce has already marked the group broken,
  // so its next op reports the error.
  try {
    wait_for_buckets();
  } catch (const Error&) {
  }
  for (Slot& slot : slots_) slot.param.remove_grad_ready_hook(slot.hook_id);
}

// Ranks compare a hash per parameter and buffer; only on a mismatch do they exchange the
// descriptions, to name what differs.
void DistributedDataParallel::verify_same_structure() {
  std::vector<Described> items;
  for (auto& [name, p] : model_->named_parameters())
    items.push_back({"parameter", name, dtype_name(p.dtype()), shape_str(p.shape())});
  for (auto& [name, b] : model_->named_buffers())
    items.push_back({"buffer", name, dtype_name(b.dtype()), shape_str(b.shape())});
  auto counts = gather_values<int64_t>(*pg_, {static_cast<int64_t>(items.size())});
  int64_t longest = 0;
  for (auto& row : counts) longest = std::max(longest, row[0]);
  std::vector<int64_t> hashes(longest, 0);
  for (size_t i = 0; i < items.size(); ++i) {
    std::string joined = items[i].joined();
    hashes[i] = fnv1a(joined.data(), joined.size());
  }
  auto all = gather_values(*pg_, hashes);
  for (int64_t i = 0; i < longest; ++i) {
    for (int r = 1; r < pg_->size(); ++r) {
      if (all[r][i] == all[0][i]) continue;
      auto described = all_gather_strings(*pg_, i < static_cast<int64_t>(items.size()) ? items[i].joined() : "");
      RG_THROW(mismatch_message(split_description(described[0]), 0, split_description(described[r]), r));
    }
  }
}

void DistributedDataParallel::broadcast_state() {
  for (auto& [name, p] : model_->named_parameters()) pg_->broadcast(p.data(), 0);
  for (auto& [name, b] : model_->named_buffers()) pg_->broadcast(b, 0);
}

// Reverse registration order approximates the order gradients become ready in, so the
// first bucket (kept small) fills early in backward and its all-reduce overlaps the rest.
void DistributedDataParallel::build_buckets() {
  auto params = trainable_parameters(*model_);
  std::reverse(params.begin(), params.end());
  std::vector<int64_t> offsets, numels;
  int64_t bucket_numel = 0;
  for (auto& [name, p] : params) {
    const double cap_mb = buckets_.size() <= 1 ? options_.first_bucket_mb : options_.bucket_cap_mb;
    const bool fits = !buckets_.empty() && buckets_.back().flat.dtype() == p.dtype() &&
                      buckets_.back().flat.device() == p.device() &&
                      static_cast<double>((bucket_numel + p.numel()) * dtype_size(p.dtype())) <= cap_mb * kBytesPerMb;
    if (!fits) {
      if (!buckets_.empty()) numels.push_back(bucket_numel);
      // A placeholder of the right dtype and device; the real buffer is sized below.
      buckets_.push_back({Tensor::empty({0}, p.dtype(), p.device()), {}});
      bucket_numel = 0;
    }
    buckets_.back().names.push_back(name);
    offsets.push_back(bucket_numel);
    bucket_numel += p.numel();
    slots_.push_back({p, name, p.data(), buckets_.size() - 1, Tensor(), -1});
  }
  if (!buckets_.empty()) numels.push_back(bucket_numel);
  for (size_t b = 0; b < buckets_.size(); ++b)
    buckets_[b].flat = Tensor::zeros({numels[b]}, buckets_[b].flat.dtype(), buckets_[b].flat.device());
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& s = slots_[i];
    s.grad_view = buckets_[s.bucket].flat.narrow(0, offsets[i], s.param.numel()).view(s.param.shape());
  }
}

// Points the grad at its bucket slice, keeping any gradient already accumulated. Needed
// again after zero_grad(set_to_none) or a grad assigned by hand.
void DistributedDataParallel::attach_grad_view(Slot& s) {
  const Tensor& grad = s.param.grad();
  if (grad.defined() && grad.same_data(s.grad_view)) return;
  if (grad.defined()) {
    s.grad_view.copy_(grad);
  } else {
    s.grad_view.zero_();
  }
  s.param.set_grad(s.grad_view);
}

void DistributedDataParallel::attach_grad_views() {
  for (Slot& s : slots_) attach_grad_view(s);
}

void DistributedDataParallel::install_hooks() {
  for (size_t i = 0; i < slots_.size(); ++i) {
    slots_[i].hook_id = slots_[i].param.add_grad_ready_hook([this, i](const Variable&) {
      if (sync_this_backward_) mark_ready(i);
    });
  }
}

void DistributedDataParallel::mark_ready(size_t slot) {
  RG_CHECK(!ready_[slot], "DistributedDataParallel: parameter '", slots_[slot].name,
           "' got a second gradient before every bucket was synchronised (two backward passes after one "
           "forward while some parameter got no gradient?)");
  // A grad dropped between forward and backward (zero_grad(true)) makes the engine
  // allocate a fresh one outside the bucket: move it in before the bucket is reduced.
  attach_grad_view(slots_[slot]);
  backward_started_ = true;
  ready_[slot] = true;
  if (--pending_[slots_[slot].bucket] == 0) launch_ready_buckets();
}

// Launches, in bucket order, every bucket whose gradients are all ready. The launch that
// completes the last bucket ends the backward's communication: it waits for all buckets.
void DistributedDataParallel::launch_ready_buckets() {
  if (next_launch_ == 0) active_fault_ = std::exchange(pending_fault_, std::nullopt);
  while (next_launch_ < buckets_.size() && pending_[next_launch_] == 0) launch(next_launch_++);
  if (next_launch_ == buckets_.size()) {
    wait_for_buckets();
    if (active_fault_ == GradientFault::corrupt) corrupt_first_gradient();
    active_fault_.reset();
    reset_readiness();
  }
}

void DistributedDataParallel::launch(size_t bucket) {
  const Tensor& flat = buckets_[bucket].flat;
  if (active_fault_ == GradientFault::drop) flat.zero_();
  if (options_.trace) {
    options_.trace->record("launch bucket " + std::to_string(bucket), "launch", options_.trace->now_us(), 0,
                           {{"bucket", static_cast<int64_t>(bucket)}, {"bytes", static_cast<int64_t>(flat.nbytes())}});
  }
  works_.push_back(pg_->all_reduce_async(flat, {.op = ReduceOp::avg, .algorithm = options_.algorithm}));
  if (launch_observer_) launch_observer_(bucket);
}

void DistributedDataParallel::wait_for_buckets() {
  auto works = std::move(works_);
  works_.clear();
  if (works.empty()) return;
  TraceRecorder::Scope waiting(options_.trace, "wait for all-reduce", "wait",
                               {{"buckets", static_cast<int64_t>(works.size())}});
  for (auto& work : works) work->wait();
}

// The first slot is the last-registered parameter: the first in bucket 0.
void DistributedDataParallel::corrupt_first_gradient() { slots_.front().grad_view.add_(1.0); }

void DistributedDataParallel::check_even_inputs(int64_t batches) {
  const auto counts = gather_values<int64_t>(*pg_, {batches});
  std::map<int64_t, int> ranks_with;
  for (const auto& row : counts) ++ranks_with[row[0]];
  if (ranks_with.size() == 1) return;
  const int64_t usual = std::max_element(ranks_with.begin(), ranks_with.end(), [](auto& a, auto& b) {
                          return a.second < b.second;
                        })->first;
  std::ostringstream out;
  for (int r = 0; r < pg_->size(); ++r)
    if (counts[r][0] != usual) out << "rank " << r << " has " << counts[r][0] << " batches, ";
  out << "the others " << usual;
  RG_THROW("DistributedDataParallel: the ranks would run different numbers of batches (", out.str(),
           "): the ranks with more would wait forever at an all-reduce the others never join. Give every rank "
           "the same number of batches (a DistributedSampler does, padding the data set)");
}

void DistributedDataParallel::reset_readiness() {
  pending_.assign(buckets_.size(), 0);
  for (const Slot& s : slots_) ++pending_[s.bucket];
  ready_.assign(slots_.size(), false);
  next_launch_ = 0;
  backward_started_ = false;
}

// A backward that started but did not complete every bucket means some parameters got
// no gradient: their buckets never launched, and the ranks' gradients are not averaged.
void DistributedDataParallel::check_previous_backward() {
  if (!backward_started_) {
    reset_readiness();  // forgets parameters marked unused by a forward that had no backward
    return;
  }
  wait_for_buckets();
  std::ostringstream names;
  for (size_t i = slots_.size(); i-- > 0;)  // registration order
    if (!ready_[i]) names << (names.tellp() > 0 ? ", '" : "'") << slots_[i].name << "'";
  reset_readiness();
  RG_THROW("DistributedDataParallel: the last backward produced no gradient for ", names.str(),
           ", so their buckets were never all-reduced and the replicas' gradients are not averaged; if the "
           "model does not use every parameter in every forward, pass .find_unused_parameters = true");
}

// Walks the output's graph: parameters whose gradient accumulator it does not reach get
// no gradient in this backward, so they count as ready now (their grads keep their values).
void DistributedDataParallel::mark_unused_ready(const Variable& output) {
  std::unordered_set<const Node*> reached;
  std::vector<const Node*> stack;
  if (output.grad_fn()) stack.push_back(output.grad_fn().get());
  while (!stack.empty()) {
    const Node* node = stack.back();
    stack.pop_back();
    for (const auto& next : node->next)
      if (next && reached.insert(next.get()).second) stack.push_back(next.get());
  }
  for (size_t i = 0; i < slots_.size(); ++i) {
    auto accumulator = slots_[i].param.impl()->grad_accumulator.lock();
    if (accumulator && reached.count(accumulator.get())) continue;
    ready_[i] = true;
    --pending_[slots_[i].bucket];
  }
}

Variable DistributedDataParallel::forward(const Variable& x) {
  check_previous_backward();
  std::string problem = local_structure_problem();
  RG_CHECK(problem.empty(), "DistributedDataParallel: ", problem);
  attach_grad_views();
  if (options_.broadcast_buffers)
    for (auto& [name, b] : model_->named_buffers()) pg_->broadcast(b, 0);
  sync_this_backward_ = sync_enabled_;
  if (options_.check_every > 0 && ++forwards_ % options_.check_every == 0) check_consistency();
  Variable output = model_->forward(x);
  if (options_.find_unused_parameters && sync_this_backward_ && is_grad_enabled()) mark_unused_ready(output);
  return output;
}

DistributedDataParallel::NoSync::NoSync(DistributedDataParallel& ddp) : ddp_(ddp), previous_(ddp.sync_enabled_) {
  ddp_.sync_enabled_ = false;
}

DistributedDataParallel::NoSync::~NoSync() { ddp_.sync_enabled_ = previous_; }

// What changed in this rank's model since wrapping, or "".
std::string DistributedDataParallel::local_structure_problem() const {
  auto params = trainable_parameters(*model_);
  std::ostringstream out;
  if (params.size() != slots_.size()) {
    out << "the model has " << params.size() << " trainable parameters but had " << slots_.size()
        << " when it was wrapped; wrap the model again after changing it";
    return out.str();
  }
  for (size_t i = 0; i < params.size(); ++i) {
    const Slot& s = slots_[params.size() - 1 - i];
    const Variable& p = params[i].second;
    if (!p.same(s.param)) {
      out << "parameter '" << s.name << "' was replaced by another Variable after wrapping, so DDP no longer "
          << "synchronises it; wrap the model again after replacing parameters";
    } else if (p.shape() != s.data.shape()) {
      out << "parameter '" << s.name << "' was reshaped from " << shape_str(s.data.shape()) << " to "
          << shape_str(p.shape()) << " after wrapping";
    } else if (!p.data().same_data(s.data) || p.dtype() != s.data.dtype()) {
      out << "parameter '" << s.name << "' got new data (another tensor, dtype or device) after wrapping, "
          << "so its gradient no longer lives in its bucket; move or cast the model before wrapping it";
    } else {
      continue;
    }
    return out.str();
  }
  return "";
}

void DistributedDataParallel::check_consistency() {
  auto problems = all_gather_strings(*pg_, local_structure_problem());
  for (int r = 0; r < pg_->size(); ++r)
    RG_CHECK(problems[r].empty(), "DistributedDataParallel::check_consistency: rank ", r, ": ", problems[r]);
  std::vector<int64_t> hashes;
  std::vector<double> sums;
  for (size_t i = slots_.size(); i-- > 0;) {  // registration order
    Tensor data = slots_[i].param.data().to(Device::cpu()).contiguous();
    hashes.push_back(fnv1a(data.raw_data(), data.nbytes()));
    sums.push_back(sum(data.to(DType::float64)).item());
  }
  auto all_hashes = gather_values(*pg_, hashes);
  auto all_sums = gather_values(*pg_, sums);
  for (size_t i = 0; i < hashes.size(); ++i) {
    std::ostringstream differing;
    for (int r = 1; r < pg_->size(); ++r)
      if (all_hashes[r][i] != all_hashes[0][i]) differing << " rank " << r << " (sum " << all_sums[r][i] << ")";
    RG_CHECK(differing.tellp() == 0, "DistributedDataParallel::check_consistency: parameter '",
             slots_[slots_.size() - 1 - i].name, "' differs across replicas: rank 0 (sum ", all_sums[0][i],
             ") vs", differing.str(), "; was it edited by hand after wrapping, or did a gradient all-reduce go wrong?");
  }
}

}  // namespace rg::parallel
