// Collective checks shared by the local-world tests (Catch2), the MPI program and the NCCL
// program: each returns "" or a description of the first wrong value. Inputs are
// multiples of 1/64 below 16 in magnitude, so sums of up to 8 ranks are exact in float32
// and every algorithm must reproduce the serial reference bit for bit.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "parallel/algorithms.h"
#include "parallel/process_group.h"
#include "tensor/generator.h"
#include "tensor/ops.h"

namespace rg::parallel::testing {

inline double value_at(int rank, int64_t i) {
  return static_cast<double>((rank * 7919 + i * 104729 + 13) % 1009) / 64.0 - 7.5;
}

// value_at(rank, i) as stored in `dtype` (integer types truncate).
inline double stored(DType dtype, double v) {
  return dispatch(dtype, [&](auto tag) { return static_cast<double>(static_cast<decltype(tag)>(v)); });
}

// Rank `rank`'s input of `length` elements, on `device`.
inline Tensor input_for(int rank, int64_t length, DType dtype, Device device) {
  std::vector<double> values(length);
  for (int64_t i = 0; i < length; ++i) values[i] = value_at(rank, i);
  Tensor host = Tensor::from_vector(values, {length}).to(dtype);
  return device.is_cpu() ? host : host.to(device);
}

// What a serial loop over ranks 0..n-1 computes for element i, in the element type T.
template <class T>
T serial_reduce(ReduceOp op, int n, int64_t i) {
  T acc = static_cast<T>(value_at(0, i));
  for (int r = 1; r < n; ++r) {
    T v = static_cast<T>(value_at(r, i));
    acc = op == ReduceOp::max ? std::max(acc, v) : op == ReduceOp::min ? std::min(acc, v) : static_cast<T>(acc + v);
  }
  return op == ReduceOp::avg ? static_cast<T>(acc / static_cast<T>(n)) : acc;
}

// Compares `result` (any device) with expected(i) for i in [0, numel).
template <class Expected>
std::string compare(const std::string& what, const Tensor& result, Expected expected) {
  std::vector<double> got = result.to(Device::cpu()).to_vector<double>();
  for (size_t i = 0; i < got.size(); ++i) {
    double want = expected(static_cast<int64_t>(i));
    if (got[i] != want)
      return detail::concat(what, ": element ", i, " is ", got[i], ", the serial reference is ", want);
  }
  return "";
}

// Compares an all-reduce's `result` of the ranks' input_for values with the serial reduction.
inline std::string compare_with_serial(const std::string& what, const Tensor& result, ReduceOp op, int n) {
  return dispatch(result.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return compare(what, result, [&](int64_t i) { return static_cast<double>(serial_reduce<T>(op, n, i)); });
  });
}

inline std::string check_all_reduce(ProcessGroup& pg, Algorithm algorithm, ReduceOp op, DType dtype, int64_t length,
                                    Device device) {
  Tensor t = input_for(pg.rank(), length, dtype, device);
  pg.all_reduce(t, {.op = op, .algorithm = algorithm});
  std::string what = detail::concat("rank ", pg.rank(), " of ", pg.size(), ": all_reduce ", reduce_op_name(op), " (",
                                    algorithm_name(algorithm), ") of ", length, " ", dtype_name(dtype));
  return compare_with_serial(what, t, op, pg.size());
}

// Runs check(pg) on every rank of a local world of n ranks and returns the first failure, or "".
template <class Check>
std::string on_world(int n, Check check, ProcessGroupOptions options = {}) {
  std::mutex mutex;
  std::string first;
  run_local_world(
      n,
      [&](std::shared_ptr<ProcessGroup> pg) {
        std::string error = check(*pg);
        std::lock_guard lock(mutex);
        if (first.empty()) first = error;
      },
      options);
  return first;
}

// Lengths around the world size and a large prime, as the issue asks.
inline std::vector<int64_t> lengths_for(int n) {
  std::vector<int64_t> lengths{0, 1, n - 1, n, n + 1, 12, 100003};
  return lengths;
}

// One algorithm, both floating dtypes, every op and every length of lengths_for.
inline std::string check_all_reduce_lengths(ProcessGroup& pg, Algorithm algorithm, Device device) {
  for (DType dtype : {DType::float32, DType::float64})
    for (int64_t length : lengths_for(pg.size()))
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min}) {
        if (op != ReduceOp::sum && length > 1000) continue;  // the large prime once per algorithm and dtype
        std::string error = check_all_reduce(pg, algorithm, op, dtype, length, device);
        if (!error.empty()) return error;
      }
  return "";
}

