// Wrong on purpose (labs/README.md, "Wrong solutions"): the buckets follow registration order,
// not its reverse, so the first bucket holds the gradients that backward computes last.
// BEGIN SOLUTION lab5.plan_buckets
std::vector<std::vector<size_t>> plan_buckets(const std::vector<Variable>& parameters, const BucketCaps& caps) {
  std::vector<std::vector<size_t>> plan;
  size_t bucket_bytes = 0;
  for (size_t i = 0; i < parameters.size(); ++i) {
    const Variable& p = parameters[i];
    const size_t bytes = p.data().nbytes();
    const size_t cap = plan.size() <= 1 ? caps.first_bytes : caps.later_bytes;
    const bool fits = !plan.empty() && parameters[plan.back().front()].dtype() == p.dtype() &&
                      parameters[plan.back().front()].device() == p.device() && bucket_bytes + bytes <= cap;
    if (!fits) {
      plan.emplace_back();
      bucket_bytes = 0;
    }
    plan.back().push_back(i);
    bucket_bytes += bytes;
  }
  return plan;
}
// END SOLUTION
