// Chapter 08 — claim C08: ring all-reduce. The devices form a ring and each talks only to its
// neighbours; the gradient is cut into N chunks that pass around like a relay baton, first
// summed (reduce-scatter: after N-1 steps rank r holds the complete chunk r), then passed on
// complete (all-gather: N-1 more steps); every device ends with the whole sum. The library's
// ring (parallel/ring.cpp) is checked against a serial sum for every N from 1 to 8 and lengths
// shorter than N, not divisible by N and large; its step-by-step trace is printed and drawn.
// Usage: chapter_08_ring_allreduce [--quick] [--workers 4] [--max-ranks 8] [--wrong-chunk]
//        mpirun -n 4 chapter_08_ring_allreduce
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "chapters/common/chapter.h"
#include "parallel/algorithms.h"
#include "parallel/flat_parameters.h"
#include "ringgrad.h"

using namespace rg;
using parallel::Algorithm;
using parallel::ProcessGroup;
using parallel::ReduceOp;

namespace {

// One rank's part of one ring step: which chunk it passed on and which it took in.
struct Passed {
  std::string phase;  // "reduce-scatter" or "all-gather"
  int step = 0;       // from 1
  int rank = 0, send_chunk = 0, recv_chunk = 0;
  std::vector<double> values;  // what was sent (the library's trace shows chunks of up to 8 elements)
  auto key() const { return std::tuple(phase != "reduce-scatter", step, rank); }  // the order of the ring
  bool same_chunks(const Passed& o) const {
    return phase == o.phase && step == o.step && rank == o.rank && send_chunk == o.send_chunk &&
           recv_chunk == o.recv_chunk;
  }
};

int wrap(int chunk, int n) { return ((chunk % n) + n) % n; }

std::string joined(const std::vector<std::string>& parts, const std::string& separator) {
  std::string text;
  for (size_t i = 0; i < parts.size(); ++i) text.append(i == 0 ? "" : separator).append(parts[i]);
  return text;
}

// ---- The chapter's own ring, the lecture's picture in code: at step s of the reduce-scatter
// rank r passes chunk r-s-1 to its right neighbour and adds what its left neighbour passes
// into its chunk r-s-2; in the all-gather it passes chunk r-s and stores chunk r-s-1. It runs
// on the group's blocking send and recv, for --wrong-chunk (the library's ring has no bug
// switch) and to check that it passes the same chunks as the library's at every step.

// Sends `out` to the right neighbour and receives `in` from the left one. A send waits for its
// receiver, so if every rank sent first all would wait forever: even ranks send first.
void pass_on(ProcessGroup& pg, const Tensor& out, const Tensor& in) {
  const int n = pg.size(), right = (pg.rank() + 1) % n, left = (pg.rank() + n - 1) % n;
  if (pg.rank() % 2 == 0) {
    pg.send(out, right);
    pg.recv(in, left);
  } else {
    pg.recv(in, left);
    pg.send(out, right);
  }
}

// Sums `flat` over the ranks in place. The buffer is padded to N equal chunks (the zeros add
// nothing), so that a wrong chunk index changes the sums but not the size of a message.
// wrong_chunk: in the reduce-scatter each rank sends chunk r-s, one ahead of what its
// neighbour adds it into — the off-by-one a first ring often has.
void chapter_ring_all_reduce(ProcessGroup& pg, const Tensor& flat, bool wrong_chunk, std::vector<Passed>* log) {
  const int n = pg.size(), rank = pg.rank();
  const int64_t chunk_length = (flat.numel() + n - 1) / n;
  const Tensor padded = Tensor::zeros({chunk_length * n}, flat.dtype());
  padded.narrow(0, 0, flat.numel()).copy_(flat);
  const auto chunk = [&](int c) { return parallel::chunk_of(padded, c, n); };
  const Tensor landing = Tensor::empty({chunk_length}, flat.dtype());
  for (int step = 0; step < n - 1; ++step) {  // reduce-scatter: partial sums travel around
    const int send = wrap(rank - step - 1 + (wrong_chunk ? 1 : 0), n), recv = wrap(rank - step - 2, n);
    if (log) log->push_back({"reduce-scatter", step + 1, rank, send, recv, {}});
    pass_on(pg, chunk(send), landing);
    chunk(recv).add_(landing);  // my copy of the chunk + the partial sum of those before me
  }
  for (int step = 0; step < n - 1; ++step) {  // all-gather: the complete chunks travel around
    const int send = wrap(rank - step, n), recv = wrap(rank - step - 1, n);
    if (log) log->push_back({"all-gather", step + 1, rank, send, recv, {}});
    pass_on(pg, chunk(send), chunk(recv));
  }
  flat.copy_(padded.narrow(0, 0, flat.numel()));
}

// ---- The correctness sweep.

// Rank r's buffer: whole numbers, so that every sum is exact in float32 and any order of
// adding gives the same bits as the serial sum.
Tensor rank_values(int64_t length, int rank) {
  std::vector<float> v(static_cast<size_t>(length));
  for (int64_t i = 0; i < length; ++i) v[static_cast<size_t>(i)] = static_cast<float>((rank + 1) * (i % 13 + 1));
  return Tensor::from_vector(v, {length});
}

// The serial reference: rank 0's values + rank 1's + ... in order, then / n for the average.
Tensor serial_sum(int64_t length, int n) {
  Tensor total = rank_values(length, 0);
  for (int r = 1; r < n; ++r) total.add_(rank_values(length, r));
  return total;
}

// Elements where `got` differs from `want` (exactly).
int64_t wrong_elements(const Tensor& got, const Tensor& want) {
  return static_cast<int64_t>(sum(ne(got, want)).item());
}

const std::vector<std::string> kChecks{"all-reduce sum", "all-reduce avg", "reduce-scatter", "all-gather",
                                       "chapter's ring"};

// Runs every check on one length; returns this rank's wrong elements per check.
std::vector<int64_t> check_length(ProcessGroup& pg, int64_t length, bool wrong_chunk) {
  const int n = pg.size(), rank = pg.rank();
  const Tensor want = serial_sum(length, n);
  std::vector<int64_t> wrong;

  Tensor t = rank_values(length, rank);
  pg.all_reduce(t, {.op = ReduceOp::sum, .algorithm = Algorithm::ring});
  wrong.push_back(wrong_elements(t, want));

  t = rank_values(length, rank);
  pg.all_reduce(t, {.op = ReduceOp::avg, .algorithm = Algorithm::ring});
  wrong.push_back(wrong_elements(t, want / static_cast<double>(n)));

  // The two halves on their own: N blocks of `length` in, this rank's reduced block out, then
  // every rank's block gathered back.
  std::vector<Tensor> blocks;
  for (int b = 0; b < n; ++b) blocks.push_back(rank_values(length, rank) * static_cast<double>(b + 1));
  const Tensor mine = Tensor::empty({length}, DType::float32), gathered = Tensor::empty({n * length}, DType::float32);
  pg.reduce_scatter(mine, cat(blocks), {.op = ReduceOp::sum, .algorithm = Algorithm::ring});
  wrong.push_back(wrong_elements(mine, want * static_cast<double>(rank + 1)));
  pg.all_gather(gathered, mine, {.algorithm = Algorithm::ring});
  std::vector<Tensor> want_blocks;
  for (int b = 0; b < n; ++b) want_blocks.push_back(want * static_cast<double>(b + 1));
  wrong.push_back(wrong_elements(gathered, cat(want_blocks)));

  t = rank_values(length, rank);
  chapter_ring_all_reduce(pg, t, wrong_chunk, nullptr);
  wrong.push_back(wrong_elements(t, want));
  return wrong;
}

// Lengths of every kind: 1, around N (shorter than N, equal, one more), not divisible by N,
// and (full mode) large.
std::vector<int64_t> lengths_for(int n, bool quick) {
  std::set<int64_t> lengths{1, n - 1, n, n + 1, 2 * n + 1, 10, 1001};
  if (!quick) lengths.insert({3, 100, 65537, (int64_t{1} << 20) + 3});
  lengths.erase(0);
  return {lengths.begin(), lengths.end()};
}

struct WorldResult {
  int n = 0;
  std::vector<int64_t> lengths;
  std::vector<int64_t> wrong;  // per check, summed over the lengths and ranks
};

WorldResult sweep(ProcessGroup& pg, bool quick, bool wrong_chunk) {
  WorldResult result{pg.size(), lengths_for(pg.size(), quick), std::vector<int64_t>(kChecks.size(), 0)};
  for (int64_t length : result.lengths) {
    const std::vector<int64_t> mine = check_length(pg, length, wrong_chunk);
    Tensor counts = Tensor::from_vector(mine, {static_cast<int64_t>(mine.size())});
    pg.all_reduce(counts);  // rank 0 learns every rank's count
    const auto all = counts.to_vector<int64_t>();
    for (size_t c = 0; c < all.size(); ++c) result.wrong[c] += all[c];
  }
  return result;
}

// ---- The trace: which chunk each rank passes at each step, from the library's own trace.

// "reduce-scatter step 1/3  rank 0: sends chunk 3 [7,10) { 1 1 1 } to rank 1, receives chunk 2
// from rank 3" (parallel/ring.cpp) as a Passed; throws on a line it cannot read.
Passed parse_trace_line(const std::string& line) {
  static const std::regex format(
      R"((reduce-scatter|all-gather) step (\d+)/\d+  rank (\d+): sends chunk (\d+) \[\d+,\d+\)(?: \{([^}]*)\})? to rank \d+, receives chunk (\d+) from rank \d+)");
  std::smatch m;
  RG_CHECK(std::regex_match(line, m, format), "the ring's trace has a line this chapter cannot read: '", line, "'");
  Passed p{m[1], std::stoi(m[2]), std::stoi(m[3]), std::stoi(m[4]), std::stoi(m[6]), {}};
  std::istringstream values(m[5]);
  for (double v; values >> v;) p.values.push_back(v);
  return p;
}

struct TraceResult {
  int n = 0;
  int64_t length = 0;
  std::vector<std::string> lines;  // the library's trace, in ring order
  std::vector<Passed> library, chapter;
  bool schedules_match = false;  // the chapter's ring passed the same chunks at every step
};

// Runs the library's ring with its trace on, every rank contributing 2^rank to every element,
// so that the value of a partial sum names the ranks in it (7 = ranks 0, 1, 2); and the
// chapter's ring on the same buffer, logging its steps.
TraceResult trace_ring(ProcessGroup& pg, bool wrong_chunk) {
  const int n = pg.size();
  TraceResult result{n, 2 * n + 2, {}, {}, {}, false};  // 10 for N = 4: chunks of 2, 3, 2, 3
  Tensor t = Tensor::full({result.length}, static_cast<double>(1 << pg.rank()), DType::float32);
  std::ostringstream trace;
  pg.all_reduce(t, {.op = ReduceOp::sum, .algorithm = Algorithm::ring, .trace = &trace});
  std::vector<Passed> mine;
  Tensor copy = Tensor::full({result.length}, static_cast<double>(1 << pg.rank()), DType::float32);
  chapter_ring_all_reduce(pg, copy, wrong_chunk, &mine);
  std::ostringstream mine_text;
  for (const Passed& p : mine)
    mine_text << p.phase << ' ' << p.step << ' ' << p.rank << ' ' << p.send_chunk << ' ' << p.recv_chunk << '\n';

  const auto traces = parallel::all_gather_strings(pg, trace.str());  // every rank's lines, to rank 0
  const auto logs = parallel::all_gather_strings(pg, mine_text.str());
  if (pg.rank() != 0) return result;
  for (const std::string& text : traces) {
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) result.library.push_back(parse_trace_line(line));
  }
  for (const std::string& text : logs) {
    std::istringstream in(text);
    for (Passed p; in >> p.phase >> p.step >> p.rank >> p.send_chunk >> p.recv_chunk;) result.chapter.push_back(p);
  }
  const auto in_ring_order = [](const Passed& a, const Passed& b) { return a.key() < b.key(); };
  std::sort(result.library.begin(), result.library.end(), in_ring_order);
  std::sort(result.chapter.begin(), result.chapter.end(), in_ring_order);
  result.schedules_match = std::equal(result.library.begin(), result.library.end(), result.chapter.begin(),
                                      result.chapter.end(), [](auto& a, auto& b) { return a.same_chunks(b); });
  // The trace lines themselves, in ring order.
  for (const std::string& text : traces) {
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) result.lines.push_back(line);
  }
  std::sort(result.lines.begin(), result.lines.end(), [](const std::string& a, const std::string& b) {
    return parse_trace_line(a).key() < parse_trace_line(b).key();
  });
  return result;
}

