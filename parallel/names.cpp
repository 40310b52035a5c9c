// The vocabulary of the process groups in words: reduce ops, algorithms, op kinds, the
// signature a collective is checked by, and OpContext's error messages; plus the two
// element-wise helpers every algorithm and backend reduces with.
#include <algorithm>
#include <bit>
#include <sstream>

#include "parallel/communicator.h"
#include "tensor/backend.h"
#include "tensor/ops.h"

namespace rg::parallel {

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::avg: return "avg";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
  }
  return "?";
}

const char* algorithm_name(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::library: return "library";
    case Algorithm::ring: return "ring";
    case Algorithm::pipelined_ring: return "pipelined_ring";
    case Algorithm::relay: return "relay";
    case Algorithm::star: return "star";
    case Algorithm::library_blocking: return "library_blocking";
  }
  return "?";
}

bool is_library(Algorithm algorithm) {
  return algorithm == Algorithm::library || algorithm == Algorithm::library_blocking;
}

const std::vector<Algorithm>& all_algorithms() {
  static const std::vector<Algorithm> all{Algorithm::library, Algorithm::ring, Algorithm::pipelined_ring,
                                          Algorithm::relay, Algorithm::star, Algorithm::library_blocking};
  return all;
}

Algorithm parse_algorithm(const std::string& name) {
  if (name == "naive_ring") return Algorithm::relay;  // the name before the ring and the relay were told apart
  for (Algorithm a : all_algorithms())
    if (name == algorithm_name(a)) return a;
  RG_THROW("unknown all-reduce algorithm '", name, "' (library, ring, pipelined_ring, relay, star, library_blocking)");
}

const char* op_kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::all_reduce: return "all_reduce";
    case OpKind::broadcast: return "broadcast";
    case OpKind::reduce: return "reduce";
    case OpKind::all_gather: return "all_gather";
    case OpKind::reduce_scatter: return "reduce_scatter";
    case OpKind::barrier: return "barrier";
    case OpKind::agree: return "agree";
  }
  return "?";
}

std::string describe(const CollectiveSignature& s) {
  if (s.kind == OpKind::agree) {
    std::ostringstream layout;
    layout << std::hex << static_cast<uint64_t>(s.numel);
    return detail::concat("agree on step ", s.root, " (layout ", layout.str(), ") (#", s.seq, ")");
  }
  std::string text = op_kind_name(s.kind);
  const bool reduces = s.kind == OpKind::all_reduce || s.kind == OpKind::reduce || s.kind == OpKind::reduce_scatter;
  const auto algorithm = static_cast<Algorithm>(s.algorithm);
  // all_reduce always names its algorithm; the others only when it is not the library's.
  const bool named = s.kind == OpKind::all_reduce || algorithm != Algorithm::library;
  if (reduces && named)
    text += detail::concat(" (", reduce_op_name(static_cast<ReduceOp>(s.reduce_op)), ", ", algorithm_name(algorithm), ")");
  else if (reduces)
    text += detail::concat(" (", reduce_op_name(static_cast<ReduceOp>(s.reduce_op)), ")");
  else if (named)
    text += detail::concat(" (", algorithm_name(algorithm), ")");
  if (s.kind != OpKind::barrier)
    text += detail::concat(" of ", s.numel, " ", dtype_name(static_cast<DType>(s.dtype)));
  if (s.kind == OpKind::broadcast || s.kind == OpKind::reduce) text += detail::concat(" from root ", s.root);
  return text + detail::concat(" (#", s.seq, ")");
}

std::string disagreement(const std::vector<CollectiveSignature>& all) {
  std::string mismatch;
  for (size_t r = 1; r < all.size(); ++r)
    if (!(all[r] == all[0])) mismatch += detail::concat(", rank ", r, " ", describe(all[r]));
  return mismatch.empty() ? "" : "rank 0 " + describe(all[0]) + mismatch;
}

std::string from_rank(int rank, const std::string& message) {
  const std::string prefix = detail::concat("rank ", rank, ": ");
  return message.starts_with(prefix) ? message : prefix + message;
}

Clock::time_point deadline_after(Clock::time_point start, double seconds) {
  // About three years: far enough to mean "no limit", near enough that no clock or
  // condition-variable arithmetic overflows.
  constexpr double kLongestWaitS = 1e8;
  const double wait = std::min(seconds, kLongestWaitS);
  return start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(wait));
}

void OpContext::timeout(const std::string& what) const {
  throw Error(detail::concat("rank ", rank, ": ", op, " #", seq, " timed out after ", timeout_s, " s waiting for ",
                             what, "; the process group is broken"));
}

void OpContext::fail(const std::string& what) const {
  throw Error(detail::concat("rank ", rank, ": ", op, " #", seq, ": ", what));
}

void reduce_into(const Tensor& acc, const Tensor& incoming, ReduceOp op) {
  BinaryOp binary = op == ReduceOp::max ? BinaryOp::maximum : op == ReduceOp::min ? BinaryOp::minimum : BinaryOp::add;
  binary_into(binary, acc, incoming, acc);
}

// By a power of two it multiplies by the reciprocal: the same exact value, so the same
// correctly rounded bits, and a multiply costs half a divide (DDP's average of the MLP's
// 235,402 gradients: 11 us against 23 us).
void divide_by(const Tensor& t, int n) {
  if (std::has_single_bit(static_cast<unsigned>(n)))
    backend_for(t).binary_scalar(BinaryOp::mul, t, 1.0 / n, t);
  else
    backend_for(t).binary_scalar(BinaryOp::div, t, static_cast<double>(n), t);
}

// The group's own observer: sums what every op moved, for stats().

}  // namespace rg::parallel