// Random float32 inputs (whose sums round) all-reduced on n local ranks: "" when rank 0's
// result is within 1e-5 of the float64 serial reduction and every rank has rank 0's bits.
inline std::string check_same_bits(int n, Algorithm algorithm, ReduceOp op, int64_t length) {
  std::vector<Tensor> results(n), inputs(n);
  run_local_world(n, [&](std::shared_ptr<ProcessGroup> pg) {
    Generator gen(100 + pg->rank());
    inputs[pg->rank()] = randn({length}, gen);
    results[pg->rank()] = inputs[pg->rank()].clone();
    pg->all_reduce(results[pg->rank()], {.op = op, .algorithm = algorithm});
  });
  Tensor serial = inputs[0].to(DType::float64);
  for (int r = 1; r < n; ++r) serial = serial + inputs[r].to(DType::float64);
  if (op == ReduceOp::avg) serial = serial / static_cast<double>(n);
  const double error = max_abs_diff(results[0].to(DType::float64), serial);
  if (error > 1e-5) return detail::concat("rank 0's result is ", error, " from the serial reduction");
  for (int r = 1; r < n; ++r)
    if (max_abs_diff(results[r], results[0]) != 0) return detail::concat("rank ", r, "'s bits differ from rank 0's");
  return "";
}

// DDP's path (async, agreed: posted by the caller, or by the communication thread when it
// is busy): several all-reduces in flight at once, every other one marked waited_at_once
// (DDP's last bucket; queued behind the others here), one of them non-contiguous (every
// other element of a buffer twice as long), waited for last first; then a waited_at_once
// and a blocking agreed call with the group idle (both halves on the caller). Each against
// the serial result.
inline std::string check_posted_all_reduces(ProcessGroup& pg, DType dtype, ReduceOp op, Device device) {
  std::vector<int64_t> lengths = lengths_for(pg.size());
  std::vector<Tensor> tensors;
  std::vector<std::shared_ptr<Work>> works;
  for (int64_t length : lengths) {
    Tensor t = input_for(pg.rank(), length, dtype, device);
    if (length == pg.size() + 1) {  // the same values, every other element of a longer buffer
      Tensor spaced = Tensor::zeros({2 * length}, dtype, device).slice(0, 0, 2 * length, 2);
      spaced.copy_(t);
      t = spaced;
    }
    tensors.push_back(t);
    works.push_back(pg.all_reduce_async(t, {.op = op, .agreed = true, .waited_at_once = works.size() % 2 == 1}));
  }
  for (size_t k = works.size(); k-- > 0;) works[k]->wait();
  for (int64_t length : {1009, 1010}) {
    lengths.push_back(length);
    tensors.push_back(input_for(pg.rank(), length, dtype, device));
  }
  pg.all_reduce_async(tensors[tensors.size() - 2], {.op = op, .agreed = true, .waited_at_once = true})->wait();
  pg.all_reduce(tensors.back(), {.op = op, .agreed = true});
  for (size_t k = 0; k < tensors.size(); ++k) {
    std::string what = detail::concat("rank ", pg.rank(), " of ", pg.size(), ": agreed all_reduce ",
                                      reduce_op_name(op), " of ", lengths[k], " ", dtype_name(dtype),
                                      tensors[k].is_contiguous() ? "" : " (non-contiguous)");
    std::string error = compare_with_serial(what, tensors[k], op, pg.size());
    if (!error.empty()) return error;
  }
  return "";
}

inline std::string check_all_reduce_matrix(ProcessGroup& pg, Device device) {
  for (Algorithm algorithm : all_algorithms()) {
    std::string error = check_all_reduce_lengths(pg, algorithm, device);
    if (!error.empty()) return error;
  }
  for (DType dtype : {DType::float32, DType::float64})
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min}) {
      std::string error = check_posted_all_reduces(pg, dtype, op, device);
      if (!error.empty()) return error;
    }
  // The library collectives also take integers (avg excepted).
  for (Algorithm library : {Algorithm::library, Algorithm::library_blocking})
    for (DType dtype : {DType::int32, DType::int64})
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min}) {
        std::string error = check_all_reduce(pg, library, op, dtype, 1001, device);
        if (!error.empty()) return error;
      }
  return "";
}