// Who has contributed to each chunk on each rank, replayed from the trace: a bit per rank.
using Holdings = std::vector<std::vector<unsigned>>;  // [rank][chunk]

struct Replay {
  std::vector<Holdings> after_step;  // [0]: at the start, [k]: after the k-th step of the ring
  std::vector<std::vector<Passed>> steps;  // the events of each step
  bool values_agree = true;  // every value sent equals the sum of the ranks the replay says it holds
  bool receives_match = true;  // every rank receives the chunk its left neighbour sends
};

Replay replay(const TraceResult& trace) {
  const int n = trace.n;
  Replay r;
  Holdings holdings(n, std::vector<unsigned>(n));
  for (int rank = 0; rank < n; ++rank) std::fill(holdings[rank].begin(), holdings[rank].end(), 1u << rank);
  r.after_step.push_back(holdings);
  std::map<std::tuple<bool, int>, std::vector<Passed>> by_step;
  for (const Passed& p : trace.library) by_step[{p.phase != "reduce-scatter", p.step}].push_back(p);
  for (const auto& [key, events] : by_step) {
    const bool reduce = !std::get<0>(key);
    Holdings next = holdings;  // all ranks send at once: from the state before the step
    for (const Passed& p : events) {
      const unsigned sent = holdings[p.rank][p.send_chunk];
      for (double v : p.values) r.values_agree &= v == static_cast<double>(sent);  // 2^r summed: the bits
      const int right = (p.rank + 1) % n;
      next[right][p.send_chunk] = reduce ? next[right][p.send_chunk] | sent : sent;
      for (const Passed& q : events)
        if (q.rank == right) r.receives_match &= q.recv_chunk == p.send_chunk;
    }
    holdings = next;
    r.after_step.push_back(holdings);
    r.steps.push_back(events);
  }
  return r;
}

