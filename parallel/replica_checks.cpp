// The replica checks. Ranks compare small hashes and checksums first, and exchange
// descriptions only on a mismatch, to name what differs.
#include "parallel/replica_checks.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <unordered_set>

#include "parallel/flat_parameters.h"
#include "tensor/ops.h"

namespace rg::parallel {

namespace {

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

// Who differs, for one parameter: when a majority of the ranks share its checksum, the ranks
// outside it ("rank 2 (sum 1.5) vs the other 3 ranks (sum 0.5)"); else every rank unlike rank 0.
std::string differing_ranks(const std::vector<int64_t>& checksums, const std::vector<double>& sums) {
  const int n = static_cast<int>(checksums.size());
  std::map<int64_t, int> ranks_with;
  for (int64_t checksum : checksums) ++ranks_with[checksum];
  const auto [usual, agreeing] = *std::max_element(ranks_with.begin(), ranks_with.end(), [](auto& a, auto& b) {
    return a.second < b.second;
  });
  std::ostringstream out;
  if (2 * agreeing > n) {
    const auto one_agreeing = std::find(checksums.begin(), checksums.end(), usual) - checksums.begin();
    for (int r = 0; r < n; ++r)
      if (checksums[r] != usual) out << (out.tellp() > 0 ? ", " : "") << "rank " << r << " (sum " << sums[r] << ")";
    out << " vs the other " << agreeing << " ranks (sum " << sums[one_agreeing] << ")";
    return out.str();
  }
  out << "rank 0 (sum " << sums[0] << ") vs";
  for (int r = 1; r < n; ++r)
    if (checksums[r] != checksums[0]) out << " rank " << r << " (sum " << sums[r] << ")";
  if (n == 2) out << " (two replicas cannot tell which one went wrong)";
  return out.str();
}

// When it happened, from the last check that found the replicas identical.
std::string blamed_steps(CheckedSteps steps) {
  auto after = [](int64_t step) { return step == 0 ? std::string("before the first step") : "after step " + std::to_string(step); };
  std::ostringstream out;
  if (steps.last_identical < 0)
    return "the replicas differ " + after(steps.now) + ", and no check found them identical before";
  out << "the replicas were identical " << after(steps.last_identical) << " and differ " << after(steps.now);
  if (steps.now == steps.last_identical)
    out << ", so they were changed since, outside a step";
  else if (steps.now == steps.last_identical + 1)
    out << ", so it happened in step " << steps.now << " (or by an edit after it)";
  else
    out << ", so it happened in steps " << steps.last_identical + 1 << " to " << steps.now << " (or by an edit between them)";
  return out.str();
}

}  // namespace

std::vector<NamedParameter> trainable_parameters(const nn::Module& model) {
  std::vector<NamedParameter> out;
  std::unordered_set<const VariableImpl*> seen;
  for (auto& [name, p] : model.named_parameters())
    if (p.requires_grad() && seen.insert(p.impl().get()).second) out.push_back({name, p});
  return out;
}

void check_same_structure(ProcessGroup& pg, const nn::Module& model) {
  std::vector<Described> items;
  for (auto& [name, p] : model.named_parameters())
    items.push_back({"parameter", name, dtype_name(p.dtype()), shape_str(p.shape())});
  for (auto& [name, b] : model.named_buffers())
    items.push_back({"buffer", name, dtype_name(b.dtype()), shape_str(b.shape())});
  auto counts = gather_values<int64_t>(pg, {static_cast<int64_t>(items.size())});
  int64_t longest = 0;
  for (auto& row : counts) longest = std::max(longest, row[0]);
  std::vector<int64_t> hashes(longest, 0);
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string joined = items[i].joined();
    hashes[i] = static_cast<int64_t>(fnv1a(joined.data(), joined.size()));
  }
  auto all = gather_values(pg, hashes);
  for (int64_t i = 0; i < longest; ++i) {
    for (int r = 1; r < pg.size(); ++r) {
      if (all[r][i] == all[0][i]) continue;
      auto described = all_gather_strings(pg, i < static_cast<int64_t>(items.size()) ? items[i].joined() : "");
      RG_THROW(mismatch_message(split_description(described[0]), 0, split_description(described[r]), r));
    }
  }
}

