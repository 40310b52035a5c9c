// ringgrad-train --parallel ddp (and dp, async-ps) against --parallel none: N workers with batch b train on the
// same global batches as one process with batch N·b, so the final models and metrics agree
// up to the order of floating-point sums. Also the printed batch arithmetic, the trace and
// its overlap figure, the injected faults and the flags' errors.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <algorithm>
#include <cstdlib>
#include <regex>
#include <sstream>
#include <tuple>

#include "nn/checkpoint.h"
#include "report/metrics.h"
#include "run_tool.h"
#include "tensor/ops.h"
#include "tools/train/options.h"

using namespace rg;
using namespace rg::train::test;

namespace {

double final_test_loss(const std::filesystem::path& out) {
  double loss = -1;
  for (auto& r : report::read_jsonl(out / "metrics.jsonl"))
    if (r.count("test_loss")) loss = r.at("test_loss").as_number();
  return loss;
}

// The largest |a - b| over every model tensor, relative to the largest |b|.
double relative_model_difference(const std::filesystem::path& a, const std::filesystem::path& b) {
  const auto ta = nn::read_safetensors((a / "checkpoint.safetensors").string()).tensors;
  const auto tb = nn::read_safetensors((b / "checkpoint.safetensors").string()).tensors;
  double diff = 0, scale = 0;
  for (const auto& [name, tensor] : tb) {
    if (!name.starts_with("model.")) continue;
    REQUIRE(ta.count(name));
    diff = std::max(diff, max(abs(sub(ta.at(name), tensor))).item());
    scale = std::max(scale, max(abs(tensor)).item());
  }
  return diff / scale;
}

const std::string kSynthetic = "--data synthetic --model mlp --lr 0.05 --threads 2 --epochs 1";

// A 5-step synthetic run of `mode` with 2 workers and steps 1..3 traced, plus `extra`
// flags, into `dir`; the caller checks exit_code and reads dir/trace.json.
ToolRun traced_run(const std::string& mode, const std::string& extra, const TempDir& dir) {
  return run_train(kSynthetic + " --parallel " + mode + " --workers 2 --batch-size 32 --max-steps 5 --trace-steps 3 " +
                   extra + " --out " + dir.path.string());
}

}  // namespace

TEST_CASE("train.ddp_equals_single_process_on_the_global_batch", "[train]") {
  TempDir single("ddp_ref");
  const ToolRun reference = run_train(kSynthetic + " --batch-size 64 --out " + single.path.string());
  INFO(reference.output);
  REQUIRE(reference.exit_code == 0);
  for (const int workers : {2, 4}) {
    INFO("workers " << workers);
    for (const char* allreduce : {"library", "ring"}) {
      INFO(allreduce);
      TempDir dir("ddp_" + std::to_string(workers) + allreduce);
      const ToolRun run = run_train(kSynthetic + " --parallel ddp --workers " + std::to_string(workers) +
                                    " --allreduce " + allreduce + " --batch-size " + std::to_string(64 / workers) +
                                    " --out " + dir.path.string());
      INFO(run.output);
      REQUIRE(run.exit_code == 0);
      CHECK(run.output.find(std::to_string(64 / workers) + " per micro-batch x " + std::to_string(workers) +
                            " worker(s) x 1 accumulation step(s) = global batch 64") != std::string::npos);
      CHECK(relative_model_difference(dir.path, single.path) < 1e-5);
      CHECK(final_test_loss(dir.path) == Approx(final_test_loss(single.path)).epsilon(1e-5));
    }
  }
}

TEST_CASE("train.dp_equals_single_process", "[train]") {
  TempDir single("dp_ref"), dir("dp");
  REQUIRE(run_train(kSynthetic + " --batch-size 64 --out " + single.path.string()).exit_code == 0);
  const ToolRun run = run_train(kSynthetic + " --parallel dp --workers 3 --batch-size 64 --out " + dir.path.string());
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK(run.output.find("global batch 64, each micro-batch split over 3 devices") != std::string::npos);
  CHECK(std::regex_search(run.output, std::regex("device 0 per step: [0-9.]+ KiB in")));
  CHECK(relative_model_difference(dir.path, single.path) < 1e-5);
}

