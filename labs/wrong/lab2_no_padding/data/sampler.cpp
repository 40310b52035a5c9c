// Wrong on purpose (labs/README.md, "Wrong solutions"): no padding; each rank strides over the
// n examples only, so when N does not divide n the ranks get different numbers of them.
// BEGIN SOLUTION lab2.rank_indices
std::vector<int64_t> rank_indices(int64_t n, int64_t total, const DistributedSamplerOptions& options, int64_t epoch) {
  std::vector<int64_t> order = options.shuffle ? permutation(n, options.seed, epoch) : identity(n);
  if (!options.drop_last) {
    total = n;
  } else {
    order.resize(total);
  }
  std::vector<int64_t> mine;
  mine.reserve(total / options.num_replicas);
  for (int64_t pos = options.rank; pos < total; pos += options.num_replicas) mine.push_back(order[pos]);
  return mine;
}
// END SOLUTION