std::string structure_change(const nn::Module& model, const std::vector<NamedParameter>& wrapped,
                             const std::vector<Tensor>& wrapped_data) {
  const auto now = trainable_parameters(model);
  std::ostringstream out;
  if (now.size() != wrapped.size()) {
    out << "the model has " << now.size() << " trainable parameters but had " << wrapped.size()
        << " when it was wrapped; wrap the model again after changing it";
    return out.str();
  }
  for (size_t i = 0; i < now.size(); ++i) {
    const Variable& p = now[i].param;
    const std::string& name = wrapped[i].name;
    if (!p.same(wrapped[i].param)) {
      out << "parameter '" << name << "' was replaced by another Variable after wrapping: the model no longer "
          << "holds the wrapped Variables, so DDP does not synchronise it; wrap the model again after replacing "
          << "parameters";
    } else if (p.shape() != wrapped_data[i].shape()) {
      out << "parameter '" << name << "' was reshaped from " << shape_str(wrapped_data[i].shape()) << " to "
          << shape_str(p.shape()) << " after wrapping";
    } else if (!p.data().same_data(wrapped_data[i]) || p.dtype() != wrapped_data[i].dtype()) {
      out << "parameter '" << name << "' got new data (another tensor, dtype or device) after wrapping, "
          << "so its gradient no longer lives in its bucket; move or cast the model before wrapping it";
    } else {
      continue;
    }
    return out.str();
  }
  return "";
}

void check_replicas_identical(ProcessGroup& pg, const std::string& problem, const std::vector<NamedParameter>& parameters,
                              CheckedSteps steps) {
  auto problems = all_gather_strings(pg, problem);
  for (int r = 0; r < pg.size(); ++r)
    RG_CHECK(problems[r].empty(), "DistributedDataParallel::check_consistency: rank ", r, ": ", problems[r]);
  std::vector<int64_t> checksums;
  std::vector<double> sums;
  for (const auto& [name, p] : parameters) {
    checksums.push_back(static_cast<int64_t>(hash_tensor(p.data())));
    sums.push_back(sum(p.data().to(Device::cpu()).to(DType::float64)).item());
  }
  auto all_checksums = gather_values(pg, checksums);
  auto all_sums = gather_values(pg, sums);
  for (size_t i = 0; i < checksums.size(); ++i) {
    std::vector<int64_t> checksum_per_rank;
    std::vector<double> sum_per_rank;
    for (int r = 0; r < pg.size(); ++r) {
      checksum_per_rank.push_back(all_checksums[r][i]);
      sum_per_rank.push_back(all_sums[r][i]);
    }
    if (std::all_of(checksum_per_rank.begin(), checksum_per_rank.end(), [&](int64_t c) { return c == checksum_per_rank[0]; }))
      continue;
    RG_THROW("DistributedDataParallel::check_consistency: parameter '", parameters[i].name,
             "' differs across replicas: ", differing_ranks(checksum_per_rank, sum_per_rank), "; ", blamed_steps(steps),
             ". Was it edited by hand after wrapping, or did a gradient all-reduce go wrong?");
  }
}

void check_same_batch_count(ProcessGroup& pg, int64_t batches) {
  const auto counts = gather_values<int64_t>(pg, {batches});
  std::map<int64_t, int> ranks_with;
  for (const auto& row : counts) ++ranks_with[row[0]];
  if (ranks_with.size() == 1) return;
  const int64_t usual = std::max_element(ranks_with.begin(), ranks_with.end(), [](auto& a, auto& b) {
                          return a.second < b.second;
                        })->first;
  std::ostringstream out;
  for (int r = 0; r < pg.size(); ++r)
    if (counts[r][0] != usual) out << "rank " << r << " has " << counts[r][0] << " batches, ";
  out << "the others " << usual;
  RG_THROW("DistributedDataParallel: the ranks would run different numbers of batches (", out.str(),
           "): the ranks with more would wait forever at an all-reduce the others never join. Give every rank "
           "the same number of batches (a DistributedSampler does, padding the data set)");
}

}  // namespace rg::parallel