// A parameter server with staleness bound 0 is synchronous SGD: the server's final model
// equals DDP's (both average one gradient from every worker per step).
TEST_CASE("train.async_ps_staleness_0_equals_ddp", "[train]") {
  TempDir ddp("aps_ddp"), ps("aps_0");
  const std::string flags = kSynthetic + " --workers 2 --batch-size 32";
  REQUIRE(run_train(flags + " --parallel ddp --out " + ddp.path.string()).exit_code == 0);
  const ToolRun run = run_train(flags + " --parallel async-ps --max-staleness 0 --out " + ps.path.string());
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK(run.output.find("async-ps: staleness 0: 32;") != std::string::npos);  // 16 steps x 2 workers
  CHECK(relative_model_difference(ps.path, ddp.path) < 1e-5);
}

// A worker's bad gradient at step 5 reaches the server's model (the run stays
// deterministic with --max-staleness 0, so the clean run is its reference).
TEST_CASE("train.async_ps_injected_faults", "[train]") {
  TempDir clean("aps_clean"), corrupt("aps_corrupt"), drop("aps_drop");
  const std::string flags = kSynthetic + " --parallel async-ps --workers 2 --batch-size 32 --max-staleness 0";
  REQUIRE(run_train(flags + " --out " + clean.path.string()).exit_code == 0);
  REQUIRE(run_train(flags + " --corrupt-grad 1:5 --out " + corrupt.path.string()).exit_code == 0);
  REQUIRE(run_train(flags + " --corrupt-grad 0:5:drop --out " + drop.path.string()).exit_code == 0);
  CHECK(relative_model_difference(corrupt.path, clean.path) > 1e-4);
  CHECK(relative_model_difference(drop.path, clean.path) > 1e-6);
}

TEST_CASE("train.async_ps_trace_shows_pushes_and_pulls", "[train]") {
  TempDir dir("aps_trace");
  const ToolRun run = traced_run("async-ps", "", dir);
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  const std::string trace = read_text(dir.path / "trace.json");
  // Worker 0 (process rank 1) pushes its gradients to the server, rank 0, and pulls the parameters back.
  CHECK(trace.find("\"send to rank 0\"") != std::string::npos);
  CHECK(trace.find("\"recv from rank 0\"") != std::string::npos);
}

TEST_CASE("train.async_ps_and_hogwild_converge", "[train]") {
  for (const char* mode : {"async-ps", "hogwild"}) {
    INFO(mode);
    TempDir dir(std::string("async_") + mode);
    // Asynchronous runs are not deterministic; 3 epochs reach ~99 % (1 epoch: 70-90 %).
    const ToolRun run = run_train("--data synthetic --model mlp --threads 2 --epochs 3 --workers 2 --batch-size 32"
                                  " --straggler 1:5 --parallel " + std::string(mode) + " --out " + dir.path.string());
    INFO(run.output);
    REQUIRE(run.exit_code == 0);
    std::smatch acc;
    REQUIRE(std::regex_search(run.output, acc, std::regex("summary: test_acc=([0-9.]+)")));
    CHECK(std::stod(acc[1]) > 0.9);
    CHECK(std::filesystem::exists(dir.path / "checkpoint.safetensors"));
  }
}

TEST_CASE("train.ddp_accumulation_and_global_batch_flag", "[train]") {
  TempDir single("acc_ref"), dir("acc");
  REQUIRE(run_train(kSynthetic + " --batch-size 64 --out " + single.path.string()).exit_code == 0);
  const ToolRun run = run_train(kSynthetic + " --parallel ddp --workers 2 --global-batch-size 64 --accumulation 4" +
                                " --out " + dir.path.string());
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK(run.output.find("8 per micro-batch x 2 worker(s) x 4 accumulation step(s) = global batch 64") !=
        std::string::npos);
  CHECK(relative_model_difference(dir.path, single.path) < 1e-5);
}