// "0+1+3" for the ranks whose contribution a chunk holds ("5 ranks" when there are more than 4).
std::string held_by(unsigned bits, int n) {
  std::vector<std::string> ranks;
  for (int r = 0; r < n; ++r)
    if (bits >> r & 1u) ranks.push_back(std::to_string(r));
  return ranks.size() > 4 ? std::to_string(ranks.size()) + " ranks" : joined(ranks, "+");
}

// The steps as panels: a row per chunk, a column per rank, each cell the ranks summed in it,
// an arrow for every chunk passed on in that step.
void draw_steps(const TraceResult& trace, const Replay& r, const std::filesystem::path& path) {
  const int n = trace.n;
  std::vector<std::string> chunks, ranks;
  for (int i = 0; i < n; ++i) {
    chunks.push_back("chunk " + std::to_string(i));
    ranks.push_back("rank " + std::to_string(i));
  }
  report::GridPanels picture({.title = "ring all-reduce, N = " + std::to_string(n) + ", length " +
                                       std::to_string(trace.length) + ": the ranks summed in each chunk",
                              .row_labels = chunks, .column_labels = ranks, .panels_per_line = n});
  for (size_t k = 0; k < r.after_step.size(); ++k) {
    report::GridPanel panel;
    if (k == 0) {
      panel.title = "start";
    } else {
      const Passed& first = r.steps[k - 1].front();
      panel.title = first.phase + " " + std::to_string(first.step) + "/" + std::to_string(n - 1);
      for (const Passed& p : r.steps[k - 1]) panel.arrows.push_back({p.send_chunk, p.rank, (p.rank + 1) % n});
    }
    for (int c = 0; c < n; ++c) {
      panel.text.emplace_back();
      panel.shade.emplace_back();
      for (int rank = 0; rank < n; ++rank) {
        const unsigned bits = r.after_step[k][rank][c];
        panel.text.back().push_back(held_by(bits, n));
        panel.shade.back().push_back(static_cast<double>(__builtin_popcount(bits)) / n);
      }
    }
    picture.add_panel(panel);
  }
  picture.save(path);
  std::printf("wrote %s\n", path.c_str());
}