// broadcast, reduce, all_gather, reduce_scatter, send/recv and barrier against serial results.
inline std::string check_other_collectives(ProcessGroup& pg, DType dtype, int64_t length, Device device) {
  const int n = pg.size(), rank = pg.rank(), root = n - 1;
  std::string where = detail::concat("rank ", rank, " of ", n, ", ", length, " ", dtype_name(dtype), ": ");
  auto same_as_rank = [&](int r) { return [r, dtype](int64_t i) { return stored(dtype, value_at(r, i)); }; };
  std::string error;

  Tensor b = input_for(rank, length, dtype, device);
  pg.broadcast(b, root);
  if (!(error = compare(where + "broadcast", b, same_as_rank(root))).empty()) return error;

  Tensor r = input_for(rank, length, dtype, device);
  pg.reduce(r, root, ReduceOp::sum);
  auto reduced = [&](int64_t i) {
    return dispatch(dtype, [&](auto tag) { return static_cast<double>(serial_reduce<decltype(tag)>(ReduceOp::sum, n, i)); });
  };
  auto reduced_on_root = [&](int64_t i) { return rank == root ? reduced(i) : stored(dtype, value_at(rank, i)); };
  if (!(error = compare(where + "reduce", r, reduced_on_root)).empty()) return error;

  // The library's all_gather and reduce_scatter, and the ring's for floating dtypes.
  std::vector<Algorithm> algorithms{Algorithm::library};
  if (is_floating(dtype)) algorithms.push_back(Algorithm::ring);
  for (Algorithm algorithm : algorithms) {
    const std::string how = where + algorithm_name(algorithm) + " ";
    Tensor gathered = Tensor::zeros({n * length}, dtype, device);
    pg.all_gather(gathered, input_for(rank, length, dtype, device), {.algorithm = algorithm});
    if (!(error = compare(how + "all_gather", gathered,
                          [&](int64_t i) { return stored(dtype, value_at(static_cast<int>(i / length), i % length)); }))
             .empty())
      return error;

    // reduce_scatter: every rank contributes n*length elements; rank k gets block k reduced.
    Tensor scattered = Tensor::zeros({length}, dtype, device);
    const Tensor contribution = input_for(rank, n * length, dtype, device);
    pg.reduce_scatter(scattered, contribution, {.op = ReduceOp::sum, .algorithm = algorithm});
    if (!(error = compare(how + "reduce_scatter", scattered, [&](int64_t i) { return reduced(rank * length + i); }))
             .empty())
      return error;
    if (!(error = compare(how + "reduce_scatter's input", contribution, [&](int64_t i) {
            return stored(dtype, value_at(rank, i));
          })).empty())
      return error;
  }

  // send/recv around the ring: even ranks send first, so blocking sends cannot deadlock.
  if (n > 1) {
    Tensor incoming = Tensor::zeros({length}, dtype, device);
    Tensor mine = input_for(rank, length, dtype, device);
    int right = (rank + 1) % n, left = (rank + n - 1) % n;
    if (rank % 2 == 0) {
      pg.send(mine, right, 7);
      pg.recv(incoming, left, 7);
    } else {
      pg.recv(incoming, left, 7);
      pg.send(mine, right, 7);
    }
    if (!(error = compare(where + "recv", incoming, same_as_rank(left))).empty()) return error;
  }
  pg.barrier();
  return "";
}

// Traffic per rank for an all-reduce of `length` float32 (S bytes): ring 2(N-1)/N·S each
// way within a chunk of rounding; star (N-1)·S at rank 0 and S elsewhere; library S.
inline std::string check_traffic(ProcessGroup& pg, int64_t length) {
  const int n = pg.size();
  const double s = static_cast<double>(length) * 4;
  const double chunk = std::ceil(static_cast<double>(length) / n) * 4;
  struct Case {
    Algorithm algorithm;
    double sent, received, tolerance;
  };
  std::vector<Case> cases{{Algorithm::ring, 2.0 * (n - 1) / n * s, 2.0 * (n - 1) / n * s, chunk},
                          {Algorithm::star, pg.rank() == 0 ? (n - 1) * s : (n > 1 ? s : 0),
                           pg.rank() == 0 ? (n - 1) * s : (n > 1 ? s : 0), 0},
                          {Algorithm::library, s, s, 0},
                          {Algorithm::library_blocking, s, s, 0}};
  for (const auto& c : cases) {
    pg.reset_stats();
    Tensor t = input_for(pg.rank(), length, DType::float32, Device::cpu());
    pg.all_reduce(t, {.algorithm = c.algorithm});
    CommStats stats = pg.stats();
    if (std::abs(static_cast<double>(stats.bytes_sent) - c.sent) > c.tolerance ||
        std::abs(static_cast<double>(stats.bytes_received) - c.received) > c.tolerance || stats.operations != 1)
      return detail::concat("rank ", pg.rank(), " of ", n, ": ", algorithm_name(c.algorithm), " all_reduce of ", s,
                            " bytes sent ", stats.bytes_sent, " and received ", stats.bytes_received, " in ",
                            stats.operations, " ops; expected ", c.sent, " and ", c.received, " (within ",
                            c.tolerance, ")");
  }
  return "";
}

}  // namespace rg::parallel::testing