// One Fashion-MNIST epoch with the default lr and momentum: same batches, so the same
// model up to the order of floating-point sums. In float64, because in float32 this
// training amplifies a last-bit difference chaotically: with momentum 0.9 the per-step
// losses agree to 1e-6 until step ~196, then the gap grows tenfold every ten steps
// (3e-5 at 209, 6e-4 at 218) and the final test losses differ by ~0.5 %; even with
// momentum 0.5 the gap was 3e-6 with one set of CPU kernels and 4e-3 with another. In
// float64 the two runs end within 1e-12.
TEST_CASE("train.ddp_equals_single_process_on_fashion_mnist", "[train][fashion]") {
  TempDir single("fm_ref"), dir("fm_ddp");
  const std::string flags = "--data fashion-mnist --model mlp --epochs 1 --dtype float64 --threads 2 --trace-steps 0";
  const ToolRun reference = run_train(flags + " --batch-size 128 --out " + single.path.string());
  INFO(reference.output);
  REQUIRE(reference.exit_code == 0);
  const ToolRun run = run_train(flags + " --parallel ddp --workers 2 --batch-size 64 --out " + dir.path.string());
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK(final_test_loss(dir.path) == Approx(final_test_loss(single.path)).epsilon(1e-9));
  CHECK(relative_model_difference(dir.path, single.path) < 1e-9);
}

TEST_CASE("train.ddp_trace_and_overlap", "[train]") {
  TempDir dir("trace");
  // Small buckets, so the first all-reduces start while backward still runs.
  const ToolRun run = run_train("--data synthetic --model cnn --threads 2 --max-steps 6 --trace-steps 4"
                                " --parallel ddp --workers 2 --batch-size 16 --bucket-cap-mb 0.01 --out " +
                                dir.path.string());
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  // The percentage depends on how busy the machine is; the structure does not: in every
  // traced backward of each rank, the first bucket goes out before backward reaches the
  // first layers and starts waiting for the all-reduces.
  CHECK(std::regex_search(run.output, std::regex("communication hidden behind backward: [0-9]+%")));
  const auto events = nlohmann::json::parse(read_text(dir.path / "trace.json"));
  auto is_inside = [](const auto& e, int rank, const char* category, int64_t start, int64_t end) {
    return e["pid"] == rank && e["cat"] == category && e["ts"] >= start && e["ts"] <= end;
  };
  auto first_inside = [&](int rank, const char* category, int64_t start, int64_t end) {
    for (const auto& e : events)
      if (is_inside(e, rank, category, start, end)) return e["ts"].get<int64_t>();
    return int64_t{-1};
  };
  auto count_inside = [&](int rank, const char* category, int64_t start, int64_t end) {
    return std::count_if(events.begin(), events.end(),
                         [&](const auto& e) { return is_inside(e, rank, category, start, end); });
  };
  for (const int rank : {0, 1}) {
    INFO("rank " << rank);
    int backwards = 0;
    for (const auto& backward : events) {
      if (backward["pid"] != rank || backward["cat"] != "backward") continue;
      const int64_t start = backward["ts"], end = start + backward["dur"].get<int64_t>();
      const int64_t launch = first_inside(rank, "launch", start, end), wait = first_inside(rank, "wait", start, end);
      CHECK(count_inside(rank, "launch", start, end) > 1);  // 0.01 MB caps the first bucket too
      CHECK(launch >= 0);
      CHECK(launch < wait);
      ++backwards;
    }
    CHECK(backwards == 4);  // --trace-steps 4
  }
  const std::string trace = read_text(dir.path / "trace.json");
  for (const char* category : {"\"forward\"", "\"backward\"", "\"comm\"", "\"wait\"", "\"optimizer\"", "\"data\""})
    CHECK(trace.find(category) != std::string::npos);
  CHECK(trace.find("\"rank 1\"") != std::string::npos);
  CHECK(std::filesystem::exists(dir.path / "timeline.svg"));
  // The lecture's flow picture, with this run's numbers: 2 x 16 samples, each rank's bytes.
  CHECK(run.output.find("flow: " + (dir.path / "flow.svg").string()) != std::string::npos);
  const std::string flow = read_text(dir.path / "flow.svg");
  CHECK(flow.find("32 samples") != std::string::npos);
  CHECK(std::regex_search(flow, std::regex("16 x 1x[0-9]+x[0-9]+ in")));
  CHECK(std::regex_search(flow, std::regex("rank 1: all-reduce [0-9.]+ ms")));
  CHECK(!std::regex_search(flow, std::regex("sent 0 B")));
  CHECK(read_text(dir.path / "report.html").find("as the lecture draws it") != std::string::npos);
}