// ---- Reporting and the verdict.

void print_sweep(const std::vector<WorldResult>& worlds) {
  std::printf("\nwrong elements against the serial sum (0: every element of every rank exact)\n");
  std::vector<std::string> header{"N", "lengths"};
  header.insert(header.end(), kChecks.begin(), kChecks.end());
  report::Table table(header);
  for (const WorldResult& w : worlds) {
    std::vector<std::string> lengths;
    for (int64_t l : w.lengths) lengths.push_back(std::to_string(l));
    std::vector<std::string> row{std::to_string(w.n), joined(lengths, " ")};
    for (int64_t wrong : w.wrong) row.push_back(std::to_string(wrong));
    table.add_row(row);
  }
  table.print(std::cout);
}

void print_trace(const TraceResult& trace, const Replay& r) {
  std::printf("\nthe library's ring, N = %d, length %lld, rank r contributing 2^r (so 7 = ranks 0+1+2); its trace:\n",
              trace.n, static_cast<long long>(trace.length));
  for (const std::string& line : trace.lines) std::printf("%s\n", line.c_str());
  std::printf("\nwhat each rank holds after each step (replayed from the trace; the values sent agree: %s)\n",
              r.values_agree ? "yes" : "NO");
  std::vector<std::string> header{"after", "rank"};
  for (int c = 0; c < trace.n; ++c) header.push_back("chunk " + std::to_string(c));
  report::Table table(header);
  for (size_t k = 0; k < r.after_step.size(); ++k) {
    const std::string after =
        k == 0 ? "start" : r.steps[k - 1].front().phase + " " + std::to_string(r.steps[k - 1].front().step);
    for (int rank = 0; rank < trace.n; ++rank) {
      std::vector<std::string> row{rank == 0 ? after : "", std::to_string(rank)};
      for (unsigned bits : r.after_step[k][rank]) row.push_back(held_by(bits, trace.n));
      table.add_row(row);
    }
  }
  table.print(std::cout);
  for (size_t i = 0; i < std::min(trace.library.size(), trace.chapter.size()); ++i) {
    const Passed &lib = trace.library[i], &own = trace.chapter[i];
    if (lib.same_chunks(own)) continue;
    std::printf("the chapter's ring differs from the library's first at %s step %d, rank %d: it sends chunk %d and "
                "receives chunk %d, the library's sends %d and receives %d\n",
                lib.phase.c_str(), lib.step, lib.rank, own.send_chunk, own.recv_chunk, lib.send_chunk, lib.recv_chunk);
    break;
  }
}

