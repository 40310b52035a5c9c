// The labs' MPI variants (labs.labN.*_under_mpi, built where CMake finds MPI): the same
// training as lab_training.h, but each rank is its own process under mpiexec, running
// labs_mpi_rank (lab_mpi_rank.cpp). The runs are named here so that the test, which
// launches the job, and the rank program, which trains, agree on what is run.
#pragma once
#include <stdexcept>
#include <string>

#include "lab_training.h"
#include "run_command.h"

namespace rg::labs {

// The DDP run of a lab's MPI variant on `world_size` ranks: the reducers and algorithms
// the lab's local tests use, so that each variant needs only its own lab.
inline TrainingRun mpi_run(const std::string& lab, int world_size) {
  using parallel::Algorithm;
  using parallel::ReducerKind;
  constexpr double kBytesPerMb = 1024.0 * 1024.0;
  if (lab == "lab2") return {.world_size = world_size, .ddp = {.reducer = ReducerKind::flat}};
  if (lab == "lab3")
    return {.world_size = world_size, .ddp = {.reducer = ReducerKind::flat, .algorithm = Algorithm::ring}};
  if (lab == "lab4")
    return {.world_size = world_size, .ddp = {.reducer = ReducerKind::flat, .algorithm = Algorithm::star}};
  if (lab == "lab5")  // buckets of 100 bytes: several per backward
    return {.world_size = world_size, .ddp = {.bucket_cap_mb = 100 / kBytesPerMb, .first_bucket_mb = 100 / kBytesPerMb}};
  throw std::invalid_argument("labs_mpi_rank: no MPI variant for '" + lab + "' (lab2, lab3, lab4 or lab5)");
}

#ifdef RINGGRAD_LABS_MPIEXEC
// Runs `lab`'s variant on `ranks` processes: "" when every rank finished, else what the
// job printed (the failing rank's message: which rank, which step, what differs).
inline std::string run_under_mpi(const std::string& lab, int ranks) {
  // Graders run as root (Gradescope does); OpenMPI refuses root without these.
  const std::string command = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " RINGGRAD_LABS_MPIEXEC " -n " +
                              std::to_string(ranks) + " --oversubscribe " RINGGRAD_LABS_MPI_RANK " " + lab;
  const test::CommandRun run = test::run_command(command);
  if (run.exit_code == 0) return "";
  return rg::detail::concat(lab, " on ", ranks, " MPI processes exited ", run.exit_code, ":\n", run.output);
}
#endif

}  // namespace rg::labs