TEST_CASE("train.ddp_injected_faults", "[train]") {
  TempDir clean("fault_clean"), corrupt("fault_corrupt"), drop("fault_drop");
  const std::string flags = kSynthetic + " --parallel ddp --workers 2 --batch-size 32 --max-steps 8";
  // A corrupted gradient on rank 1 at step 5: its replica drifts, and the check at the
  // next step names the parameter.
  const ToolRun bad = run_train(flags + " --corrupt-grad 1:5 --check-every 1 --out " + corrupt.path.string());
  INFO(bad.output);
  CHECK(bad.exit_code == 1);
  CHECK(std::regex_search(bad.output, std::regex("parameter '[a-z0-9_.]+' differs across replicas")));
  // A dropped contribution keeps the replicas identical (the check passes) but changes
  // the model: only the loss can tell.
  REQUIRE(run_train(flags + " --out " + clean.path.string()).exit_code == 0);
  const ToolRun dropped = run_train(flags + " --corrupt-grad 1:5:drop --check-every 1 --out " + drop.path.string());
  INFO(dropped.output);
  REQUIRE(dropped.exit_code == 0);
  CHECK(relative_model_difference(drop.path, clean.path) > 1e-6);
}

TEST_CASE("train.ddp_straggler_slows_the_step", "[train]") {
  TempDir dir("straggler");
  const ToolRun run = traced_run("ddp", "--straggler 1:100", dir);
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  const std::string trace = read_text(dir.path / "trace.json");
  CHECK(trace.find("straggler delay") != std::string::npos);
  std::smatch time;
  REQUIRE(std::regex_search(run.output, time, std::regex("train_s=([0-9.]+)")));
  CHECK(std::stod(time[1]) >= 0.4);  // every step waits for rank 1's 100 ms
}

TEST_CASE("train.dp_injected_faults", "[train]") {
  TempDir clean("dp_clean"), late("dp_late"), corrupt("dp_corrupt"), drop("dp_drop");
  const std::string flags = kSynthetic + " --parallel dp --workers 2 --batch-size 32 --max-steps 8";
  REQUIRE(run_train(flags + " --out " + clean.path.string()).exit_code == 0);
  // dp is deterministic: a fault after the last step changes nothing, one at step 5 does.
  REQUIRE(run_train(flags + " --corrupt-grad 1:9 --out " + late.path.string()).exit_code == 0);
  CHECK(relative_model_difference(late.path, clean.path) == 0.0);
  REQUIRE(run_train(flags + " --corrupt-grad 1:5 --out " + corrupt.path.string()).exit_code == 0);
  CHECK(relative_model_difference(corrupt.path, clean.path) > 1e-4);
  REQUIRE(run_train(flags + " --corrupt-grad 0:5:drop --out " + drop.path.string()).exit_code == 0);
  CHECK(relative_model_difference(drop.path, clean.path) > 1e-6);
}

TEST_CASE("train.dp_straggler_holds_up_the_gather", "[train]") {
  TempDir dir("dp_straggler");
  const ToolRun run = traced_run("dp", "--straggler 1:100", dir);
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK(read_text(dir.path / "trace.json").find("straggler delay") != std::string::npos);
  std::smatch apply;  // DataParallel's phase times, per step: device 1's 100 ms land in apply
  REQUIRE(std::regex_search(run.output, apply, std::regex("apply ([0-9.]+)")));
  CHECK(std::stod(apply[1]) >= 80.0);
}