// The verdict rule (README): every check exact (0 wrong elements) for every N and length; the
// trace's replay consistent (values sent = the ranks held, every rank receives what its left
// neighbour sends) and complete (every rank holds all N contributions in every chunk at the
// end, after 2(N-1) steps); and the chapter's ring passes the same chunks as the library's.
void verdict(const std::vector<WorldResult>& worlds, const TraceResult& trace, const Replay& r) {
  int64_t library_wrong = 0, chapter_wrong = 0, runs = 0;
  std::vector<std::string> sizes;
  for (const WorldResult& w : worlds) {
    for (size_t c = 0; c + 1 < kChecks.size(); ++c) library_wrong += w.wrong[c];
    chapter_wrong += w.wrong.back();
    runs += static_cast<int64_t>(w.lengths.size());
    sizes.push_back(std::to_string(w.n));
  }
  const unsigned everyone = (1u << trace.n) - 1;
  bool complete = r.after_step.size() == static_cast<size_t>(2 * (trace.n - 1) + 1);
  for (const auto& chunks : r.after_step.back())
    for (unsigned bits : chunks) complete &= bits == everyone;
  const bool confirmed = library_wrong == 0 && chapter_wrong == 0 && r.values_agree && r.receives_match && complete &&
                         trace.schedules_match;
  chapters::print_verdict(
      "C08", confirmed,
      "the library's ring (all-reduce sum and avg, reduce-scatter, all-gather) against the serial sum for N = " +
          joined(sizes, ",") + ", " + std::to_string(runs) + " lengths from 1 to " +
          std::to_string(worlds.back().lengths.back()) + " (shorter than N, not divisible by N): " +
          std::to_string(library_wrong) + " wrong elements; the chapter's ring: " + std::to_string(chapter_wrong) +
          " wrong elements, same chunks as the library's at every step: " + (trace.schedules_match ? "yes" : "no") +
          "; trace for N = " + std::to_string(trace.n) + ": " + std::to_string(r.after_step.size() - 1) +
          " steps, every rank ends with all " + std::to_string(trace.n) + " contributions in every chunk: " +
          (complete ? "yes" : "no"));
}