TEST_CASE("train.parallel_flag_errors", "[train]") {
  const std::pair<std::string, std::string> cases[] = {
      {"--parallel pipeline", "--parallel"},
      {"--workers 2", "--workers"},  // needs --parallel ddp
      {"--parallel ddp --workers 3 --global-batch-size 64", "--global-batch-size"},
      {"--batch-size 30 --accumulation 4", "--accumulation"},
      {"--parallel ddp --backend mpi", "--backend"},  // not under mpirun
      {"--parallel ddp --allreduce tree", "--allreduce"},
      {"--parallel ddp --workers 2 --straggler 2:10", "--straggler"},
      {"--parallel ddp --straggler 0:10:1.5", "--straggler"},
      {"--corrupt-grad 0:3", "--corrupt-grad"},  // needs several workers
      {"--parallel dp --workers 2 --corrupt-grad 2:3", "--corrupt-grad"},
      {"--parallel ddp --corrupt-grad 0:3:flip", "--corrupt-grad"},
      {"--parallel dp --workers 2 --straggler 2:10", "--straggler"},
      {"--parallel ddp --max-staleness 1", "--max-staleness"},
      {"--parallel hogwild --backend mpi", "--backend"},
      {"--parallel async-ps --warmup-epochs 1", "--warmup-epochs"},
  };
  for (const auto& [args, flag] : cases) {
    INFO(args);
    const ToolRun run = run_with_bad_flag(args);
    INFO(run.output);
    CHECK(run.output.find("error: " + flag) == 0);
  }
}

// GPUs: DDP takes the nccl backend under mpirun, and every combination that cannot work is
// refused before anything starts. OMPI_COMM_WORLD_SIZE is how the program knows mpirun
// started it; these cases all stop at the flags, before MPI would start.
TEST_CASE("train.gpu_flag_errors", "[train]") {
  const std::string under_mpirun = "OMPI_COMM_WORLD_SIZE=2";
  const std::tuple<std::string, std::string, std::string> cases[] = {
      {"", "--parallel ddp --device cuda", "--backend"},  // local threads cannot share NCCL
      {"", "--parallel ddp --backend nccl", "--backend"},  // not under mpirun
      {under_mpirun, "--parallel ddp --backend nccl", "--backend"},  // CPU tensors
      {under_mpirun, "--parallel ddp --device cuda --backend mpi", "--backend"},
      {under_mpirun, "--parallel async-ps --device cuda --backend nccl", "--backend"},
      {under_mpirun, "--parallel dp --backend nccl", "--backend"},
  };
  for (const auto& [env, args, flag] : cases) {
    INFO(env + " " + args);
    const ToolRun run = run_train(args, env);
    INFO(run.output);
    CHECK(run.exit_code == 2);
    CHECK(run.output.find("error: " + flag) == 0);
  }
  // More GPUs than the machine has (here: none at all, or fewer than 64).
  const ToolRun too_many = run_train("--data synthetic --parallel dp --device cuda --workers 64");
  INFO(too_many.output);
  CHECK(too_many.exit_code == 2);
  CHECK((too_many.output.find("error: --device: CUDA is not available") == 0 ||
         too_many.output.find("error: --workers: DataParallel over 64 GPUs") == 0));
}

TEST_CASE("train.ddp_on_gpus_picks_nccl_under_mpirun", "[train]") {
  ::setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  const char* argv[] = {"ringgrad-train", "--parallel", "ddp", "--device", "cuda"};
  std::ostringstream out, err;
  const rg::train::CliOutcome gpus = rg::train::parse_cli(5, argv, out, err);
  const char* cpu_argv[] = {"ringgrad-train", "--parallel", "ddp"};
  const rg::train::CliOutcome cpus = rg::train::parse_cli(3, cpu_argv, out, err);
  ::unsetenv("OMPI_COMM_WORLD_SIZE");
  INFO(err.str());
  REQUIRE(gpus.options);
  CHECK(gpus.options->backend == "nccl");
  CHECK(gpus.options->workers == 2);
  REQUIRE(cpus.options);
  CHECK(cpus.options->backend == "mpi");
}