int run(int argc, char** argv) {
  chapters::Cli cli("chapter_08_ring_allreduce", "the ring all-reduce is exact for any N and any length", 4);
  int max_ranks = 0;
  bool wrong_chunk = false;
  cli.add_option("--max-ranks", max_ranks, "local backend: check N = 1 .. this (0: 8, --quick: 5)");
  cli.add_flag("--wrong-chunk", wrong_chunk,
               "the chapter's ring sends chunk r-s instead of r-s-1 in the reduce-scatter (an off-by-one)");
  chapters::Flags flags = cli.parse(argc, argv);
  if (max_ranks == 0) max_ranks = flags.quick ? 5 : 8;

  std::vector<WorldResult> worlds;
  TraceResult trace;
  bool printer = false;  // this process holds rank 0 of the worlds
  const auto on_world = [&](std::shared_ptr<ProcessGroup> pg) {
    WorldResult result = sweep(*pg, flags.quick, wrong_chunk);
    TraceResult traced = pg->size() == flags.workers ? trace_ring(*pg, wrong_chunk) : TraceResult{};
    if (pg->rank() != 0) return;
    printer = true;
    worlds.push_back(result);
    if (traced.n > 0) trace = traced;
  };
  if (flags.backend == "mpi") {
    chapters::run_ranks(flags, argc, argv, on_world);  // one world: the mpirun job
  } else {
    RG_CHECK(flags.workers <= max_ranks, "--workers ", flags.workers, " (the traced ring) must be <= --max-ranks ",
             max_ranks);
    for (int n = 1; n <= max_ranks; ++n) {
      chapters::Flags world = flags;
      world.workers = n;
      chapters::run_ranks(world, argc, argv, on_world);
    }
  }
  if (!printer) return 0;
  print_sweep(worlds);
  const Replay r = replay(trace);
  print_trace(trace, r);
  std::printf("\n");
  draw_steps(trace, r, flags.out / "ring_steps.svg");
  verdict(worlds, trace, r);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return chapters::guarded([&] { return run(argc, argv); });
}
